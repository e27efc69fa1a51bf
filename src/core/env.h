// Environment switches: the developer knobs (FUSEDNGP_UNFUSED_STEP=1 and the
// like, docs/CUDA_BACKEND.md) are on only when set to exactly "1".
#pragma once

#include <cstdlib>
#include <cstring>

namespace fusedngp {

inline bool env_flag_set(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, "1") == 0;
}

} // namespace fusedngp
