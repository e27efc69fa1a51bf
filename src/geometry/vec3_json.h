// A Vec3 as a JSON array [x, y, z], as our scene, camera and summary files
// write it.
#pragma once

#include "geometry/vec3.h"

#include <nlohmann/json.hpp>

namespace fusedngp {

inline nlohmann::json vec3_json(Vec3 v) { return nlohmann::json::array({v.x, v.y, v.z}); }

} // namespace fusedngp
