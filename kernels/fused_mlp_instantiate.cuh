// Launchers for one width; included by fused_mlp_w<W>.cu only.
#pragma once

#include "fused_mlp_device.cuh"
#include "fused_mlp_launch.h"

namespace fusedngp::gpu {

namespace detail {
template <int W>
const void* fused_kernel(bool training, int mt) {
    if (training) return mt == 1 ? (const void*)fused_mlp_train_kernel<W, 1> : (const void*)fused_mlp_train_kernel<W, 2>;
    return mt == 1 ? (const void*)fused_mlp_inference_kernel<W, 1> : (const void*)fused_mlp_inference_kernel<W, 2>;
}
} // namespace detail

template <int W>
cudaError_t prepare_fused_kernel(bool training, int mt, size_t max_dynamic_smem, int carveout_percent,
                                 size_t smem_bytes, KernelInfo* info) {
    const void* kernel = detail::fused_kernel<W>(training, mt);
    return prepare_kernel(kernel, detail::kThreads, max_dynamic_smem, carveout_percent, smem_bytes, info);
}

template <int W>
cudaError_t launch_fused_inference(const KernelArgs& args, int mt, uint32_t grid, size_t smem_bytes, cudaStream_t stream) {
    if (mt == 1)
        detail::fused_mlp_inference_kernel<W, 1><<<grid, detail::kThreads, smem_bytes, stream>>>(args);
    else
        detail::fused_mlp_inference_kernel<W, 2><<<grid, detail::kThreads, smem_bytes, stream>>>(args);
    return cudaGetLastError();
}

template <int W>
cudaError_t launch_fused_train(const KernelArgs& args, int mt, uint32_t grid, size_t smem_bytes, cudaStream_t stream) {
    if (mt == 1)
        detail::fused_mlp_train_kernel<W, 1><<<grid, detail::kThreads, smem_bytes, stream>>>(args);
    else
        detail::fused_mlp_train_kernel<W, 2><<<grid, detail::kThreads, smem_bytes, stream>>>(args);
    return cudaGetLastError();
}

} // namespace fusedngp::gpu

#define FUSEDNGP_INSTANTIATE_WIDTH(W)                                                                  \
    namespace fusedngp::gpu {                                                                          \
    template cudaError_t prepare_fused_kernel<W>(bool, int, size_t, int, size_t, KernelInfo*);                  \
    template cudaError_t launch_fused_inference<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t); \
    template cudaError_t launch_fused_train<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t);     \
    }
