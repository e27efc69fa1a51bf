// Launchers for one width; included by fused_mlp_w<W>.cu only.
#pragma once

#include "fused_mlp_device.cuh"
#include "fused_mlp_launch.h"

namespace fusedngp::gpu {

namespace detail {
template <int W>
const void* train_kernel(int mt, bool extras) {
    if (extras)
        return mt == 1 ? (const void*)fused_mlp_train_kernel<W, 1, true> : (const void*)fused_mlp_train_kernel<W, 2, true>;
    return mt == 1 ? (const void*)fused_mlp_train_kernel<W, 1, false> : (const void*)fused_mlp_train_kernel<W, 2, false>;
}
} // namespace detail

// Training: prepares the kernels with and without the fused loss's extras
// (same launch bounds and shared memory) and reports the one without.
template <int W>
cudaError_t prepare_fused_kernel(bool training, int mt, size_t max_dynamic_smem, int carveout_percent,
                                 size_t smem_bytes, KernelInfo* info) {
    if (!training) {
        const void* kernel = mt == 1 ? (const void*)detail::fused_mlp_inference_kernel<W, 1>
                                     : (const void*)detail::fused_mlp_inference_kernel<W, 2>;
        return prepare_kernel(kernel, detail::kThreads, max_dynamic_smem, carveout_percent, smem_bytes, info);
    }
    KernelInfo unused{};
    const cudaError_t err = prepare_kernel(detail::train_kernel<W>(mt, true), detail::kThreads, max_dynamic_smem,
                                           carveout_percent, smem_bytes, &unused);
    if (err != cudaSuccess) return err;
    return prepare_kernel(detail::train_kernel<W>(mt, false), detail::kThreads, max_dynamic_smem, carveout_percent,
                          smem_bytes, info);
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
    const void* kernel = detail::train_kernel<W>(mt, needs_fused_loss_extras(args));
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(kernel, dim3(grid), dim3(detail::kThreads), params, smem_bytes, stream);
}

} // namespace fusedngp::gpu

#define FUSEDNGP_INSTANTIATE_WIDTH(W)                                                                  \
    namespace fusedngp::gpu {                                                                          \
    template cudaError_t prepare_fused_kernel<W>(bool, int, size_t, int, size_t, KernelInfo*);                  \
    template cudaError_t launch_fused_inference<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t); \
    template cudaError_t launch_fused_train<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t);     \
    }
