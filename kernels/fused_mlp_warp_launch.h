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

// Flavour bits of the warp inference kernel (WarpKernelVariant::flavor;
// docs/FUSED_MLP_DESIGN.md, "Warp inference flavours").
enum WarpFlavor : int {
    // Hidden ReLU and output None compiled in: no runtime activation switch
    // (the switch's call paths cost issue slots even when not taken).
    kWarpRelu = 1,
    // 16-byte input loads and output stores. A lane's fragment columns
    // (2t, 2t+1, 2t+8, 2t+9) become 4 consecutive columns (4t..4t+3) by
    // permuting layer 0's k and the output layer's n inside every 16-column
    // group while the weights are staged (so weights in smem only).
    kWarpVec4 = 2,
    // The input goes global -> shared memory by cp.async into a per-warp
    // ring of warp_stage_slabs(mt) slabs, issued that many slabs ahead:
    // more bytes in flight and no registers held for them. Needs kWarpVec4
    // and n_in == 16 * kt_in (slab rows contiguous in global memory).
    kWarpStage = 4,
    // fp16 input and output (KernelArgs::in_half / out_half,
    // FusedMlp::inference_half): the input halves are the layer-0 A
    // fragments as loaded, the output is rounded once from fp32. Half the
    // bytes per sample of fp32 I/O, which is what bounds W <= 32. Not with
    // kWarpStage.
    kWarpHalfIo = 8,
};
// Flavours compiled: 0 and kWarpHalfIo with either weight placement, the
// others with weights in shared memory only.
FUSEDNGP_HD bool warp_flavor_compiled(bool weights_in_smem, int flavor) {
    if (flavor == 0 || flavor == kWarpHalfIo) return true;
    return weights_in_smem &&
           (flavor == 1 || flavor == 2 || flavor == 3 || flavor == 6 || flavor == 7 || flavor == 10 || flavor == 11);
}
// Slabs in flight per warp in the kWarpStage ring: 8 KB per warp at
// 32 -> W (both slab heights).
FUSEDNGP_HD constexpr int warp_stage_slabs(int mt) { return mt == 2 ? 2 : 4; }
FUSEDNGP_HD size_t warp_stage_bytes_per_warp(int mt, int kt_in) {
    return (size_t)warp_stage_slabs(mt) * 16u * mt * 16u * kt_in * sizeof(float);
}

// Variant of the warp kernel: rows per warp slab 16 * mt (mt = 1 or 2),
// input k16 tiles kt_in (1, 2 or 4; n_in_pad / 16 rounded up to one of
// these), weights staged in shared memory or read through L1, flavour bits
// (WarpFlavor).
struct WarpKernelVariant {
    int mt = 1;
    int kt_in = 2;
    bool weights_in_smem = false;
    int flavor = 0;
};

// prepare_kernel (fused_mlp_launch.h) for the warp inference kernel variant
// (blocks of kWarpKernelThreads).
template <int W>
cudaError_t prepare_warp_inference(const WarpKernelVariant& v, size_t max_dynamic_smem, int carveout_percent,
                                   size_t smem_bytes, KernelInfo* info);
template <int W>
cudaError_t launch_warp_inference(const KernelArgs& args, const WarpKernelVariant& v, uint32_t grid,
                                  size_t smem_bytes, cudaStream_t stream);

// Warp training kernel (fused_mlp_warp_train_device.cuh), W = 16, 32 and 64;
// 16-row slabs, weights always in shared memory. Its variant: kt_in (as
// above), how the weight-gradient sums are kept (dw_mode) and the warps per
// block (warps; kWarpKernelThreads / 32 for the per-warp mode).
enum class WarpDwMode : int {
    // An fp32 sum per warp (4P bytes each), combined in warp order at the end.
    PerWarp = 0,
    // One fp32 sum per block, added to by the block's warps in a fixed order
    // (round by round, warp by warp, one 16-output stripe at a time; see the
    // kernel): 4P bytes per block instead of per warp.
    Shared = 1,
    // Shared, compiled for 2 blocks of up to 8 warps per SM (128 registers).
    Shared128 = 2,
};
// flavor: 0 (activations read from the shape at run time) or kWarpRelu
// (hidden ReLU, output None compiled in; the planner takes it only for such
// networks: FusedMlp::warp_train_flavor_for). One flag, not activation x
// activation, to keep the build short.
struct WarpTrainVariant {
    int kt_in = 2;
    WarpDwMode dw_mode = WarpDwMode::PerWarp;
    int warps = kWarpKernelThreads / 32;
    int flavor = 0;
    // The kernels with the fused loss's extras for every call, not only for
    // the calls that need them (FusedMlpTuning::warp_train_extras: A/B).
    bool always_extras = false;
};
// Most warps per block of the shared-sum kernels (their __launch_bounds__).
constexpr int kMaxWarpTrainWarps = 12;
constexpr int kMaxWarpTrain128Warps = 8;
// Whether the library has a warp training kernel for this width and variant
// (prepare_warp_train / launch_warp_train fail otherwise): the per-warp mode
// runs kWarpKernelThreads / 32 warps per block, the 128-register shared mode
// exists at W = 64 only (the narrower kernels fit 128 registers anyway).
// Flavours: 0 and kWarpRelu, for every mode and kt_in.
FUSEDNGP_HD bool warp_train_variant_compiled(uint32_t width, const WarpTrainVariant& v) {
    if (width != 16 && width != 32 && width != 64) return false;
    if (v.flavor != 0 && v.flavor != kWarpRelu) return false;
    if (v.kt_in != 1 && v.kt_in != 2 && v.kt_in != 4) return false;
    switch (v.dw_mode) {
    case WarpDwMode::PerWarp: return v.warps == kWarpKernelThreads / 32;
    case WarpDwMode::Shared: return v.warps >= 1 && v.warps <= kMaxWarpTrainWarps;
    case WarpDwMode::Shared128: return width == 64 && v.warps >= 1 && v.warps <= kMaxWarpTrain128Warps;
    }
    return false;
}

// Whether the variant has a kernel for fp16 input (KernelArgs::in_half): the
// ReLU flavour without the fused loss's extras (calls with extras, or other
// activations, take fp16 input through the block-tile kernel instead:
// FusedMlp::train_step_half). One more kernel set, not one per flavour and
// extras, to keep the build short.
FUSEDNGP_HD bool warp_train_half_compiled(const WarpTrainVariant& v) {
    return v.flavor == kWarpRelu && !v.always_extras;
}

// Dynamic shared memory of the warp training kernel: the turn mbarriers of
// the shared mode (8 bytes per 16-output stripe of every layer and warp,
// padded to 16 bytes), both fp16 fragment buffers (w_fwd, w_bwd), the fp32
// weight-gradient sums (one per warp or one per block), per warp
// 16-byte-per-lane activation slots for the input tiles (kt_in of the
// variant) and every hidden layer's fp16 pre-activations (W / 16 k-tiles
// each), and in the shared mode per warp the next slab's fp32 input (kt_in KB).
FUSEDNGP_HD size_t warp_train_act_slots(const MlpShape& s, uint32_t kt_in_variant) {
    return kt_in_variant + (size_t)s.n_hidden * (s.width / 16u);
}
// Stripes of the shared mode, each with one turn mbarrier per warp: hidden
// layer l's stripes mo at l * W / 16 + mo, the output layer's 16-column chunks
// after them.
FUSEDNGP_HD size_t warp_train_turns(const MlpShape& s) {
    return (size_t)s.n_hidden * (s.width / 16u) + s.n_out_pad / 16u;
}
FUSEDNGP_HD size_t warp_train_smem_bytes(const MlpShape& s, const WarpTrainVariant& v) {
    const size_t P = n_params_padded(s);
    const size_t warps = (size_t)v.warps;
    const bool shared = v.dw_mode != WarpDwMode::PerWarp;
    const size_t dw_copies = shared ? 1 : warps;
    const size_t turns = shared ? (warp_train_turns(s) * warps * 8 + 15) / 16 * 16 : 0;
    // Shared mode: the next slab's fp32 input (cp.async), 1 KB per input k-tile.
    const size_t stage = shared ? (size_t)v.kt_in * 1024 : 0;
    return P * 2 * 2 + dw_copies * P * 4 + turns + warps * (warp_train_act_slots(s, (uint32_t)v.kt_in) * 32 * 16 + stage);
}
// prepare_kernel for the variant (v.warps * 32 threads); a variant this width
// was not compiled for returns cudaErrorInvalidValue.
template <int W>
cudaError_t prepare_warp_train(const WarpTrainVariant& v, size_t max_dynamic_smem, int carveout_percent,
                               size_t smem_bytes, KernelInfo* info);
template <int W>
cudaError_t launch_warp_train(const KernelArgs& args, const WarpTrainVariant& v, uint32_t grid, size_t smem_bytes,
                              cudaStream_t stream);
namespace detail {
// The kernel of a variant of flavour RELU ? kWarpRelu : 0, with or without the
// extras, for fp32 or fp16 (half) input (null when not compiled:
// warp_train_variant_compiled, warp_train_half_compiled); each flavour in its own file
// (fused_mlp_warp_train[_relu]_w<W>.cu), so the two build in parallel.
template <int W, bool RELU>
const void* warp_train_kernel(const WarpTrainVariant& v, bool extras, bool half);
} // namespace detail

#define FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(W)                                                                       \
    extern template cudaError_t prepare_warp_train<W>(const WarpTrainVariant&, size_t, int, size_t, KernelInfo*);   \
    extern template cudaError_t launch_warp_train<W>(const KernelArgs&, const WarpTrainVariant&, uint32_t, size_t,  \
                                                     cudaStream_t);                                              \
    namespace detail {                                                                                             \
    extern template const void* warp_train_kernel<W, false>(const WarpTrainVariant&, bool, bool);                  \
    extern template const void* warp_train_kernel<W, true>(const WarpTrainVariant&, bool, bool);                   \
    }
FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(16)
FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(32)
FUSEDNGP_DECLARE_WARP_TRAIN_WIDTH(64)
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
