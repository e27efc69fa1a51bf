// Launchers of the warp training kernel for one width; included by
// fused_mlp_warp_train_w<W>.cu and fused_mlp_warp_train_relu_w<W>.cu only.
#pragma once

#include "fused_mlp_warp_launch.h"
#include "fused_mlp_warp_train_device.cuh"

namespace fusedngp::gpu {

namespace detail {
template <int W, int MODE, bool RELU, bool EXTRAS, bool HALF>
const void* warp_train_kernel_of_mode(int kt_in) {
    const int k = kt_in <= 1 ? 0 : (kt_in == 2 ? 1 : 2);
    if constexpr (MODE == 0) {
        const void* kernels[3] = {(const void*)fused_mlp_warp_train_kernel<W, 1, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_kernel<W, 2, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_kernel<W, 4, RELU, EXTRAS, HALF>};
        return kernels[k];
    } else if constexpr (MODE == 1) {
        const void* kernels[3] = {(const void*)fused_mlp_warp_train_shared_kernel<W, 1, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_shared_kernel<W, 2, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_shared_kernel<W, 4, RELU, EXTRAS, HALF>};
        return kernels[k];
    } else {
        const void* kernels[3] = {(const void*)fused_mlp_warp_train_shared128_kernel<W, 1, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_shared128_kernel<W, 2, RELU, EXTRAS, HALF>,
                                  (const void*)fused_mlp_warp_train_shared128_kernel<W, 4, RELU, EXTRAS, HALF>};
        return kernels[k];
    }
}
template <int W, int MODE, bool RELU>
const void* warp_train_kernel_of_mode(int kt_in, bool extras, bool half) {
    // Flavour 0 has the extras always (one kernel set); the ReLU flavour both
    // ways, and without them also with fp16 input (warp_train_half_compiled).
    if constexpr (RELU) {
        if (!extras) {
            return half ? warp_train_kernel_of_mode<W, MODE, true, false, true>(kt_in)
                        : warp_train_kernel_of_mode<W, MODE, true, false, false>(kt_in);
        }
    }
    if (half) return nullptr;
    return warp_train_kernel_of_mode<W, MODE, RELU, true, false>(kt_in);
}
// The kernel of a variant of this flavour, with or without the fused loss's
// extras (needs_fused_loss_extras), for fp32 or fp16 input, or null when the
// library has none (warp_train_variant_compiled, warp_train_half_compiled).
template <int W, bool RELU>
const void* warp_train_kernel(const WarpTrainVariant& v, bool extras, bool half) {
    if (!warp_train_variant_compiled(W, v) || (v.flavor == kWarpRelu) != RELU) return nullptr;
    switch (v.dw_mode) {
    case WarpDwMode::PerWarp: return warp_train_kernel_of_mode<W, 0, RELU>(v.kt_in, extras, half);
    case WarpDwMode::Shared: return warp_train_kernel_of_mode<W, 1, RELU>(v.kt_in, extras, half);
    case WarpDwMode::Shared128:
        if constexpr (W == 64) return warp_train_kernel_of_mode<W, 2, RELU>(v.kt_in, extras, half);
        return nullptr;
    }
    return nullptr;
}
// Either flavour's kernel (the ReLU one lives in fused_mlp_warp_train_relu_w<W>.cu).
template <int W>
const void* warp_train_kernel_any(const WarpTrainVariant& v, bool extras, bool half = false) {
    return v.flavor == kWarpRelu ? warp_train_kernel<W, true>(v, extras, half)
                                 : warp_train_kernel<W, false>(v, extras, half);
}
} // namespace detail

// Prepares both kernels of the variant (with and without the extras; the
// same launch bounds and shared memory) and reports the one a call without
// extras runs: the plan's occupancy.
template <int W>
cudaError_t prepare_warp_train(const WarpTrainVariant& v, size_t max_dynamic_smem, int carveout_percent,
                               size_t smem_bytes, KernelInfo* info) {
    const void* with = detail::warp_train_kernel_any<W>(v, true);
    const void* usual = detail::warp_train_kernel_any<W>(v, v.always_extras);
    if (with == nullptr || usual == nullptr) return cudaErrorInvalidValue;
    KernelInfo unused{};
    if (with != usual) {
        const cudaError_t err = prepare_kernel(with, v.warps * 32, max_dynamic_smem, carveout_percent, smem_bytes,
                                               &unused);
        if (err != cudaSuccess) return err;
    }
    if (warp_train_half_compiled(v)) {
        const void* half = detail::warp_train_kernel_any<W>(v, false, true);
        const cudaError_t err = prepare_kernel(half, v.warps * 32, max_dynamic_smem, carveout_percent, smem_bytes,
                                               &unused);
        if (err != cudaSuccess) return err;
    }
    return prepare_kernel(usual, v.warps * 32, max_dynamic_smem, carveout_percent, smem_bytes, info);
}

template <int W>
cudaError_t launch_warp_train(const KernelArgs& args, const WarpTrainVariant& v, uint32_t grid, size_t smem_bytes,
                              cudaStream_t stream) {
    const void* kernel = detail::warp_train_kernel_any<W>(v, v.always_extras || needs_fused_loss_extras(args),
                                                          args.in_half != nullptr);
    if (kernel == nullptr) return cudaErrorInvalidValue;
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(kernel, dim3(grid), dim3((unsigned)v.warps * 32u), params, smem_bytes, stream);
}

} // namespace fusedngp::gpu

#define FUSEDNGP_INSTANTIATE_WARP_TRAIN_WIDTH(W)                                                                   \
    namespace fusedngp::gpu {                                                                                      \
    template cudaError_t prepare_warp_train<W>(const WarpTrainVariant&, size_t, int, size_t, KernelInfo*);          \
    template cudaError_t launch_warp_train<W>(const KernelArgs&, const WarpTrainVariant&, uint32_t, size_t,        \
                                              cudaStream_t);                                                       \
    template const void* detail::warp_train_kernel<W, false>(const WarpTrainVariant&, bool, bool);                 \
    }
// The ReLU flavour's kernels (kWarpRelu), in a file of their own.
#define FUSEDNGP_INSTANTIATE_WARP_TRAIN_RELU_WIDTH(W)                                                              \
    namespace fusedngp::gpu {                                                                                      \
    template const void* detail::warp_train_kernel<W, true>(const WarpTrainVariant&, bool, bool);                  \
    }
