// Environment switches: the developer knobs (docs/CUDA_BACKEND.md) are
// compared with one exact value. FUSEDNGP_UNFUSED_STEP=1 and the like are on
// only when set to exactly "1"; the default-on FUSEDNGP_WGMMA_TRAIN is off
// only when set to exactly "0".
#pragma once

#include <cstdlib>
#include <cstring>

namespace fusedngp {

inline bool env_equals(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
}

inline bool env_flag_set(const char* name) { return env_equals(name, "1"); }

} // namespace fusedngp
