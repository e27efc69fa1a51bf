// Camera paths for `fusedngp render --camera-path`: keyframes (a time and a
// camera) interpolated into the frames of a fly-through.
//
// File format (one JSON object; unknown fields are errors):
//   {"width": 400, "height": 300,                 (optional; default: the model's view size)
//    "keyframes": [
//      {"time": 0.0, "camera": {...a camera object, render/camera_io.h...}},
//      {"time": 2.5, "camera": "views/cam1.json"},   (a camera file, relative to the path file)
//      ...]}
// Times are seconds, finite and strictly increasing; at least one keyframe.
// Between keyframes a and b (u = (t - t_a) / (t_b - t_a)): the position is
// lerped, the orientation slerped (unit quaternions of the frames, shortest
// arc), the vertical field of view lerped (degrees, from each keyframe's fy
// and height); frames get square pixels and a centred principal point at the
// path's width x height.
// Frames: at t_0 + i / fps for i = 0 .. floor((t_last - t_0) * fps), so the
// last keyframe is a frame when the duration is a whole number of frames.
#pragma once

#include "render/camera.h"

#include <string>
#include <vector>

namespace fusedngp {

struct CameraKeyframe {
    double time = 0;
    Camera camera;
};

struct CameraPath {
    uint32_t width = 0, height = 0;
    std::vector<CameraKeyframe> keyframes;
};

// Throws InputError naming the file and the field ("path.json: keyframes[2].time: ...").
CameraPath load_camera_path(const std::string& path, uint32_t default_width, uint32_t default_height);

// The interpolated camera at `time` (clamped to the keyframes' span).
Camera camera_at(const CameraPath& path, double time);

// Every frame's camera at `fps` frames per second (fps > 0).
std::vector<Camera> camera_path_frames(const CameraPath& path, double fps);

} // namespace fusedngp
