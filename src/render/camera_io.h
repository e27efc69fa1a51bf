// Camera specs on the command line and camera files (host only).
#pragma once

#include "core/json_fields.h"
#include "render/camera.h"

#include <string>

namespace fusedngp {

// "orbit:YAW,PITCH,DISTANCE" (degrees, degrees, unit-cube units; see
// orbit_pose) around the cube's centre -> pose. Spaces around the numbers are
// allowed; the distance must be > 0. Throws InputError naming the text.
CameraPose parse_camera_spec(const std::string& spec);

// Camera files (cam.json), one JSON object. The pose is one of
//   {"position": [x,y,z], "look_at": [x,y,z], "up": [x,y,z]}   ("up" optional, default [0,1,0])
//   {"orbit": [yaw, pitch, distance], "look_at": [x,y,z]}        ("look_at" optional, default the cube centre)
//   {"position": [x,y,z], "forward": [x,y,z], "right": [x,y,z], "up": [x,y,z]}
//      (an explicit orthonormal frame, e.g. from a NeRF camera-to-world matrix;
//       checked orthonormal to 1e-3; this is what camera_to_json writes)
// and the intrinsics either "fov_y_degrees": f (in (0, 180), default
// kDefaultFovYDegrees, centred principal point) or all of "fx", "fy", "cx",
// "cy" (pixels). Optional "width", "height" (positive integers) override the
// defaults. Unknown fields are errors (a typo would otherwise be ignored).
// Throws InputError naming the file and field.
Camera load_camera_file(const std::string& path, uint32_t default_width, uint32_t default_height);

// The same for an already parsed object (`path` names where it came from in
// errors, e.g. "path.json: keyframes[2].camera").
Camera camera_from_json(const json& obj, const std::string& path, uint32_t default_width, uint32_t default_height);

// The explicit-frame form with fx, fy, cx, cy, width and height: every float
// is written with enough digits that load_camera_file gives back c exactly.
json camera_to_json(const Camera& c);

// Writes camera_to_json(c) to `path` atomically. InputError on failure.
void save_camera_file(const Camera& c, const std::string& path);

} // namespace fusedngp
