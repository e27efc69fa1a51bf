// Wall time since a steady_clock point: the timing helpers the trainer, the
// app's commands and sessions and its 3-D views share.
#pragma once

#include <chrono>

namespace fusedngp {

inline double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace fusedngp
