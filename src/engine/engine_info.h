// What this build and machine offer for `fusedngp info`: the compute device
// and the GPU kernels (empty device line in a CPU-only build).
#pragma once

#include <string>
#include <vector>

namespace fusedngp {

struct EngineInfo {
    std::string device;                // "NVIDIA H200 (sm_90, ...)" or why there is none
    std::vector<std::string> kernels;  // one line per kernel family
};

EngineInfo engine_info();

} // namespace fusedngp
