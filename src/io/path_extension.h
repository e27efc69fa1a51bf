// A file name's extension, lower-cased: how the writers pick a format
// ("scene.PLY" -> ".ply", "view" -> "").
#pragma once

#include <string>

namespace fusedngp {

std::string lower_extension(const std::string& path);

} // namespace fusedngp
