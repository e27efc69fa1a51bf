#include "component_device.cuh"
#include "launch_common.h"

namespace fusedngp::gpu {

namespace {

__global__ void float_to_half_kernel(const float* __restrict__ src, __half* __restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        dst[i] = __float2half_rn(src[i]);
    }
}

__global__ void fill_rows_kernel(DeviceRows rows, uint32_t cols, uint32_t batch, float value) {
    const size_t n = (size_t)batch * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const RowColumn rc = row_column(i, cols, n);
        rows.data[rc.row * rows.stride + rc.column] = value;
    }
}

} // namespace

void launch_float_to_half(const float* src, __half* dst, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    float_to_half_kernel<<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(src, dst, n);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_fill_rows(DeviceRows rows, uint32_t cols, uint32_t batch, float value, cudaStream_t stream) {
    if (cols == 0 || batch == 0) return;
    fill_rows_kernel<<<grid_stride_blocks((size_t)batch * cols), kThreadsPerBlock, 0, stream>>>(rows, cols, batch,
                                                                                                value);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
