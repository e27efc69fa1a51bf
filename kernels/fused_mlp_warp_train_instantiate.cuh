// Launchers of the warp training kernel for one width; included by
// fused_mlp_warp_train_w<W>.cu only.
#pragma once

#include "fused_mlp_warp_launch.h"
#include "fused_mlp_warp_train_device.cuh"

namespace fusedngp::gpu {

namespace detail {
template <int W>
const void* warp_train_kernel(const WarpKernelVariant& v) {
    switch (v.kt_in) {
    case 1: return (const void*)fused_mlp_warp_train_kernel<W, 1>;
    case 2: return (const void*)fused_mlp_warp_train_kernel<W, 2>;
    default: return (const void*)fused_mlp_warp_train_kernel<W, 4>;
    }
}
} // namespace detail

template <int W>
cudaError_t prepare_warp_train(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                               size_t smem_bytes, KernelInfo* info) {
    const void* kernel = detail::warp_train_kernel<W>(v);
    return prepare_kernel(kernel, kWarpKernelThreads, max_dynamic_smem, carveout_percent, smem_bytes, info);
}

template <int W>
cudaError_t launch_warp_train(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid, size_t smem_bytes,
                              cudaStream_t stream) {
    const void* kernel = detail::warp_train_kernel<W>(v);
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(kernel, dim3(grid), dim3(kWarpKernelThreads), params, smem_bytes, stream);
}

} // namespace fusedngp::gpu

#define FUSEDNGP_INSTANTIATE_WARP_TRAIN_WIDTH(W)                                                                   \
    namespace fusedngp::gpu {                                                                                      \
    template cudaError_t prepare_warp_train<W>(const WarpKernelVariant&, size_t, int, size_t, KernelInfo*);         \
    template cudaError_t launch_warp_train<W>(const KernelArgs&, const WarpKernelVariant&, uint32_t, size_t,       \
                                              cudaStream_t);                                                       \
    }
