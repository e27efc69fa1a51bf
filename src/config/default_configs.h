// The shipped configs/*.json, embedded at build time (cmake/EmbedText.cmake).
#pragma once

#include <string>

namespace fusedngp {

// Text of an embedded file by name ("image.json"); nullptr when unknown. Generated.
const char* embedded_config_file(const std::string& name);

// Text of configs/<mode>.json for mode "image", "sdf" or "nerf"; nullptr otherwise.
inline const char* default_config_text(const std::string& mode) { return embedded_config_file(mode + ".json"); }

} // namespace fusedngp
