// Launchers of the warp inference kernel for one width; included by
// fused_mlp_warp_w<W>.cu only.
#pragma once

#include "fused_mlp_warp_device.cuh"
#include "fused_mlp_warp_launch.h"

namespace fusedngp::gpu {

namespace detail {
template <int W, int MT, bool SMEM_W>
const void* warp_kernel_kt(int kt_in) {
    switch (kt_in) {
    case 1: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 1, SMEM_W>;
    case 2: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 2, SMEM_W>;
    default: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 4, SMEM_W>;
    }
}
template <int W>
const void* warp_kernel(const WarpKernelVariant& v) {
    if (v.mt == 1) return v.weights_in_smem ? warp_kernel_kt<W, 1, true>(v.kt_in) : warp_kernel_kt<W, 1, false>(v.kt_in);
    return v.weights_in_smem ? warp_kernel_kt<W, 2, true>(v.kt_in) : warp_kernel_kt<W, 2, false>(v.kt_in);
}
} // namespace detail

template <int W>
cudaError_t prepare_warp_inference(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                                   size_t smem_bytes, KernelInfo* info) {
    const void* kernel = detail::warp_kernel<W>(v);
    return prepare_kernel(kernel, kWarpKernelThreads, max_dynamic_smem, carveout_percent, smem_bytes, info);
}

template <int W>
cudaError_t launch_warp_inference(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid,
                                  size_t smem_bytes, cudaStream_t stream) {
    const void* kernel = detail::warp_kernel<W>(v);
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(kernel, dim3(grid), dim3(kWarpKernelThreads), params, smem_bytes, stream);
}

} // namespace fusedngp::gpu

#define FUSEDNGP_INSTANTIATE_WARP_WIDTH(W)                                                                          \
    namespace fusedngp::gpu {                                                                                      \
    template cudaError_t prepare_warp_inference<W>(const WarpKernelVariant&, size_t, int, size_t, KernelInfo*);     \
    template cudaError_t launch_warp_inference<W>(const KernelArgs&, const WarpKernelVariant&, uint32_t, size_t,   \
                                                  cudaStream_t);                                                   \
    }
