// The GUI's TrainingSession in SDF mode, without a window: a 3-D model trains
// on an analytic sphere's signed distance, live width and depth changes keep
// the loss continuous, the display snapshot answers 3-D queries, snapshots
// round-trip with the mode recorded, and the live IoU probe gives analytic
// answers.
#ifdef FUSEDNGP_HAVE_GUI

#include "config/config.h"
#include "core/errors.h"
#include "core/math_constants.h"
#include "geometry/marching_cubes.h"
#include "geometry/mesh_io.h"
#include "geometry/vec3.h"
#include "gui/sdf_iou_probe.h"
#include "gui/sdf_setup.h"
#include "gui/training_session.h"
#include "modes/mode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace fusedngp {
namespace {

const Vec3 kCentre{0.5f, 0.5f, 0.5f};
constexpr float kRadius = 0.3f;

float scene_sphere_sdf(Vec3 p, Vec3 centre = kCentre, float radius = kRadius) { return length(p - centre) - radius; }

SdfBatchFn scene_sphere_field(Vec3 centre = kCentre, float radius = kRadius) {
    return [=](const Matrix<float>& points, Matrix<float>& values) {
        values.resize(points.rows(), 1);
        for (Eigen::Index i = 0; i < points.rows(); ++i)
            values(i, 0) = scene_sphere_sdf({points(i, 0), points(i, 1), points(i, 2)}, centre, radius);
    };
}

// Stands in for SdfTrainingData: half the batch uniform in the cube, half
// near the sphere's surface, with exact distances as targets.
class SphereTrainingData : public TrainingData {
public:
    uint32_t n_input_dims() const override { return 3; }
    uint32_t n_output_dims() const override { return 1; }
    void sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const override {
        inputs.resize(batch, 3);
        targets.resize(batch, 1);
        for (uint32_t i = 0; i < batch; ++i) {
            Vec3 p{rng.next_float(), rng.next_float(), rng.next_float()};
            if (i % 2) p = kCentre + normalize(p - kCentre) * (kRadius + 0.05f * (rng.next_float() - 0.5f));
            for (int d = 0; d < 3; ++d) inputs(i, d) = p[d];
            targets(i, 0) = scene_sphere_sdf(p);
        }
    }
};

SessionData sphere_session_data() {
    SessionData d{"sdf", "analytic-sphere", json{{"shape", "sphere"}}, std::make_unique<SphereTrainingData>()};
    return d;
}

json small_sdf_config() {
    json config = config_with_defaults(load_mode_config("sdf", ""));
    config["encoding"]["n_levels"] = 4;
    config["encoding"]["log2_hashmap_size"] = 12;
    config["encoding"]["base_resolution"] = 4;
    config["encoding"]["per_level_scale"] = 2.0;
    config["network"]["n_neurons"] = 16;
    config["network"]["n_hidden_layers"] = 1;
    config["loss"]["otype"] = "L2";
    config["optimizer"] = {{"otype", "Adam"}, {"learning_rate", 1e-2}};
    return config;
}

TEST(GuiSdfSession, WidthAndDepthChangesKeepTheLossContinuous) {
    TrainingSession s(sphere_session_data(), small_sdf_config(), "cpu", 1024, 3);
    EXPECT_EQ(s.mode(), "sdf");
    EXPECT_FALSE(s.is_image());
    EXPECT_THROW(s.image(), std::logic_error);
    s.set_lockstep(true);
    s.start_worker();
    s.run_steps(150);
    s.apply({"network.n_neurons", 32}, 1);  // a wider network computes the old function (NewInputs::Zero)
    EXPECT_TRUE(s.changes().back().function_kept) << s.changes().back().why_not;
    // The rebuilt model's optimizer starts afresh: its first Adam steps shake
    // the weights, so the next change waits until training has settled.
    s.run_steps(60);
    s.apply({"network.n_hidden_layers", 2}, 2);
    s.run_steps(30);
    s.stop_worker();
    s.poll();
    const float first = s.first_loss();
    ASSERT_EQ(s.changes().size(), 2u);
    const ChangeRecord& width = s.changes()[0];
    const ChangeRecord& depth = s.changes()[1];
    EXPECT_LT(width.loss_before, 0.05f * first) << "the sphere was not learned";
    EXPECT_GT(width.params_carried, 0u);
    EXPECT_LT(width.loss_after, 1.5f * width.loss_before + 1e-5f) << "the width change lost what was learned";
    EXPECT_GT(depth.params_carried, 0u);
    EXPECT_TRUE(depth.function_kept) << depth.why_not;  // the new layer starts as the identity (ReLU after ReLU)
    EXPECT_LT(depth.loss_after, 1.5f * depth.loss_before + 1e-5f) << "the depth change lost what was learned";
    EXPECT_LT(s.last_loss(), 0.05f * first);
    EXPECT_EQ(s.config()["network"]["n_neurons"], 32);
    EXPECT_EQ(s.config()["network"]["n_hidden_layers"], 2);
}

TEST(GuiSdfSession, DisplayModelAnswersThreeDimensionalQueries) {
    TrainingSession s(sphere_session_data(), small_sdf_config(), "cpu", 1024, 3);
    s.run_steps(100);  // without a worker every step publishes
    Matrix<float> points(3, 3), shown, direct;
    points << 0.5f, 0.5f, 0.5f, 0.95f, 0.5f, 0.5f, 0.5f, 0.82f, 0.5f;
    s.display_inference(points, shown);
    ASSERT_EQ(shown.rows(), 3);
    ASSERT_EQ(shown.cols(), 1);
    s.backend().inference(points, direct);
    EXPECT_LT((shown - direct).norm(), 1e-5f * (1.0f + direct.norm()));
    EXPECT_LT(shown(0, 0), 0) << "the centre is inside";
    EXPECT_GT(shown(1, 0), 0) << "a point 0.45 from the centre is outside";
    EXPECT_THROW(s.load_image("anything.png"), InputError);
}

TEST(GuiSdfSession, SnapshotRoundTripRecordsTheMode) {
    TrainingSession s(sphere_session_data(), small_sdf_config(), "cpu", 512, 3);
    s.run_steps(10);
    const std::vector<float> saved = s.backend().save_state().params;
    const std::string path = ::testing::TempDir() + "/fusedngp_gui_sdf.fusedngp";
    s.save_snapshot(path);
    s.run_steps(5);
    ASSERT_NE(s.backend().save_state().params, saved);
    s.load_snapshot(path);
    EXPECT_EQ(s.backend().save_state().params, saved);
    TrainingSession image_session(
        image_session_data([] {
            Image img;
            img.width = img.height = 4;
            img.channels = 3;
            img.pixels.assign(48, 0.5f);
            return img;
        }()),
        config_with_defaults(load_mode_config("image", "")), "cpu", 64, 1);
    EXPECT_THROW(image_session.load_snapshot(path), InputError) << "an SDF snapshot opened in image mode";
    std::remove(path.c_str());
}

// Two spheres of radius r whose centres are d apart overlap in the lens of
// volume pi (4r + d)(2r - d)^2 / 12.
TEST(GuiSdfSession, IouProbeMatchesTheSpheresOverlap) {
    SdfIouProbe probe(scene_sphere_field());
    const double volume = 4.0 / 3.0 * kPiFloat * kRadius * kRadius * kRadius;
    EXPECT_NEAR(probe.truth_inside() / (double)SdfIouProbe::kDefaultPoints, volume, 0.01);
    EXPECT_DOUBLE_EQ(probe.measure(scene_sphere_field()), 1.0);
    const float d = 0.2f;
    const double lens = kPiFloat * (4 * kRadius + d) * (2 * kRadius - d) * (2 * kRadius - d) / 12.0;
    EXPECT_NEAR(probe.measure(scene_sphere_field(kCentre + Vec3{d, 0, 0})), lens / (2 * volume - lens), 0.02);
    EXPECT_DOUBLE_EQ(probe.measure(scene_sphere_field({5, 5, 5})), 0.0) << "disjoint";
    SdfIouProbe empty(scene_sphere_field({5, 5, 5}));
    EXPECT_DOUBLE_EQ(empty.measure(scene_sphere_field({-5, 5, 5})), 1.0) << "both empty";
}

// "Extract mesh" writes in the input's coordinates: a sphere extracted in
// the unit cube comes back, read from the file, centred and sized as the
// input was (unit = (p - centre) * scale + 0.5).
TEST(GuiSdfSession, ExtractedMeshIsWrittenInInputCoordinates) {
    IsosurfaceSettings iso;
    iso.resolution = 32;
    TriangleMesh unit = extract_isosurface(scene_sphere_field(), iso);
    ASSERT_GT(unit.n_triangles(), 100u);
    UnitCubeTransform transform;
    transform.center = {10, -4, 2};
    transform.scale = 0.1f;  // the input is ten times the unit cube
    const std::string path = ::testing::TempDir() + "/fusedngp_gui_extracted.ply";
    EXPECT_EQ(save_in_input_coordinates(unit, transform, path), unit.n_triangles());
    TriangleMesh back = load_mesh(path);
    ASSERT_EQ(back.vertices.size(), unit.vertices.size());
    Vec3 mean{0, 0, 0};
    for (const Vec3& v : back.vertices) {
        // The unit sphere's centre (0.5, 0.5, 0.5) maps to the transform's centre.
        EXPECT_NEAR(length(v - transform.center), kRadius / transform.scale, 0.05f * kRadius / transform.scale);
        mean += v / (float)back.vertices.size();
    }
    EXPECT_LT(length(mean - transform.center), 0.05f);
    std::remove(path.c_str());
}

} // namespace
} // namespace fusedngp

#endif
