// The 3-D camera: pixel rays, look-at and orbit frames, command-line specs
// and camera files (formats, exact round trip, errors naming file and field).
#include "render/camera.h"
#include "core/math_constants.h"
#include "render/camera_io.h"

#include "camera_test_util.h"
#include "io_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace fusedngp;
using fusedngp::test::expect_input_error;
using fusedngp::test::expect_orthonormal_right_handed;
using fusedngp::test::expect_vec_near;
using fusedngp::test::ScratchDir;
using fusedngp::test::write_text;

namespace {


bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(Vec3 a, Vec3 b) { return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z); }

void expect_same_camera(const Camera& a, const Camera& b) {
    EXPECT_TRUE(same_bits(a.pose.position, b.pose.position));
    EXPECT_TRUE(same_bits(a.pose.right, b.pose.right));
    EXPECT_TRUE(same_bits(a.pose.up, b.pose.up));
    EXPECT_TRUE(same_bits(a.pose.forward, b.pose.forward));
    EXPECT_EQ(a.intrinsics.width, b.intrinsics.width);
    EXPECT_EQ(a.intrinsics.height, b.intrinsics.height);
    EXPECT_TRUE(same_bits(a.intrinsics.fx, b.intrinsics.fx));
    EXPECT_TRUE(same_bits(a.intrinsics.fy, b.intrinsics.fy));
    EXPECT_TRUE(same_bits(a.intrinsics.cx, b.intrinsics.cx));
    EXPECT_TRUE(same_bits(a.intrinsics.cy, b.intrinsics.cy));
}

Camera oblique_camera() {
    Camera c;
    c.pose = look_at({1.7f, 1.1f, 2.3f}, {0.4f, 0.5f, 0.6f});
    c.intrinsics = intrinsics_from_fov(64, 48, 35.f);
    return c;
}

} // namespace

TEST(Camera, RayThroughPrincipalPointIsForward) {
    Camera c = oblique_camera();
    c.intrinsics.cx = 20.3f;  // off-centre principal point: the ray follows cx, cy
    c.intrinsics.cy = 30.7f;
    const Ray r = camera_ray(c, c.intrinsics.cx, c.intrinsics.cy);
    expect_vec_near(r.direction, c.pose.forward, 1e-6f, "principal ray");
    expect_vec_near(r.origin, c.pose.position, 0, "origin");
}

TEST(Camera, PixelAxesFollowRightAndDown) {
    const Camera c = oblique_camera();
    const Ray right = camera_ray(c, 60.5f, 24.f), below = camera_ray(c, 32.f, 40.5f);
    EXPECT_GT(dot(right.direction, c.pose.right), 0.1f);
    EXPECT_LT(dot(below.direction, c.pose.up), -0.1f);  // row 0 is the top
    EXPECT_NEAR(length(right.direction), 1.f, 1e-6f);
}

TEST(Camera, FovRoundTripAndEdgeRayAngle) {
    const CameraIntrinsics k = intrinsics_from_fov(640, 480, 40.f);
    EXPECT_FLOAT_EQ(k.fx, k.fy);
    EXPECT_FLOAT_EQ(k.cx, 320.f);
    EXPECT_FLOAT_EQ(k.cy, 240.f);
    EXPECT_NEAR(fov_y_degrees(k), 40.f, 1e-4f);
    Camera c;
    c.intrinsics = k;
    // The ray through the top edge (py = 0) is fov/2 above forward.
    const Ray top = camera_ray(c, k.cx, 0.f);
    EXPECT_NEAR(std::acos(dot(top.direction, c.pose.forward)) * 180.f / kPiFloat, 20.f, 1e-3f);
}

TEST(Camera, LookAtFrameIsOrthonormalAndAimsAtTarget) {
    const Vec3 target{0.5f, 0.5f, 0.5f};
    const Vec3 positions[] = {{0.5f, 0.5f, 2.5f}, {2, 1, -1}, {-0.3f, 0.2f, 0.9f}, {0.5f, 3, 0.5f}, {0.5f, -2, 0.5f},
                              {0.5f + 1e-6f, 3, 0.5f}};
    for (const Vec3& p : positions) {
        const CameraPose pose = look_at(p, target);
        expect_orthonormal_right_handed(pose);
        expect_vec_near(pose.forward, normalize(target - p), 1e-6f, "forward aims at the target");
        expect_vec_near(pose.position, p, 0, "position kept");
        if (std::fabs(pose.forward.y) < 0.99f) {
            EXPECT_GT(pose.up.y, 0.f) << "up follows the world up hint";
        }
    }
    // The default camera: at +z looking along -z, right = +x, up = +y.
    const CameraPose front = look_at({0.5f, 0.5f, 2.5f}, target);
    expect_vec_near(front.right, {1, 0, 0}, 1e-6f, "right");
    expect_vec_near(front.up, {0, 1, 0}, 1e-6f, "up");
}

TEST(Camera, LookAtWithForwardParallelToUpPicksAnotherHint) {
    const CameraPose down = look_at({0.5f, 2, 0.5f}, {0.5f, 0.5f, 0.5f}, {0, 1, 0});
    expect_orthonormal_right_handed(down);
    expect_vec_near(down.forward, {0, -1, 0}, 1e-6f, "looking straight down");
    const CameraPose along_hint = look_at({0, 0, 0}, {0, 0, 1}, {0, 0, 5});
    expect_orthonormal_right_handed(along_hint);
    const CameraPose zero_hint = look_at({0, 0, 0}, {1, 0, 0}, {0, 0, 0});
    expect_orthonormal_right_handed(zero_hint);
}

TEST(Camera, OrbitPose) {
    const Vec3 target{0.5f, 0.5f, 0.5f};
    const CameraPose front = orbit_pose(0, 0, 2.5f, target);
    expect_vec_near(front.position, target + Vec3{0, 0, 2.5f}, 1e-6f, "yaw 0 pitch 0 at +z");
    expect_vec_near(front.forward, {0, 0, -1}, 1e-6f, "looking along -z");
    expect_vec_near(front.up, {0, 1, 0}, 1e-6f, "up");
    expect_vec_near(orbit_pose(90, 0, 2, target).position, target + Vec3{2, 0, 0}, 1e-5f, "yaw 90 about +y reaches +x");
    expect_vec_near(orbit_pose(0, 90, 2, target).position, target + Vec3{0, 2, 0}, 1e-5f, "pitch 90 above");
    expect_vec_near(orbit_pose(0, -30, 2, target).position, target + Vec3{0, -1, std::sqrt(3.f)}, 1e-5f, "pitch -30");
    for (float yaw : {-170.f, 0.f, 33.f, 200.f}) {
        for (float pitch : {-90.f, -45.f, 0.f, 20.f, 89.9f, 90.f}) {
            const CameraPose p = orbit_pose(yaw, pitch, 1.7f, {0.2f, 0.4f, 0.6f});
            expect_orthonormal_right_handed(p);
            EXPECT_NEAR(length(p.position - Vec3{0.2f, 0.4f, 0.6f}), 1.7f, 1e-5f);
            expect_vec_near(p.forward, normalize(Vec3{0.2f, 0.4f, 0.6f} - p.position), 1e-5f, "aims at the target");
            EXPECT_NEAR(p.right.y, 0.f, 1e-6f) << "right stays horizontal";
        }
    }
}

TEST(CameraSpec, ParsesOrbit) {
    const CameraPose p = parse_camera_spec("orbit:30,20,2.5");
    const CameraPose expected = orbit_pose(30, 20, 2.5f);
    EXPECT_TRUE(same_bits(p.position, expected.position));
    EXPECT_TRUE(same_bits(p.forward, expected.forward));
    const CameraPose spaced = parse_camera_spec("orbit: -45 , 10.5 ,3");
    expect_vec_near(spaced.position, orbit_pose(-45, 10.5f, 3).position, 0, "spaces allowed");
}

TEST(CameraSpec, ErrorsNameTheText) {
    for (const char* bad : {"", "orbit", "orbit:", "orbit:30,20", "orbit:30,20,2.5,1", "orbit:30,20,2.5,", "orbit:a,20,2",
                            "orbit:30,20,0", "orbit:30,20,-1", "orbit:30,nan,2", "orbit:1e99,0,2", "sphere:30,20,2.5",
                            "orbit:30,20,2x"}) {
        expect_input_error([&] { parse_camera_spec(bad); }, {"camera spec \"" + std::string(bad) + "\"", "orbit:"});
    }
}

TEST(CameraFile, LookAtForm) {
    ScratchDir dir;
    write_text(dir.file("cam.json"),
               R"({"position": [1.5, 1.0, 2.0], "look_at": [0.5, 0.5, 0.5], "up": [0, 1, 0], "fov_y_degrees": 30})");
    const Camera c = load_camera_file(dir.file("cam.json"), 320, 200);
    const CameraPose expected = look_at({1.5f, 1.f, 2.f}, {0.5f, 0.5f, 0.5f});
    expect_vec_near(c.pose.forward, expected.forward, 0, "forward");
    expect_vec_near(c.pose.up, expected.up, 0, "up");
    EXPECT_EQ(c.intrinsics.width, 320u);
    EXPECT_EQ(c.intrinsics.height, 200u);
    EXPECT_NEAR(fov_y_degrees(c.intrinsics), 30.f, 1e-4f);
    EXPECT_FLOAT_EQ(c.intrinsics.cx, 160.f);
}

TEST(CameraFile, OrbitFormWithSizeAndDefaults) {
    ScratchDir dir;
    write_text(dir.file("cam.json"), R"({"orbit": [30, 20, 2.5], "width": 100, "height": 80})");
    const Camera c = load_camera_file(dir.file("cam.json"), 640, 480);
    expect_vec_near(c.pose.position, orbit_pose(30, 20, 2.5f).position, 0, "orbit around the cube centre");
    EXPECT_EQ(c.intrinsics.width, 100u);
    EXPECT_EQ(c.intrinsics.height, 80u);
    EXPECT_NEAR(fov_y_degrees(c.intrinsics), kDefaultFovYDegrees, 1e-4f);

    write_text(dir.file("target.json"), R"({"orbit": [0, 0, 1], "look_at": [0.1, 0.2, 0.3]})");
    const Camera t = load_camera_file(dir.file("target.json"), 64, 48);
    expect_vec_near(t.pose.position, {0.1f, 0.2f, 1.3f}, 1e-6f, "orbit around look_at");
    EXPECT_EQ(t.intrinsics.width, 64u);
}

TEST(CameraFile, PinholeIntrinsicsAndExplicitFrame) {
    ScratchDir dir;
    write_text(dir.file("cam.json"), R"({"position": [0.5, 0.5, 3], "forward": [0, 0, -1], "right": [1, 0, 0],
        "up": [0, 1, 0], "fx": 400, "fy": 410, "cx": 100.5, "cy": 90.25, "width": 200, "height": 180})");
    const Camera c = load_camera_file(dir.file("cam.json"), 1, 1);
    EXPECT_FLOAT_EQ(c.intrinsics.fx, 400.f);
    EXPECT_FLOAT_EQ(c.intrinsics.fy, 410.f);
    EXPECT_FLOAT_EQ(c.intrinsics.cx, 100.5f);
    EXPECT_FLOAT_EQ(c.intrinsics.cy, 90.25f);
    expect_vec_near(c.pose.forward, {0, 0, -1}, 0, "forward");
    EXPECT_EQ(c.intrinsics.height, 180u);
}

TEST(CameraFile, SaveLoadRoundTripIsExact) {
    ScratchDir dir;
    Camera c = oblique_camera();
    c.intrinsics.cx = 31.123456f;
    c.intrinsics.fy *= 1.0001f;
    for (const Camera& camera : {c, Camera{orbit_pose(-73.3f, 41.7f, 1.9f), intrinsics_from_fov(33, 17, 61.f)}}) {
        save_camera_file(camera, dir.file("cam.json"));
        expect_same_camera(load_camera_file(dir.file("cam.json"), 7, 9), camera);
        EXPECT_EQ(camera_to_json(camera)["width"], camera.intrinsics.width);
    }
}

TEST(CameraFile, ErrorsNameFileAndField) {
    ScratchDir dir;
    const std::string path = dir.file("cam.json");
    struct Case {
        const char* text;
        const char* field;
    };
    const Case cases[] = {
        {R"({"position": [1, 2], "look_at": [0, 0, 0]})", "\"position\""},
        {R"({"position": [1, 2, "x"], "look_at": [0, 0, 0]})", "\"position\""},
        {R"({"position": [1, 2, 3]})", "\"look_at\""},
        {R"({"look_at": [1, 2, 3]})", "\"position\""},
        {R"({"position": [1, 2, 3], "look_at": [1, 2, 3]})", "\"look_at\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "up": [0, 0, 0]})", "\"up\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fov": 40})", "\"fov\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fov_y_degrees": 180})", "\"fov_y_degrees\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fov_y_degrees": "wide"})", "\"fov_y_degrees\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fx": 100, "fy": 100, "cx": 5})", "\"cy\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fx": -1, "fy": 100, "cx": 5, "cy": 5})", "\"fx\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "fx": 1, "fy": 1, "cx": 5, "cy": 5, "fov_y_degrees": 9})", "\"fov_y_degrees\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "width": 0})", "\"width\""},
        {R"({"position": [1, 2, 3], "look_at": [0, 0, 0], "height": 2.5})", "\"height\""},
        {R"({"orbit": [30, 20]})", "\"orbit\""},
        {R"({"orbit": [30, 20, 0]})", "\"orbit\""},
        {R"({"orbit": [30, 20, 2], "position": [1, 1, 1]})", "\"position\""},
        {R"({"position": [1, 2, 3], "forward": [0, 0, -1], "right": [1, 0, 0]})", "\"up\""},
        {R"({"position": [1, 2, 3], "forward": [0, 0, -1], "right": [1, 0, 0], "up": [1, 0, 0]})", "\"up\""},
        {R"({"position": [1, 2, 3], "forward": [0, 0, -2], "right": [1, 0, 0], "up": [0, 1, 0]})", "\"forward\""},
        {R"({"position": [1, 2, 3], "forward": [0, 0, -1], "look_at": [0, 0, 0]})", "\"forward\""},
    };
    for (const Case& c : cases) {
        write_text(path, c.text);
        expect_input_error([&] { load_camera_file(path, 64, 48); }, {path, c.field});
    }
    write_text(path, "{\"orbit\": [1, 2, 3]");
    expect_input_error([&] { load_camera_file(path, 64, 48); }, {path, "not valid JSON"});
    write_text(path, "[1, 2, 3]");
    expect_input_error([&] { load_camera_file(path, 64, 48); }, {path, "JSON object"});
    expect_input_error([&] { load_camera_file(dir.file("missing.json"), 64, 48); }, {"missing.json"});
}
