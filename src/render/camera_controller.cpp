#include "render/camera_controller.h"

#include "core/math_constants.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

namespace {

// Zoom stops short of the target (the frame would degenerate) and before the
// scene shrinks to a dot.
constexpr float kMinDistanceDiameters = 1e-3f, kMaxDistanceDiameters = 100.f;

} // namespace

CameraController::CameraController(Box3 scene) : scene_(scene) {
    if (scene_.empty()) scene_ = Box3{{0, 0, 0}, {1, 1, 1}};
    reset();
}

float CameraController::scene_diameter() const { return std::max(length(scene_.extent()), 1e-6f); }

void CameraController::orbit(float dx_pixels, float dy_pixels) {
    yaw_ = std::fmod(yaw_ - dx_pixels * kOrbitDegreesPerPixel, 360.f);
    pitch_ = std::clamp(pitch_ + dy_pixels * kOrbitDegreesPerPixel, -kMaxPitch, kMaxPitch);
    changed();
}

void CameraController::pan(float dx_pixels, float dy_pixels, float view_height_pixels) {
    // World units per pixel at the target's depth: the image plane there is
    // 2 d tan(fov/2) tall.
    const float units = 2.f * distance_ * std::tan(radians_from_degrees(fov_) * 0.5f) / std::max(view_height_pixels, 1.f);
    const CameraPose p = pose();
    target_ = target_ - p.right * (dx_pixels * units) + p.up * (dy_pixels * units);
    changed();
}

void CameraController::zoom(float wheel_steps) {
    const float d = scene_diameter();
    distance_ = std::clamp(distance_ * std::pow(kZoomPerWheelStep, wheel_steps), kMinDistanceDiameters * d,
                           kMaxDistanceDiameters * d);
    changed();
}

void CameraController::fly(const FlyKeys& keys, float dt_seconds) {
    const CameraPose p = pose();
    Vec3 direction = p.forward * (float)((int)keys.forward - (int)keys.back) +
                     p.right * (float)((int)keys.right - (int)keys.left) + p.up * (float)((int)keys.up - (int)keys.down);
    if (length_squared(direction) == 0 || !(dt_seconds > 0)) return;
    // Normalised: a diagonal is no faster than a straight line.
    const float speed = kFlySpeed * scene_diameter() * (keys.fast ? kFastFlyFactor : 1.f);
    target_ += normalize(direction) * (speed * dt_seconds);
    changed();
}

void CameraController::set_fov(float fov_y_degrees) {
    fov_ = std::clamp(fov_y_degrees, kMinFov, kMaxFov);
    changed();
}

void CameraController::set_view(float yaw_degrees, float pitch_degrees, float distance, Vec3 target) {
    yaw_ = yaw_degrees;
    pitch_ = std::clamp(pitch_degrees, -kMaxPitch, kMaxPitch);
    const float d = scene_diameter();
    distance_ = std::clamp(distance, kMinDistanceDiameters * d, kMaxDistanceDiameters * d);
    target_ = target;
    changed();
}

void CameraController::look_from(const CameraPose& pose, float fov_y_degrees) {
    const Vec3 forward = normalize(pose.forward);
    const float distance = std::max(dot(scene_.center() - pose.position, forward), 1e-3f);
    const Vec3 outward = -forward;  // orbit_pose: position = target + outward * distance
    const float pitch = degrees_from_radians(std::asin(std::clamp(outward.y, -1.f, 1.f)));
    const float yaw = degrees_from_radians(std::atan2(outward.x, outward.z));
    fov_ = std::clamp(fov_y_degrees, kMinFov, kMaxFov);
    yaw_ = yaw;
    pitch_ = std::clamp(pitch, -kMaxPitch, kMaxPitch);
    distance_ = distance;
    target_ = pose.position + forward * distance;
    changed();
}

void CameraController::reset() {
    yaw_ = kDefaultYaw;
    pitch_ = kDefaultPitch;
    fov_ = kDefaultFov;
    fit(scene_);
}

void CameraController::fit(const Box3& box, float aspect) {
    const Box3 b = box.empty() ? scene_ : box;
    const float radius = std::max(0.5f * length(b.extent()), 1e-6f);
    const float half_v = radians_from_degrees(fov_) * 0.5f;
    const float half_h = std::atan(std::tan(half_v) * std::max(aspect, 1e-3f));
    target_ = b.center();
    distance_ = kFitMargin * radius / std::sin(std::min(half_v, half_h));
    changed();
}

CameraPose CameraController::pose() const {
    const float yaw = radians_from_degrees(yaw_), pitch = radians_from_degrees(pitch_);
    // Rotating +z by yaw about +y, then lifting it by pitch.
    const Vec3 offset{std::sin(yaw) * std::cos(pitch), std::sin(pitch), std::cos(yaw) * std::cos(pitch)};
    CameraPose p;
    p.position = target_ + offset * distance_;
    p.forward = -offset;
    p.right = normalize(cross(p.forward, Vec3{0, 1, 0}));  // |pitch| < 90: never parallel
    p.up = cross(p.right, p.forward);
    return p;
}

Camera CameraController::camera(uint32_t width, uint32_t height) const {
    Camera c;
    c.pose = pose();
    // The pinhole of intrinsics_from_fov (render/camera.h): fy from the vertical fov, square pixels.
    const float f = 0.5f * (float)height / std::tan(radians_from_degrees(fov_) * 0.5f);
    c.intrinsics = CameraIntrinsics{width, height, f, f, 0.5f * (float)width, 0.5f * (float)height};
    return c;
}

} // namespace fusedngp
