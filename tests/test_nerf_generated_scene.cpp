// The synthetic NeRF scene: exact ray hits and shading, supersampled
// silhouettes, the unit-cube <-> Blender world mapping, and the dataset
// writer (files, JSON, camera convention checked by re-rendering a frame from
// its transform_matrix, determinism, errors).
#include "nerf/synthetic_scene.h"

#include "camera_test_util.h"
#include "core/math_constants.h"
#include "io_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace fusedngp;
using fusedngp::test::expect_input_error;
using fusedngp::test::expect_orthonormal_right_handed;
using fusedngp::test::expect_vec_near;
using fusedngp::test::read_bytes;
using fusedngp::test::ScratchDir;

namespace {


SyntheticScene one_sphere(Vec3 center, float radius, Vec3 color) {
    SyntheticScene scene;
    scene.primitives = {Primitive::sphere(center, radius, color)};
    return scene;
}

// A camera on +z of `target` at `distance`, looking along -z, odd image size
// so the centre pixel's centre is exactly the principal point.
Camera camera_facing(Vec3 target, float distance, uint32_t size = 33, float fov_y = 30.f) {
    Camera c;
    c.pose = look_at(target + Vec3{0, 0, distance}, target);
    c.intrinsics = intrinsics_from_fov(size, size, fov_y);
    return c;
}

Vec3 expected_shade(Vec3 color, Vec3 normal) {
    return color * (0.3f + 0.7f * std::max(0.f, dot(normal, synthetic_light_direction())));
}

Vec3 rgb_at(const Image& image, int x, int y) { return Vec3{image.at(x, y, 0), image.at(x, y, 1), image.at(x, y, 2)}; }

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

// The Blender camera of a frame, read with instant-ngp's mapping
// (unit = (w.y, w.z, w.x) * 0.33 + 0.5) written out here rather than through
// the library, so the test checks the documented convention itself.
Camera camera_from_frame(const nlohmann::json& transforms, const nlohmann::json& frame) {
    const auto& m = frame["transform_matrix"];
    auto column = [&](int col) { return Vec3{m[0][col].get<float>(), m[1][col].get<float>(), m[2][col].get<float>()}; };
    auto to_unit_direction = [](Vec3 w) { return Vec3{w.y, w.z, w.x}; };
    Camera c;
    c.pose.right = to_unit_direction(column(0));
    c.pose.up = to_unit_direction(column(1));
    c.pose.forward = -to_unit_direction(column(2));
    c.pose.position = to_unit_direction(column(3)) * 0.33f + Vec3{0.5f, 0.5f, 0.5f};
    const uint32_t w = transforms["w"], h = transforms["h"];
    const double fov_x = transforms["camera_angle_x"];
    c.intrinsics.width = w;
    c.intrinsics.height = h;
    c.intrinsics.fx = c.intrinsics.fy = (float)(0.5 * w / std::tan(0.5 * fov_x));
    c.intrinsics.cx = 0.5f * w;
    c.intrinsics.cy = 0.5f * h;
    return c;
}

} // namespace

TEST(NerfSyntheticScene, DefaultSceneIsInsideTheUnitCubeWithDistinctColours) {
    const SyntheticScene scene = default_synthetic_scene();
    ASSERT_GE(scene.primitives.size(), 3u);
    ASSERT_LE(scene.primitives.size(), 4u);
    int spheres = 0, boxes = 0;
    for (size_t i = 0; i < scene.primitives.size(); ++i) {
        const Primitive& p = scene.primitives[i];
        (p.kind == PrimitiveKind::Sphere ? spheres : boxes)++;
        const Box3 b = p.bounds();
        for (int a = 0; a < 3; ++a) {
            EXPECT_GE(b.lo[a], 0.05f) << "primitive " << i;
            EXPECT_LE(b.hi[a], 0.95f) << "primitive " << i;
        }
        for (size_t j = 0; j < i; ++j) {
            EXPECT_GT(length(p.color - scene.primitives[j].color), 0.3f) << i << " vs " << j;
        }
    }
    EXPECT_GE(spheres, 1);
    EXPECT_GE(boxes, 1);
    const Primitive& red = scene.primitives[0];
    EXPECT_LT(length(Vec3{0.5f, 0.5f, 0.5f} - red.center), red.radius - 0.02f) << "the centre is well inside";
}

TEST(NerfSyntheticScene, CentreRayHitsTheSphereAtItsNearPointWithItsShadedColour) {
    const Vec3 center{0.45f, 0.55f, 0.5f}, color{0.9f, 0.2f, 0.1f};
    const float radius = 0.2f, distance = 1.5f;
    const SyntheticScene scene = one_sphere(center, radius, color);
    const Camera camera = camera_facing(center, distance);

    const SceneHit hit = intersect_scene(scene, camera_ray(camera, 16.5f, 16.5f));
    ASSERT_TRUE(hit.hit);
    EXPECT_NEAR(hit.t, distance - radius, 1e-5f);
    expect_vec_near(hit.normal, Vec3{0, 0, 1}, 1e-5f, "normal faces the camera");

    const Image image = render_synthetic_view(scene, camera, 1);
    ASSERT_EQ(image.channels, 4);
    expect_vec_near(rgb_at(image, 16, 16), expected_shade(color, Vec3{0, 0, 1}), 1e-5f, "centre pixel");
    EXPECT_EQ(image.at(16, 16, 3), 1.f);
}

TEST(NerfSyntheticScene, MissesAreTransparentBlackAndOneSampleGivesBinaryAlpha) {
    const SyntheticScene scene = one_sphere({0.5f, 0.5f, 0.5f}, 0.1f, {0.2f, 0.9f, 0.3f});
    const Camera camera = camera_facing({0.5f, 0.5f, 0.5f}, 1.5f);
    EXPECT_FALSE(intersect_scene(scene, camera_ray(camera, 0.5f, 0.5f)).hit);
    // A ray pointing away from the sphere never hits it (t > 0 only).
    EXPECT_FALSE(intersect_scene(scene, Ray{{0.5f, 0.5f, 2.0f}, {0, 0, 1}}).hit);

    const Image image = render_synthetic_view(scene, camera, 1);
    int hits = 0, misses = 0;
    for (int y = 0; y < image.height; ++y) {
        for (int x = 0; x < image.width; ++x) {
            const float alpha = image.at(x, y, 3);
            EXPECT_TRUE(alpha == 0.f || alpha == 1.f) << x << "," << y;
            if (alpha == 0.f) {
                ++misses;
                EXPECT_EQ(rgb_at(image, x, y).x + rgb_at(image, x, y).y + rgb_at(image, x, y).z, 0.f);
            } else {
                ++hits;
            }
        }
    }
    EXPECT_EQ(image.at(0, 0, 3), 0.f);
    EXPECT_GT(hits, 0);
    EXPECT_GT(misses, hits);
}

TEST(NerfSyntheticScene, SupersampledSilhouettePixelsHaveFractionalAlpha) {
    const Vec3 center{0.5f, 0.5f, 0.5f}, color{0.2f, 0.3f, 0.9f};
    const float radius = 0.2f, distance = 1.5f;
    const SyntheticScene scene = one_sphere(center, radius, color);
    const Camera camera = camera_facing(center, distance);
    // The silhouette's rightmost point on the centre row: the tangent ray's angle.
    const float edge_x = camera.intrinsics.cx + camera.intrinsics.fx * std::tan(std::asin(radius / distance));
    const int edge_pixel = (int)edge_x;
    ASSERT_GT(edge_x - edge_pixel, 0.2f) << "keep the edge away from pixel borders";
    ASSERT_LT(edge_x - edge_pixel, 0.8f);

    const Image sharp = render_synthetic_view(scene, camera, 1);
    const Image smooth = render_synthetic_view(scene, camera, 4);
    const float alpha = smooth.at(edge_pixel, 16, 3);
    EXPECT_GT(alpha, 0.f);
    EXPECT_LT(alpha, 1.f);
    EXPECT_EQ(smooth.at(edge_pixel - 2, 16, 3), 1.f);
    EXPECT_EQ(smooth.at(edge_pixel + 2, 16, 3), 0.f);
    // Straight alpha: a partly covered pixel keeps the sphere's (shaded) hue,
    // not a colour darkened towards the black background.
    const Vec3 rgb = rgb_at(smooth, edge_pixel, 16);
    EXPECT_NEAR(rgb.z / rgb.x, color.z / color.x, 1e-4f);
    EXPECT_GE(rgb.z, color.z * 0.3f - 1e-6f);

    int fractional = 0;
    double coverage_sharp = 0, coverage_smooth = 0;
    for (int y = 0; y < smooth.height; ++y) {
        for (int x = 0; x < smooth.width; ++x) {
            const float a = smooth.at(x, y, 3);
            fractional += a > 0.f && a < 1.f;
            coverage_sharp += sharp.at(x, y, 3);
            coverage_smooth += a;
        }
    }
    EXPECT_GT(fractional, 8);
    // The covered area approaches the projected disc's (a circle of radius
    // fx * tan(asin(r/d)) pixels).
    const double disc_radius = camera.intrinsics.fx * std::tan(std::asin(radius / distance));
    EXPECT_NEAR(coverage_smooth, kPi * disc_radius * disc_radius, 0.03 * kPi * disc_radius * disc_radius);
    EXPECT_NEAR(coverage_sharp, coverage_smooth, 0.1 * coverage_smooth);
}

TEST(NerfSyntheticScene, BoxFacesAreHitWithTheirNormalsAndTheNearestPrimitiveWins) {
    const Vec3 color{0.95f, 0.85f, 0.2f};
    SyntheticScene scene;
    scene.primitives = {Primitive::box({0.5f, 0.5f, 0.5f}, {0.1f, 0.2f, 0.15f}, color)};
    const Camera front = camera_facing({0.5f, 0.5f, 0.5f}, 1.5f);
    SceneHit hit = intersect_scene(scene, camera_ray(front, 16.5f, 16.5f));
    ASSERT_TRUE(hit.hit);
    EXPECT_NEAR(hit.t, 1.5f - 0.15f, 1e-5f);
    expect_vec_near(hit.normal, Vec3{0, 0, 1}, 0, "+z face");
    expect_vec_near(rgb_at(render_synthetic_view(scene, front, 1), 16, 16), expected_shade(color, {0, 0, 1}), 1e-5f);

    // From -x along +x: the -x face, whose shade differs (the light is on +x).
    hit = intersect_scene(scene, Ray{{-1.f, 0.55f, 0.52f}, {1, 0, 0}});
    ASSERT_TRUE(hit.hit);
    EXPECT_NEAR(hit.t, 1.4f, 1e-5f);
    expect_vec_near(hit.normal, Vec3{-1, 0, 0}, 0, "-x face");
    EXPECT_NE(length(expected_shade(color, {-1, 0, 0}) - expected_shade(color, {0, 0, 1})), 0.f);

    // A sphere in front of the box along the ray occludes it.
    scene.primitives.push_back(Primitive::sphere({0.5f, 0.5f, 0.9f}, 0.1f, {0.1f, 0.2f, 0.9f}));
    hit = intersect_scene(scene, camera_ray(front, 16.5f, 16.5f));
    ASSERT_TRUE(hit.hit);
    EXPECT_NEAR(hit.t, 2.0f - (0.9f + 0.1f), 1e-5f);  // camera at z = 2, sphere's near point at z = 1
    expect_vec_near(hit.color, Vec3{0.1f, 0.2f, 0.9f}, 0, "the sphere's colour");
}

TEST(NerfSyntheticScene, WorldFrameIsZUpCentredAndMatchesInstantNgpsMapping) {
    expect_vec_near(synthetic_world_from_unit({0.5f, 0.5f, 0.5f}), Vec3{0, 0, 0}, 1e-6f, "centre");
    expect_vec_near(synthetic_world_direction({0, 1, 0}), Vec3{0, 0, 1}, 0, "our up is Blender's up");
    // A rotation: right-handed axes stay right-handed.
    const Vec3 x = synthetic_world_direction({1, 0, 0}), y = synthetic_world_direction({0, 1, 0});
    expect_vec_near(cross(x, y), synthetic_world_direction({0, 0, 1}), 0, "det +1");
    for (Vec3 p : {Vec3{0.1f, 0.7f, 0.3f}, Vec3{1, 0, 0.5f}, Vec3{0.9f, 0.2f, 0.95f}}) {
        const Vec3 w = synthetic_world_from_unit(p);
        expect_vec_near(synthetic_unit_from_world(w), p, 1e-6f, "round trip");
        expect_vec_near(Vec3{w.y, w.z, w.x} * 0.33f + Vec3{0.5f, 0.5f, 0.5f}, p, 1e-6f, "instant-ngp's mapping");
    }
    const CameraPose pose = orbit_pose(40.f, 25.f, 1.3f);
    const CameraPose back = pose_from_blender_transform(blender_transform_from_pose(pose));
    expect_vec_near(back.position, pose.position, 1e-6f);
    expect_vec_near(back.right, pose.right, 0);
    expect_vec_near(back.up, pose.up, 0);
    expect_vec_near(back.forward, pose.forward, 0);
}

TEST(NerfSyntheticScene, DatasetFilesFollowTheBlenderConvention) {
    ScratchDir dir;
    const SyntheticScene scene = default_synthetic_scene();
    const int n_train = 6, n_test = 3;
    const uint32_t width = 48, height = 40;
    write_synthetic_dataset(dir.path(), scene, n_train, n_test, width, height, 7);

    for (const auto& [split, count] : {std::pair<std::string, int>{"train", n_train}, {"test", n_test}}) {
        SCOPED_TRACE(split);
        const nlohmann::json transforms = read_json(dir.file("transforms_" + split + ".json"));
        EXPECT_NEAR(transforms["camera_angle_x"].get<double>(), 40.0 * kPi / 180.0, 1e-12);
        EXPECT_EQ(transforms["w"].get<uint32_t>(), width);
        EXPECT_EQ(transforms["h"].get<uint32_t>(), height);
        ASSERT_EQ(transforms["frames"].size(), (size_t)count);
        for (int i = 0; i < count; ++i) {
            SCOPED_TRACE(i);
            const nlohmann::json& frame = transforms["frames"][i];
            EXPECT_EQ(frame["file_path"], "./" + split + "/r_" + std::to_string(i));
            ASSERT_TRUE(std::filesystem::exists(dir.file(split + "/r_" + std::to_string(i) + ".png")));

            const auto& m = frame["transform_matrix"];
            ASSERT_EQ(m.size(), 4u);
            for (int c = 0; c < 4; ++c) EXPECT_EQ(m[3][c].get<double>(), c == 3 ? 1.0 : 0.0);
            auto column = [&](int c) { return Vec3{m[0][c].get<float>(), m[1][c].get<float>(), m[2][c].get<float>()}; };
            // Columns x, y, z: orthonormal and right-handed (the camera looks along -z).
            CameraPose axes;
            axes.right = column(0);
            axes.up = column(1);
            axes.forward = -column(2);
            expect_orthonormal_right_handed(axes);
            const Vec3 position = column(3);
            EXPECT_NEAR(length(position), 4.0f, 1e-5f);
            expect_vec_near(axes.forward, -position / length(position), 1e-5f, "-z looks at the origin");
            EXPECT_NEAR(axes.right.z, 0.f, 1e-5f) << "image rows stay level (world z up)";
            if (split == "test") {
                EXPECT_NEAR(position.z, 4.0f * std::sin(30.0 * kPi / 180.0), 1e-5f) << "the ring's elevation";
                EXPECT_GT(axes.up.z, 0.f);
            }

            // The camera sees the scene: the ray through the principal point
            // (the unit cube's centre lies inside the red sphere) hits it, and
            // the four pixels around the image centre are fully covered.
            EXPECT_TRUE(intersect_scene(scene, camera_ray(camera_from_frame(transforms, frame), width / 2.f, height / 2.f)).hit);
            const Image png = load_image(dir.file(split + "/r_" + std::to_string(i) + ".png"));
            ASSERT_EQ(png.channels, 4);
            for (int y : {height / 2 - 1, height / 2}) {
                for (int x : {width / 2 - 1, width / 2}) EXPECT_EQ(png.at(x, y, 3), 1.f) << x << "," << y;
            }
        }
    }
}

TEST(NerfSyntheticScene, RerenderingFromTheJsonMatrixReproducesThePng) {
    ScratchDir dir;
    const SyntheticScene scene = default_synthetic_scene();
    write_synthetic_dataset(dir.path(), scene, 4, 2, 40, 40, 3);
    for (const std::string split : {"train", "test"}) {
        SCOPED_TRACE(split);
        const nlohmann::json transforms = read_json(dir.file("transforms_" + split + ".json"));
        const Camera camera = camera_from_frame(transforms, transforms["frames"][0]);
        const Image rendered = render_synthetic_view(scene, camera, SyntheticRig{}.supersampling);
        const Image png = load_image(dir.file(split + "/r_0.png"));
        ASSERT_EQ(png.width, rendered.width);
        ASSERT_EQ(png.height, rendered.height);
        ASSERT_EQ(png.channels, 4);
        double max_error = 0, covered = 0;
        for (size_t i = 0; i < png.pixels.size(); ++i) {
            const double quantised = std::round(std::clamp(rendered.pixels[i], 0.f, 1.f) * 255.0) / 255.0;
            max_error = std::max(max_error, std::fabs(quantised - png.pixels[i]));
            if (i % 4 == 3) covered += png.pixels[i];
        }
        EXPECT_LE(max_error, 1.0 / 255.0 + 1e-6);
        EXPECT_GT(covered, 0.1 * png.pixel_count()) << "the scene fills a fair part of the frame";
        EXPECT_LT(covered, 0.8 * png.pixel_count());
    }
}

TEST(NerfSyntheticScene, SameSeedGivesIdenticalBytesAndViewsDiffer) {
    ScratchDir a, b, c;
    const SyntheticScene scene = default_synthetic_scene();
    write_synthetic_dataset(a.path(), scene, 3, 2, 24, 24, 11);
    write_synthetic_dataset(b.path(), scene, 3, 2, 24, 24, 11);
    write_synthetic_dataset(c.path(), scene, 3, 2, 24, 24, 12);
    for (const std::string name : {"transforms_train.json", "transforms_test.json", "train/r_0.png", "train/r_2.png",
                                   "test/r_1.png"}) {
        EXPECT_EQ(read_bytes(a.file(name)), read_bytes(b.file(name))) << name;
    }
    EXPECT_NE(read_bytes(a.file("transforms_train.json")), read_bytes(c.file("transforms_train.json")));
    EXPECT_NE(read_bytes(a.file("transforms_test.json")), read_bytes(c.file("transforms_test.json")));
    EXPECT_NE(read_bytes(a.file("train/r_0.png")), read_bytes(a.file("train/r_1.png")));
    // Only the finished files are left (atomic writes clean up).
    EXPECT_EQ(a.entries(), (std::vector<std::string>{"test", "train", "transforms_test.json", "transforms_train.json"}));
}

TEST(NerfSyntheticScene, TrainCamerasCoverTheSphere) {
    const std::vector<CameraPose> poses = synthetic_train_poses(40, 5);
    ASSERT_EQ(poses.size(), 40u);
    Vec3 mean{0, 0, 0};
    int above = 0;
    for (const CameraPose& p : poses) {
        const Vec3 outward = p.position - Vec3{0.5f, 0.5f, 0.5f};
        mean += outward / length(outward) / 40.f;
        above += outward.y > 0;
    }
    // Evenly spread: the directions nearly cancel, half are above the equator.
    EXPECT_LT(length(mean), 0.05f);
    EXPECT_EQ(above, 20);
}

TEST(NerfSyntheticScene, BadArgumentsNameTheDirectory) {
    ScratchDir dir;
    const SyntheticScene scene = default_synthetic_scene();
    const std::string out = dir.file("out");
    expect_input_error([&] { write_synthetic_dataset(out, scene, 0, 1, 8, 8, 1); }, {out, "n_train"});
    expect_input_error([&] { write_synthetic_dataset(out, scene, 1, -1, 8, 8, 1); }, {out, "n_test"});
    expect_input_error([&] { write_synthetic_dataset(out, scene, 1, 1, 0, 8, 1); }, {out, "width"});
    SyntheticRig rig;
    rig.supersampling = 0;
    expect_input_error([&] { write_synthetic_dataset(out, scene, 1, 1, 8, 8, 1, rig); }, {out, "supersampling"});
    // A path under a regular file cannot be created.
    fusedngp::test::write_text(dir.file("file"), "x");
    expect_input_error([&] { write_synthetic_dataset(dir.file("file/sub"), scene, 1, 0, 8, 8, 1); }, {"file/sub"});
}
