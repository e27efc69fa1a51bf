#include "render/camera.h"

#include "core/math_constants.h"

#include <cmath>

namespace fusedngp {
namespace {

// The world axis least aligned with `forward`: a safe up hint when the
// requested one is parallel to the viewing direction.
Vec3 least_aligned_axis(Vec3 forward) {
    float ax = std::fabs(forward.x), ay = std::fabs(forward.y), az = std::fabs(forward.z);
    if (ay <= ax && ay <= az) return {0, 1, 0};
    if (az <= ax) return {0, 0, -1};
    return {1, 0, 0};
}

} // namespace

CameraIntrinsics intrinsics_from_fov(uint32_t width, uint32_t height, float fov_y) {
    CameraIntrinsics k;
    k.width = width;
    k.height = height;
    k.fy = 0.5f * (float)height / std::tan(0.5f * radians_from_degrees(fov_y));
    k.fx = k.fy;
    k.cx = 0.5f * (float)width;
    k.cy = 0.5f * (float)height;
    return k;
}

float fov_y_degrees(const CameraIntrinsics& k) {
    return degrees_from_radians(2.f * std::atan(0.5f * (float)k.height / k.fy));
}

CameraPose look_at(Vec3 position, Vec3 target, Vec3 world_up) {
    CameraPose pose;
    pose.position = position;
    Vec3 forward = normalize(target - position);
    if (length_squared(forward) == 0) forward = {0, 0, -1};
    // Nearly parallel (or a zero hint): the cross product loses its direction.
    Vec3 right = cross(forward, normalize(world_up));
    if (length(right) < 1e-4f) right = cross(forward, least_aligned_axis(forward));
    right = normalize(right);
    pose.forward = forward;
    pose.right = right;
    pose.up = cross(right, forward);
    return pose;
}

CameraPose orbit_pose(float yaw_degrees, float pitch_degrees, float distance, Vec3 target) {
    const float yaw = radians_from_degrees(yaw_degrees), pitch = radians_from_degrees(pitch_degrees);
    // R_y(yaw) applied to (0, 0, 1), lifted by the pitch.
    const Vec3 outward{std::cos(pitch) * std::sin(yaw), std::sin(pitch), std::cos(pitch) * std::cos(yaw)};
    CameraPose pose;
    pose.position = target + outward * distance;
    pose.forward = -outward;
    pose.right = Vec3{std::cos(yaw), 0, -std::sin(yaw)};  // R_y(yaw) applied to +x: always horizontal
    pose.up = cross(pose.right, pose.forward);
    return pose;
}

Camera default_view_camera(uint32_t width, uint32_t height) {
    Camera c;
    c.pose = orbit_pose(30.f, 20.f, 1.6f);
    c.intrinsics = intrinsics_from_fov(width, height, 45.f);
    return c;
}

CameraIntrinsics scaled_intrinsics(const CameraIntrinsics& k, uint32_t w, uint32_t h) {
    const float sx = (float)w / (float)k.width, sy = (float)h / (float)k.height;
    CameraIntrinsics s = k;
    s.width = w;
    s.height = h;
    s.fx *= sx;
    s.cx *= sx;
    s.fy *= sy;
    s.cy *= sy;
    return s;
}

} // namespace fusedngp
