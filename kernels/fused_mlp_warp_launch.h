// Host-callable launchers of the register-resident warp inference kernel
// (fused_mlp_warp_device.cuh), for W = 16, 32, 64. Instantiated once per
// width in fused_mlp_warp_w<W>.cu.
#pragma once

#include "fused_mlp_args.h"
#include "fused_mlp_launch.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// Threads per block of the warp kernel. Warps share nothing but (optionally)
// the staged weights, so small blocks only cost the staging copy, and they
// keep the register-limited occupancy granularity fine (4 warps).
constexpr int kWarpKernelThreads = 128;
// Input k16 tiles the kernel keeps in registers (n_in <= 64). Wider inputs
// use the block-tile kernel (FusedMlp::plan_warp_inference).
constexpr uint32_t kMaxWarpInputTiles = 4;

// Variant of the warp kernel: rows per warp slab 16 * mt (mt = 1 or 2),
// input k16 tiles kt_in (1, 2 or 4; n_in_pad / 16 rounded up to one of
// these), weights staged in shared memory or read through L1.
struct WarpKernelVariant {
    int mt = 1;
    int kt_in = 2;
    bool weights_in_smem = false;
};

// prepare_kernel (fused_mlp_launch.h) for the warp inference kernel variant
// (blocks of kWarpKernelThreads).
template <int W>
cudaError_t prepare_warp_inference(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                                   size_t smem_bytes, KernelInfo* info);
template <int W>
cudaError_t launch_warp_inference(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid,
                                  size_t smem_bytes, cudaStream_t stream);

// Warp training kernel (fused_mlp_warp_train_device.cuh), W = 16 and 32;
// uses v.kt_in only (16-row slabs, weights always in shared memory).
// Dynamic shared memory it needs: both fp16 fragment buffers (w_fwd, w_bwd),
// an fp32 weight-gradient sum per warp and, per warp, 16-byte-per-lane
// activation slots for the input tiles (kt_in of the variant) and every
// hidden layer's fp16 pre-activations (W / 16 k-tiles each).
FUSEDNGP_HD size_t warp_train_act_slots(const MlpShape& s, uint32_t kt_in_variant) {
    return kt_in_variant + (size_t)s.n_hidden * (s.width / 16u);
}
FUSEDNGP_HD size_t warp_train_smem_bytes(const MlpShape& s, uint32_t kt_in_variant) {
    const size_t P = n_params_padded(s);
    const size_t warps = kWarpKernelThreads / 32;
    return P * 2 * 2 + warps * P * 4 + warps * warp_train_act_slots(s, kt_in_variant) * 32 * 16;
}
template <int W>
cudaError_t prepare_warp_train(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                               size_t smem_bytes, KernelInfo* info);
template <int W>
cudaError_t launch_warp_train(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid, size_t smem_bytes,
                              cudaStream_t stream);

#define FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(W)                                                                       \
    extern template cudaError_t prepare_warp_train<W>(const WarpKernelVariant&, size_t, int, size_t, KernelInfo*);  \
    extern template cudaError_t launch_warp_train<W>(const KernelArgs&, const WarpKernelVariant&, uint32_t, size_t, \
                                                     cudaStream_t);
FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(16)
FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(32)
#undef FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH

#define FUSEDNGP_DECLARE_WARP_WIDTH(W)                                                                             \
    extern template cudaError_t prepare_warp_inference<W>(const WarpKernelVariant&, size_t, int, size_t,          \
                                                          KernelInfo*);                                         \
    extern template cudaError_t launch_warp_inference<W>(const KernelArgs&, const WarpKernelVariant&, uint32_t,  \
                                                         size_t, cudaStream_t);
FUSEDNGP_DECLARE_WARP_WIDTH(16)
FUSEDNGP_DECLARE_WARP_WIDTH(32)
FUSEDNGP_DECLARE_WARP_WIDTH(64)
#undef FUSEDNGP_DECLARE_WARP_WIDTH

} // namespace fusedngp::gpu
