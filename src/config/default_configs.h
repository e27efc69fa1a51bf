// The shipped configs/<mode>.json, embedded at build time.
#pragma once

#include <string>

namespace fusedngp {

// Text of configs/<mode>.json for mode "image", "sdf" or "nerf"; nullptr otherwise.
const char* default_config_text(const std::string& mode);

} // namespace fusedngp
