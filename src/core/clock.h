// Milliseconds of wall time since a steady_clock point: the timing helper the
// trainer, the app's sessions and its 3-D views share.
#pragma once

#include <chrono>

namespace fusedngp {

inline double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

} // namespace fusedngp
