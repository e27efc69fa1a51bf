// CameraController: orbit, pan, zoom, fly, fov, fit and reset checked by
// projecting known points through the camera it produces (and back with
// camera_ray), so the conventions the 3-D views rely on are pinned down.
#include "render/camera_controller.h"

#include "camera_test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fusedngp {
namespace {

using test::expect_orthonormal_right_handed;
using test::expect_vec_near;

struct Pixel {
    float x, y, depth;
};

// Pinhole projection of a world point (the inverse of camera_ray).
Pixel project(const Camera& c, Vec3 p) {
    const Vec3 rel = p - c.pose.position;
    const float z = dot(rel, c.pose.forward);
    return {c.intrinsics.cx + c.intrinsics.fx * dot(rel, c.pose.right) / z,
            c.intrinsics.cy - c.intrinsics.fy * dot(rel, c.pose.up) / z, z};
}

TEST(CameraController, PoseConventionMatchesOrbitPose) {
    CameraController c;
    c.set_view(0, 0, 2, {0.5f, 0.5f, 0.5f});
    CameraPose p = c.pose();
    expect_vec_near(p.position, {0.5f, 0.5f, 2.5f}, 1e-5f);  // yaw 0: on the +z side looking along -z
    expect_vec_near(p.forward, {0, 0, -1}, 1e-6f);
    expect_vec_near(p.right, {1, 0, 0}, 1e-6f);
    expect_vec_near(p.up, {0, 1, 0}, 1e-6f);
    c.set_view(90, 0, 2, {0.5f, 0.5f, 0.5f});
    expect_vec_near(c.pose().position, {2.5f, 0.5f, 0.5f}, 1e-5f);  // +yaw turns +z towards +x
    c.set_view(0, 30, 2, {0.5f, 0.5f, 0.5f});
    EXPECT_GT(c.pose().position.y, 0.5f + 0.99f);  // positive pitch: above
    expect_orthonormal_right_handed(c.pose());
}

TEST(CameraController, ProjectionRoundTripsThroughCameraRay) {
    CameraController c;
    const Camera cam = c.camera(320, 180);
    EXPECT_FLOAT_EQ(cam.intrinsics.cx, 160);
    EXPECT_FLOAT_EQ(cam.intrinsics.cy, 90);
    // fy from the vertical fov: the top edge of the image is fov/2 above the axis.
    EXPECT_NEAR(2 * std::atan(90.f / cam.intrinsics.fy) * 180 / 3.14159265f, c.fov(), 1e-3);
    const Vec3 p{0.8f, 0.3f, 0.6f};
    const Pixel px = project(cam, p);
    const Ray r = camera_ray(cam, px.x, px.y);
    const float t = dot(p - r.origin, r.direction);
    expect_vec_near(r.origin + r.direction * t, p, 1e-5f);
    const Pixel centre = project(cam, c.target());
    EXPECT_NEAR(centre.x, 160, 1e-3);
    EXPECT_NEAR(centre.y, 90, 1e-3);
}

TEST(CameraController, OrbitTurnsTheSceneWithTheCursorAndKeepsDistance) {
    CameraController c;
    c.set_view(0, 0, 2, {0.5f, 0.5f, 0.5f});
    const Vec3 front{0.5f, 0.5f, 0.8f};  // a scene point between target and camera
    const float x0 = project(c.camera(200, 200), front).x;
    c.orbit(100, 0);
    EXPECT_FLOAT_EQ(c.yaw(), -100 * CameraController::kOrbitDegreesPerPixel);
    EXPECT_GT(project(c.camera(200, 200), front).x, x0 + 1) << "dragging right must turn the scene right";
    EXPECT_NEAR(length(c.pose().position - c.target()), 2, 1e-5);
    const float y0 = project(c.camera(200, 200), front).y;
    c.orbit(0, 50);  // drag down: look from above, the front point drops on screen
    EXPECT_GT(c.pitch(), 0);
    EXPECT_GT(project(c.camera(200, 200), front).y, y0 + 1);
    c.orbit(0, 1e5f);
    EXPECT_FLOAT_EQ(c.pitch(), CameraController::kMaxPitch);
    expect_orthonormal_right_handed(c.pose());
    c.orbit(0, -1e5f);
    EXPECT_FLOAT_EQ(c.pitch(), -CameraController::kMaxPitch);
    expect_orthonormal_right_handed(c.pose());
}

TEST(CameraController, PanKeepsThePointUnderTheCursor) {
    CameraController c;
    c.orbit(37, -12);
    const Vec3 anchor = c.target();  // at the target's depth
    const Camera before = c.camera(640, 480);
    const Pixel p0 = project(before, anchor);
    c.pan(25, -40, 480);
    const Pixel p1 = project(c.camera(640, 480), anchor);
    EXPECT_NEAR(p1.x - p0.x, 25, 1e-2);
    EXPECT_NEAR(p1.y - p0.y, -40, 1e-2);
    EXPECT_NEAR(c.distance(), length(before.pose.position - anchor), 1e-5);
    expect_vec_near(c.pose().forward, before.pose.forward, 1e-6f);  // pan does not turn
}

TEST(CameraController, ZoomIsGeometricAndReversible) {
    CameraController c;
    const float d0 = c.distance();
    const Vec3 t0 = c.target();
    c.zoom(2);
    EXPECT_NEAR(c.distance(), d0 * CameraController::kZoomPerWheelStep * CameraController::kZoomPerWheelStep, 1e-5);
    expect_vec_near(c.target(), t0, 0);
    c.zoom(-2);
    EXPECT_NEAR(c.distance(), d0, 1e-5);
    c.zoom(1e4f);  // never reaches the target
    EXPECT_GT(c.distance(), 0);
    expect_orthonormal_right_handed(c.pose());
}

TEST(CameraController, FlyMovesAtSceneSpeedIndependentOfDirection) {
    CameraController c;  // unit-cube scene: diameter sqrt(3)
    const float diameter = std::sqrt(3.f);
    const CameraPose p0 = c.pose();
    const float d0 = c.distance();
    const uint64_t v0 = c.version();
    c.fly(FlyKeys{}, 0.5f);
    EXPECT_EQ(c.version(), v0) << "no key held: nothing moves";
    FlyKeys w;
    w.forward = true;
    c.fly(w, 0.5f);
    const Vec3 moved = c.pose().position - p0.position;
    expect_vec_near(moved, p0.forward * (CameraController::kFlySpeed * diameter * 0.5f), 1e-5f);
    EXPECT_FLOAT_EQ(c.distance(), d0);  // the target moved along

    FlyKeys diagonal;
    diagonal.forward = diagonal.right = true;
    Vec3 before = c.pose().position;
    c.fly(diagonal, 1.f);
    EXPECT_NEAR(length(c.pose().position - before), CameraController::kFlySpeed * diameter, 1e-4);
    FlyKeys fast;
    fast.up = fast.fast = true;
    before = c.pose().position;
    c.fly(fast, 1.f);
    expect_vec_near(c.pose().position - before,
                    p0.up * (CameraController::kFlySpeed * CameraController::kFastFlyFactor * diameter), 1e-4f);
    FlyKeys opposite;
    opposite.left = opposite.right = true;
    before = c.pose().position;
    c.fly(opposite, 1.f);
    expect_vec_near(c.pose().position, before, 0);
}

TEST(CameraController, FitShowsTheWholeBoxAtAnyAspect) {
    const Box3 box{{-2, 0, 1}, {3, 1, 2}};
    for (float aspect : {16.f / 9.f, 1.f, 9.f / 16.f}) {
        CameraController c(box);
        c.orbit(123, 45);
        const float yaw = c.yaw(), pitch = c.pitch();
        c.fit(box, aspect);
        EXPECT_FLOAT_EQ(c.yaw(), yaw);  // fit keeps the direction
        EXPECT_FLOAT_EQ(c.pitch(), pitch);
        const uint32_t h = 400, w = (uint32_t)std::lround(400 * aspect);
        const Camera cam = c.camera(w, h);
        for (int corner = 0; corner < 8; ++corner) {
            Vec3 p{corner & 1 ? box.hi.x : box.lo.x, corner & 2 ? box.hi.y : box.lo.y, corner & 4 ? box.hi.z : box.lo.z};
            Pixel px = project(cam, p);
            EXPECT_GT(px.depth, 0);
            EXPECT_GE(px.x, 0) << aspect;
            EXPECT_LE(px.x, (float)w) << aspect;
            EXPECT_GE(px.y, 0) << aspect;
            EXPECT_LE(px.y, (float)h) << aspect;
        }
    }
}

TEST(CameraController, ResetRestoresTheDefaultViewAndFovClamps) {
    CameraController c;
    const CameraPose p0 = c.pose();
    c.orbit(40, 30);
    c.pan(10, 10, 100);
    c.zoom(3);
    c.set_fov(500);
    EXPECT_FLOAT_EQ(c.fov(), CameraController::kMaxFov);
    c.set_fov(1);
    EXPECT_FLOAT_EQ(c.fov(), CameraController::kMinFov);
    const uint64_t v = c.version();
    c.reset();
    EXPECT_GT(c.version(), v);
    EXPECT_FLOAT_EQ(c.fov(), CameraController::kDefaultFov);
    expect_vec_near(c.pose().position, p0.position, 1e-5f);
    expect_vec_near(c.target(), {0.5f, 0.5f, 0.5f}, 1e-6f);
}

} // namespace
// A NeRF training view: the controller looks from its position along its
// direction (roll-free poses come back exactly) with its field of view.
TEST(CameraController, LookFromReproducesAnUnrolledPose) {
    CameraController c;
    const CameraPose target = orbit_pose(-70.f, 35.f, 1.8f, {0.45f, 0.55f, 0.5f});
    c.look_from(target, 50.f);
    const CameraPose p = c.pose();
    expect_vec_near(p.position, target.position, 1e-4f);
    expect_vec_near(p.forward, target.forward, 1e-5f);
    expect_vec_near(p.up, target.up, 1e-5f);
    EXPECT_FLOAT_EQ(c.fov(), 50.f);
    // The target lies on the viewing ray, nearest the scene's centre.
    const Vec3 to_centre = Vec3{0.5f, 0.5f, 0.5f} - c.target();
    EXPECT_NEAR(dot(to_centre, p.forward), 0.f, 1e-4f);
}

} // namespace fusedngp
