// Camera specs on the command line and camera files (host only).
#pragma once

#include "core/json_fields.h"
#include "render/camera.h"

#include <string>

namespace fusedngp {

// "orbit:YAW,PITCH,DISTANCE" -> pose. Throws InputError naming the text.
CameraPose parse_camera_spec(const std::string& spec);

// Camera files (cam.json): {"position": [x,y,z], "look_at": [x,y,z],
// "up": [x,y,z], "fov_y_degrees": f} or {"orbit": [yaw, pitch, distance]};
// optional "width", "height". Throws InputError naming the file and field.
Camera load_camera_file(const std::string& path, uint32_t default_width, uint32_t default_height);
json camera_to_json(const Camera& c);

} // namespace fusedngp
