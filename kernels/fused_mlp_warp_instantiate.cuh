// Launchers of the warp inference kernel for one width; included by
// fused_mlp_warp_w<W>.cu only.
#pragma once

#include "fused_mlp_warp_device.cuh"
#include "fused_mlp_warp_launch.h"

namespace fusedngp::gpu {

namespace detail {
template <int W, int MT, bool SMEM_W, int FLAVOR>
const void* warp_kernel_kt(int kt_in) {
    switch (kt_in) {
    case 1: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 1, SMEM_W, FLAVOR>;
    case 2: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 2, SMEM_W, FLAVOR>;
    default: return (const void*)fused_mlp_warp_inference_kernel<W, MT, 4, SMEM_W, FLAVOR>;
    }
}
// The flavours of warp_flavor_compiled (nullptr for the others).
template <int W, int MT>
const void* warp_kernel_mt(const WarpKernelVariant& v) {
    if (!v.weights_in_smem) {
        if (v.flavor == 0) return warp_kernel_kt<W, MT, false, 0>(v.kt_in);
        return v.flavor == kWarpHalfIo ? warp_kernel_kt<W, MT, false, kWarpHalfIo>(v.kt_in) : nullptr;
    }
    switch (v.flavor) {
    case 0: return warp_kernel_kt<W, MT, true, 0>(v.kt_in);
    case 1: return warp_kernel_kt<W, MT, true, 1>(v.kt_in);
    case 2: return warp_kernel_kt<W, MT, true, 2>(v.kt_in);
    case 3: return warp_kernel_kt<W, MT, true, 3>(v.kt_in);
    case 6: return warp_kernel_kt<W, MT, true, 6>(v.kt_in);
    case 7: return warp_kernel_kt<W, MT, true, 7>(v.kt_in);
    case 8: return warp_kernel_kt<W, MT, true, 8>(v.kt_in);
    case 10: return warp_kernel_kt<W, MT, true, 10>(v.kt_in);
    case 11: return warp_kernel_kt<W, MT, true, 11>(v.kt_in);
    default: return nullptr;
    }
}
template <int W>
const void* warp_kernel(const WarpKernelVariant& v) {
    return v.mt == 1 ? warp_kernel_mt<W, 1>(v) : warp_kernel_mt<W, 2>(v);
}
} // namespace detail

template <int W>
cudaError_t prepare_warp_inference(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                                   size_t smem_bytes, KernelInfo* info) {
    const void* kernel = detail::warp_kernel<W>(v);
    if (kernel == nullptr) return cudaErrorInvalidValue;
    return prepare_kernel(kernel, kWarpKernelThreads, max_dynamic_smem, carveout_percent, smem_bytes, info);
}

template <int W>
cudaError_t launch_warp_inference(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid,
                                  size_t smem_bytes, cudaStream_t stream) {
    const void* kernel = detail::warp_kernel<W>(v);
    if (kernel == nullptr) return cudaErrorInvalidValue;
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
