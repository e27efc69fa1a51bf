// Host entry points of small utility kernels shared by the GPU components.
// All launches are asynchronous on `stream` and allocate nothing.
#pragma once

#include "gpu/components/device_rows.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// dst[i] = (half)src[i], round to nearest even, i < n.
void launch_float_to_half(const float* src, __half* dst, size_t n, cudaStream_t stream);

// Every element of the first `cols` columns of `batch` rows = value.
void launch_fill_rows(DeviceRows rows, uint32_t cols, uint32_t batch, float value, cudaStream_t stream);

} // namespace fusedngp::gpu
