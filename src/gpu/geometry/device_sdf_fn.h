// A signed distance field evaluated in batches on the device: d_points
// [n][3] (unit cube, row-major) -> d_values [n], enqueued on `stream`. The
// CUDA backend's model (CudaBackend::inference_device) and the ground-truth
// BVH kernels both fit it, so the GPU renderer, marching cubes and metrics
// take either. The GPU twin of geometry/sdf_field.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

namespace fusedngp::gpu {

using DeviceSdfFn = std::function<void(const float* d_points, uint32_t n, float* d_values, cudaStream_t stream)>;

} // namespace fusedngp::gpu
