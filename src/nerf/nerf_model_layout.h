// The shapes that tie the NeRF mode's two models together, shared by the CPU
// trainer, the CUDA trainer and its kernels.
#pragma once

#include <cstdint>

namespace fusedngp::nerf {

constexpr uint32_t kDensityOutputs = 16;                // density network outputs (0: log-density)
constexpr uint32_t kColourInputs = 3 + kDensityOutputs;  // [(dir + 1) / 2, density outputs]

} // namespace fusedngp::nerf
