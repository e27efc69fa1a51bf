// Device-side helpers shared by the component kernels.
#pragma once

#include "gpu/components/device_buffer.h"
#include "row_column.cuh"

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

constexpr uint32_t kThreadsPerBlock = 256;

// Blocks of kThreadsPerBlock threads covering n items (at least 1).
inline unsigned int blocks_for(size_t n) {
    const size_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
    return (unsigned int)(blocks ? blocks : 1);
}

// Blocks for a grid-stride loop over n items: enough to fill the GPU, few
// enough that each thread does some work. 65535 keeps within gridDim limits of
// every architecture.
inline unsigned int grid_stride_blocks(size_t n) {
    const size_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
    return (unsigned int)(blocks == 0 ? 1 : blocks > 65535 ? 65535 : blocks);
}

} // namespace fusedngp::gpu
