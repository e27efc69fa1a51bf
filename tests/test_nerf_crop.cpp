// The NeRF crop box (the app's, `render --crop`, `mesh --crop`) on the CPU
// reference: rays miss an empty box; a cropped view is marched only through
// the box (every pixel's expected depth point lies in it); a crop holding the
// whole scene changes nothing; test PSNR ignores the crop; the command line
// reads the box and refuses bad ones (one line, exit 2, no output).
#include "nerf_persist_scene.h"

#include "engine/nerf_training_factory.h"
#include "io/image.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>

namespace fs = std::filesystem;
using namespace fusedngp;
using fusedngp::test::expect_cli_input_error;
using fusedngp::test::make_temp_dir;
using fusedngp::test::nerf_persist_scene;
using fusedngp::test::nerf_train_args;
using fusedngp::test::run_cli;

namespace {

// The persistence tests' scene trained in this process (the trainer keeps a
// reference to `train`, so the struct is built in place and never moves).
struct TrainedScene {
    NerfDataset train, test;
    std::unique_ptr<nerf::NerfTraining> trainer;
};

TrainedScene& trained_scene() {
    static TrainedScene s;
    if (!s.trainer) {
        s.train = load_nerf_dataset((nerf_persist_scene().dir / "transforms_train.json").string());
        s.test = load_nerf_dataset((nerf_persist_scene().dir / "transforms_test.json").string());
        const json config = json::parse(test::kNerfPersistConfig);
        s.trainer = create_nerf_training("cpu", s.train, config,
                                         nerf::nerf_settings_from_config(config, s.train.aabb_scale, 256, 7));
        for (int i = 0; i < 60; ++i) s.trainer->step();
    }
    return s;
}

Camera test_camera(const TrainedScene& s) {
    Camera c = s.test.frames[0].camera;
    c.intrinsics.width = s.test.images.width;
    c.intrinsics.height = s.test.images.height;
    return c;
}

// The model-space point at each pixel's expected depth (pixels without one: skipped).
std::vector<Vec3> depth_points(const Camera& camera, const Image& depth) {
    std::vector<Vec3> points;
    for (int y = 0; y < depth.height; ++y) {
        for (int x = 0; x < depth.width; ++x) {
            const float d = depth.pixels[(size_t)y * depth.width + x];
            if (d <= 0) continue;
            const Ray ray = camera_ray(camera, (float)x + 0.5f, (float)y + 0.5f);
            points.push_back(ray.origin + ray.direction * d);
        }
    }
    return points;
}

const Box3 kFarAway{{2, 2, 2}, {3, 3, 3}};
const Box3 kAroundEverything{{-1, -1, -1}, {2, 2, 2}};

} // namespace

TEST(NerfCrop, RaysMissAnEmptyBox) {
    const Box3 unit{{0, 0, 0}, {1, 1, 1}};
    const Box3 none = intersection(unit, kFarAway);
    ASSERT_TRUE(none.empty());
    // Along the diagonal the slabs of the inverted box [2, 1]^3 would give the gap between its faces.
    const Vec3 origin{-1, -1, -1};
    const Vec3 inv = safe_inverse(normalize(Vec3{1, 1, 1}));
    float t0 = 0, t1 = 0;
    EXPECT_FALSE(ray_box_interval(origin, inv, none, t0, t1));
    ASSERT_TRUE(ray_box_interval(origin, inv, unit, t0, t1));
    EXPECT_NEAR(t0, std::sqrt(3.f), 1e-5f);
    EXPECT_NEAR(t1, 2 * std::sqrt(3.f), 1e-5f);
    const Box3 everything = intersection(unit, unbounded_box());
    EXPECT_EQ(everything.lo.x, 0.f);
    EXPECT_EQ(everything.hi.z, 1.f);
}

TEST(NerfCrop, CroppedViewsDrawOnlyWhatLiesInTheBox) {
    TrainedScene& s = trained_scene();
    const Camera camera = test_camera(s);
    const Box3 right{{0.5f, -1, -1}, {2, 2, 2}};  // the red sphere (x 0.23..0.53) is cut
    s.trainer->set_view_crop(unbounded_box());
    const std::vector<Vec3> uncropped = depth_points(camera, s.trainer->render_depth(camera));
    const Image full = s.trainer->render_view(camera, {1, 1, 1});
    s.trainer->set_view_crop(right);
    const std::vector<Vec3> cropped = depth_points(camera, s.trainer->render_depth(camera));
    const Image part = s.trainer->render_view(camera, {1, 1, 1});
    s.trainer->set_view_crop(unbounded_box());

    int left_of_crop = 0;
    for (const Vec3& p : uncropped) left_of_crop += p.x < 0.45f;
    ASSERT_GT(left_of_crop, 10) << "the uncropped view should show the scene's left part";
    ASSERT_GT(cropped.size(), 10u) << "the cropped view should show the scene's right part";
    // Every sample lies in the box, so does each pixel's weighted mean of them.
    for (const Vec3& p : cropped) EXPECT_GE(p.x, right.lo.x - 1e-3f);
    double diff = 0;
    for (size_t i = 0; i < full.pixels.size(); ++i) diff += std::fabs(full.pixels[i] - part.pixels[i]);
    std::printf("[ measured ] %zu of %zu depth pixels left with the crop; mean |colour change| %.3f\n",
                cropped.size(), uncropped.size(), diff / (double)full.pixels.size());
    EXPECT_GT(diff / (double)full.pixels.size(), 0.01);
}

TEST(NerfCrop, CropAroundTheSceneChangesNothingAndTestPsnrIgnoresTheCrop) {
    TrainedScene& s = trained_scene();
    const Camera camera = test_camera(s);
    s.trainer->set_view_crop(unbounded_box());
    const Image full = s.trainer->render_view(camera, {1, 1, 1});
    const double psnr = s.trainer->psnr_on(s.test, {1, 1, 1});

    s.trainer->set_view_crop(kAroundEverything);
    EXPECT_EQ(s.trainer->view_crop().lo.x, -1.f);
    EXPECT_EQ(s.trainer->render_view(camera, {1, 1, 1}).pixels, full.pixels);

    s.trainer->set_view_crop(kFarAway);
    const Image none = s.trainer->render_view(camera, {0.2f, 0.4f, 0.6f});
    for (size_t i = 0; i < none.pixels.size(); ++i) ASSERT_FLOAT_EQ(none.pixels[i], 0.2f * (1 + (float)(i % 3))) << i;
    for (float d : s.trainer->render_depth(camera).pixels) ASSERT_EQ(d, 0.f);
    EXPECT_EQ(s.trainer->psnr_on(s.test, {1, 1, 1}), psnr);
    EXPECT_GT(psnr, 15.0);
    s.trainer->set_view_crop(unbounded_box());
}

TEST(NerfCropCli, RenderCropDrawsTheBackgroundOutsideTheBox) {
    const fs::path dir = make_temp_dir("nerf_render_crop");
    const fs::path out = dir / "out";
    ASSERT_EQ(run_cli(nerf_train_args(out, 24)).exit_code, 0);
    const std::string snap = (out / "snapshot.fusedngp").string();
    const std::string render = "render " + snap + " --width 16 --background black --out ";
    for (const auto& [crop, file] : {std::pair{"", "full.exr"}, std::pair{" --crop -1,-1,-1,2,2,2", "around.exr"},
                                     std::pair{" --crop 2,2,2,3,3,3", "away.exr"}}) {
        const auto r = run_cli(render + (dir / file).string() + crop);
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    const Image full = load_image((dir / "full.exr").string());
    EXPECT_EQ(load_image((dir / "around.exr").string()).pixels, full.pixels);
    float brightest = 0;
    for (float v : full.pixels) brightest = std::max(brightest, v);
    EXPECT_GT(brightest, 0.01f) << "the uncropped render should show the (barely trained) scene on black";
    for (float v : load_image((dir / "away.exr").string()).pixels) ASSERT_EQ(v, 0.f);

    for (const char* bad : {"1,2,3", "0,0,0,1,1,x", "1,0,0,0,1,1", "0,0,0,1,1,1,1", "0,0,0,1,1,inf"}) {
        expect_cli_input_error(render + (dir / "bad.png").string() + " --crop " + bad, dir / "bad.png", "--crop");
    }
}

TEST(NerfCropCli, SdfModelsRefuseTheCrop) {
    const fs::path dir = make_temp_dir("nerf_crop_sdf");
    const fs::path out = dir / "out";
    const std::string source = FUSEDNGP_SOURCE_DIR;
    const auto r = run_cli("train --data " + source + "/data/cow.obj --backend cpu --config " + source +
                           "/configs/examples/sdf_small_cpu.json --steps 2 --batch 256 --eval-every 0 --out " +
                           out.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::string model = (out / "snapshot.fusedngp").string();
    expect_cli_input_error("mesh " + model + " --crop 0,0,0,1,1,1 --out " + (dir / "m.ply").string(), dir / "m.ply",
                           "--crop");
    expect_cli_input_error("render " + model + " --crop 0,0,0,1,1,1 --out " + (dir / "v.png").string(), dir / "v.png",
                           "--crop");
}
