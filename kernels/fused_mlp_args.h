// Launch arguments and loss definitions shared by the fused-MLP kernels and
// their host wrapper; the shape and its offsets (vocabulary: D, W, fan-in,
// padding) are in gpu/mlp_shape.h. Plain structs only, usable from .cpp and
// .cu files.
#pragma once

#include "gpu/mlp_shape.h"

#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace fusedngp::gpu {

// Warps per thread block of the fused kernels.
constexpr int kBlockWarps = 8;
// A warp computes up to 64 hidden columns at a time (64 fp32 accumulators per
// lane with 32-row slabs), so a hidden layer splits into this many chunks.
constexpr uint32_t hidden_column_chunks(uint32_t width) { return width > 64 ? width / 64 : 1; }

// How the output-layer gradient is obtained.
enum class LossKind : uint32_t {
    FromGradient,  // read dL/dout from the caller (backward)
    L2,            // fused train step: dL/dy = 2 (y - target) * loss_norm
    L1,            // fused train step: dL/dy = sign(y - target) * loss_norm
    // fused train step: dL/dy = 2 (y - target) / (y^2 + 0.01) * loss_norm, the
    // denominator a stop-gradient (src/losses/relative_losses.h, tiny-cuda-nn).
    RelativeL2,
};

// The fused losses' epsilon (kRelativeLossEpsilon of the CPU, rounded once).
constexpr float kFusedRelativeEpsilon = (float)0.01;

// dL/dy at prediction y: for a fused loss from the target t, times norm (1 /
// the elements averaged), RelativeL2's denominator held constant; for
// FromGradient t is dL/dy itself. The warp and the tile training kernels
// both call this. EXTRAS false leaves RelativeL2 out: kernels without the
// fused loss's extras never run it (needs_fused_loss_extras).
template <bool EXTRAS = true>
FUSEDNGP_HD float fused_loss_gradient(LossKind k, float y, float t, float norm) {
    switch (k) {
    case LossKind::FromGradient: return t;
    case LossKind::L2: return 2.f * (y - t) * norm;
    case LossKind::L1: {
        const float d = y - t;
        return (d > 0.f ? 1.f : (d < 0.f ? -1.f : 0.f)) * norm;
    }
    case LossKind::RelativeL2: {
        if constexpr (!EXTRAS) return 0.f;
        const float d = y - t;
#if defined(__CUDA_ARCH__)
        return __fdividef(2.f * d, y * y + kFusedRelativeEpsilon) * norm;  // see fused_loss_value
#else
        return 2.f * d / (y * y + kFusedRelativeEpsilon) * norm;
#endif
    }
    default: return 0.f;
    }
}

// Per-element value of a fused loss, unnormalised: the GPU loss kernels'
// expressions (kernels/components/loss_kernels.cu, element_loss), not shared
// with them because the contracts differ: those divide exactly (bit equality
// with the CPU), these use the fast division on the device.
FUSEDNGP_HD float fused_loss_value(LossKind k, float y, float t) {
    const float r = y - t;
    switch (k) {
    case LossKind::L2: return r * r;
    case LossKind::L1: return r < 0.f ? -r : r;
#if defined(__CUDA_ARCH__)
    // The fast division (2 ulp): IEEE '/' is a call to a slow path whose
    // registers pushed the W16 training kernel from 80 to 96 registers.
    case LossKind::RelativeL2: return __fdividef(r * r, y * y + kFusedRelativeEpsilon);
#else
    case LossKind::RelativeL2: return r * r / (y * y + kFusedRelativeEpsilon);
#endif
    default: return 0.f;
    }
}

// Shared-memory row strides (in halves). +8 halves (16 bytes) per row makes
// every ldmatrix / fragment store bank-conflict free: a row stride of 16k+8
// halves puts the 8 rows of an 8x8 tile on 8 distinct 16-byte bank groups.
FUSEDNGP_HD uint32_t ld_input(const MlpShape& s) { return s.n_in_pad + 8; }
FUSEDNGP_HD uint32_t ld_hidden(const MlpShape& s) { return s.width + 8; }
FUSEDNGP_HD uint32_t ld_output(const MlpShape& s) { return s.n_out_pad + 8; }

// Training keeps every hidden pre-activation of the tile (backward needs them);
// inference ping-pongs between two buffers.
FUSEDNGP_HD uint32_t n_hidden_slots(const MlpShape& s, bool training) {
    return training ? s.n_hidden : (s.n_hidden < 2 ? s.n_hidden : 2);
}
FUSEDNGP_HD size_t smem_halves_per_row(const MlpShape& s, bool training) {
    return ld_input(s) + (size_t)n_hidden_slots(s, training) * ld_hidden(s) + (training ? ld_output(s) : 0);
}
FUSEDNGP_HD size_t smem_bytes(const MlpShape& s, uint32_t rows, bool training) {
    return smem_halves_per_row(s, training) * rows * 2;
}

struct KernelArgs {
    MlpShape shape;
    const uint2* w_fwd = nullptr;  // B fragments of W_l^T (forward), all layers
    const uint2* w_bwd = nullptr;  // B fragments of W_l (backward), all layers
    const float* in = nullptr;     // [batch][n_in]
    float* out = nullptr;          // [batch][n_out], may be null in training
    // fp16 I/O (inference): when set, the kernels read in_half instead of in
    // and write out_half instead of out (FusedMlp::inference_half). The input
    // is then used as it is (it is the fp16 A operand); the output is the
    // fp32 accumulator through the output activation, rounded once.
    const __half* in_half = nullptr;  // [batch][n_in]
    __half* out_half = nullptr;       // [batch][n_out]
    const float* dout = nullptr;   // [batch][n_out] dL/dout (LossKind::FromGradient)
    const float* target = nullptr; // [batch][n_out] (L1/L2)
    float* din = nullptr;          // [batch][n_in] dL/din, may be null
    float* partial = nullptr;      // [gridDim.x][partial_stride] per-block dL/dW (padded layout)
    size_t partial_stride = 0;
    uint32_t batch = 0;
    uint32_t rows_per_tile = 0;
    uint32_t n_tiles = 0;
    float loss_scale = 1.f;      // dL/dout is multiplied by this before fp16 rounding
    float inv_loss_scale = 1.f;
    float loss_norm = 1.f;       // L1/L2: 1 / (batch * n_out)
    LossKind loss = LossKind::FromGradient;
    bool l2_prefetch = false;      // prefetch the next tile's input (and this tile's dL/dout) into L2
    // Fused losses (not FromGradient), optional: the block's sum of the
    // per-element loss values (unnormalised) to loss_partial[blockIdx.x], in
    // a fixed order (lanes, then warps in order; no float atomics), so
    // launch_finish_fused_loss's mean is bit-identical run to run.
    double* loss_partial = nullptr;
    // Optional: set to 1 (one atomicOr per warp at most) when any stored
    // dL/dinput value is inf or NaN (fp16 overflow under the loss scale).
    unsigned int* nonfinite_flag = nullptr;
};

// Whether a training call needs the kernels with the fused loss's extras
// compiled in (RelativeL2, loss sums, the dL/dinput non-finite flag). The
// training kernels (warp: ReLU flavour; tile) also exist without them: the
// extras' code in the output layer cost the W16 warp step ~4 % even when
// unused (registers and a branch per element).
FUSEDNGP_HD bool fused_loss_extras(LossKind loss, bool loss_sums, bool nonfinite_flag) {
    return loss_sums || nonfinite_flag || loss == LossKind::RelativeL2;
}
FUSEDNGP_HD bool needs_fused_loss_extras(const KernelArgs& a) {
    return fused_loss_extras(a.loss, a.loss_partial != nullptr, a.nonfinite_flag != nullptr);
}

} // namespace fusedngp::gpu
