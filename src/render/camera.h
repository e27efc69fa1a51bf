// Camera: the one camera model of the 3-D modes (SDF now, NeRF next), used
// by `fusedngp render`, the desktop app and the GPU renderers alike.
//
// Coordinates are the model's unit cube ([0,1]^3, y up). A pose is a
// position and an orthonormal frame (right, up, forward); intrinsics are a
// pinhole in pixels (fx, fy, cx, cy), so NeRF's per-frame intrinsics fit the
// same struct. Pixel (i, j) of a W x H image has its centre at
// (i + 0.5, j + 0.5), row 0 at the top.
#pragma once

#include "geometry/vec3.h"


namespace fusedngp {

struct CameraPose {
    Vec3 position{0.5f, 0.5f, 2.5f};
    Vec3 right{1, 0, 0};
    Vec3 up{0, 1, 0};
    Vec3 forward{0, 0, -1};  // viewing direction
};

struct CameraIntrinsics {
    uint32_t width = 640, height = 480;
    float fx = 500, fy = 500;  // focal lengths in pixels
    float cx = 320, cy = 240;  // principal point in pixels
};

struct Camera {
    CameraPose pose;
    CameraIntrinsics intrinsics;
};

struct Ray {
    Vec3 origin;
    Vec3 direction;  // unit length
};

// The ray through pixel coordinates (px, py) (pixel centres at +0.5).
FUSEDNGP_HD Ray camera_ray(const Camera& c, float px, float py) {
    float dx = (px - c.intrinsics.cx) / c.intrinsics.fx;
    float dy = (py - c.intrinsics.cy) / c.intrinsics.fy;
    Vec3 d = c.pose.forward + c.pose.right * dx - c.pose.up * dy;
    return Ray{c.pose.position, normalize(d)};
}

// Host-only helpers (render/camera.cpp). Parsing and files: render/camera_io.h.

// The vertical field of view when a camera spec or file gives none.
constexpr float kDefaultFovYDegrees = 40.f;

// Intrinsics for a vertical field of view in degrees, principal point at the
// centre, square pixels (fx == fy).
CameraIntrinsics intrinsics_from_fov(uint32_t width, uint32_t height, float fov_y_degrees);
// k stretched to a w x h image (focal lengths and principal point scaled per
// axis): the same view at another resolution.
CameraIntrinsics scaled_intrinsics(const CameraIntrinsics& k, uint32_t w, uint32_t h);
// The vertical field of view of k (from fy and the image height).
float fov_y_degrees(const CameraIntrinsics& k);

// A pose looking from `position` at `target` with `world_up` as the up hint.
// The frame is orthonormal and right-handed (right = forward x up). When
// forward is (nearly) parallel to the hint, the world axis least aligned with
// forward is the hint instead, so looking straight down still works. A target
// equal to the position looks along -z.
CameraPose look_at(Vec3 position, Vec3 target, Vec3 world_up = {0, 1, 0});

// The view `train` renders and `render` defaults to (SDF mode): orbit yaw
// 30, pitch 20, distance 1.6 around the cube's centre, 45 degree vertical
// field of view: a mesh normalised to the cube fills most of the frame.
Camera default_view_camera(uint32_t width, uint32_t height);

// Orbit around `target`: yaw (degrees, about +y, 0 = looking along -z from
// +z), pitch (degrees, positive = above), distance. Yaw 0, pitch 0 sits at
// target + (0, 0, distance). The frame is built from the angles (right stays
// horizontal), so it is continuous through pitch = +-90.
CameraPose orbit_pose(float yaw_degrees, float pitch_degrees, float distance, Vec3 target = {0.5f, 0.5f, 0.5f});

} // namespace fusedngp
