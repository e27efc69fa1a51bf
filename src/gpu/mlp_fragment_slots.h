// Where one fp32 MLP weight lands in the fused MLP's fp16 fragment buffers
// (w_fwd = W^T, w_bwd = W, each in the m16n8k16 B-operand order that
// convert_weights_kernel writes; kernels/fused_mlp_common.cu): the inverse of
// that kernel's mapping, so an optimizer that has just computed a weight can
// write its two fp16 copies itself (GpuAdam's fused update) instead of a
// separate conversion pass over all weights after the update. Plain C++ and
// CUDA; no CUDA headers, so the CPU tests check it against the forward
// formula (tests/test_mlp_fragment_slots.cpp). Offsets: gpu/mlp_shape.h.
#pragma once

#include "gpu/mlp_shape.h"

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// Half indices (into the buffers viewed as __half arrays) of one weight.
struct MlpFragmentSlots {
    size_t fwd = 0, bwd = 0;
};

// Half index of B[k][n] in a K x N operand stored from half `base` on, with
// K tiles of 16 (kt_count of them) and N tiles of 8: entry (nt * KT + kt) *
// 32 + lane holds B[k0][n], B[k0+1][n], B[k0+8][n], B[k0+9][n], with
// n = nt*8 + lane/4 and k0 = kt*16 + 2*(lane%4).
FUSEDNGP_HD size_t fragment_half_index(size_t base, uint32_t kt_count, uint32_t k, uint32_t n) {
    const uint32_t kt = k / 16, kk = k % 16, nt = n / 8;
    const uint32_t lane = (n % 8) * 4 + (kk % 8) / 2;
    const uint32_t half = (kk >= 8 ? 2u : 0u) + (kk & 1u);
    return base + ((size_t)(nt * kt_count + kt) * 32 + lane) * 4 + half;
}

// Where an optimizer writes an updated MLP weight besides the parameter
// array: the MLP's own fp32 master copy (caller layout) and the two fp16
// fragment buffers (raw half bits). All null: nothing extra is written.
struct MlpFragmentTargets {
    float* master = nullptr;
    uint16_t* w_fwd = nullptr;
    uint16_t* w_bwd = nullptr;
    MlpShape shape;
};

// Slots of parameter `p` (caller layout: layer by layer, W[out][in] row-major).
FUSEDNGP_HD MlpFragmentSlots mlp_fragment_slots(const MlpShape& s, size_t p) {
    uint32_t l = 0;
    while (l < s.n_hidden && p >= param_offset(s, l + 1)) ++l;
    const size_t local = p - param_offset(s, l);
    const uint32_t out = (uint32_t)(local / fan_in(s, l)), in = (uint32_t)(local % fan_in(s, l));
    const size_t base = padded_offset(s, l);  // halves: entry offset * 4
    MlpFragmentSlots slots;
    slots.fwd = fragment_half_index(base, fan_in_pad(s, l) / 16, in, out);   // B = W^T: B[in][out]
    slots.bwd = fragment_half_index(base, fan_out_pad(s, l) / 16, out, in);  // B = W:   B[out][in]
    return slots;
}

} // namespace fusedngp::gpu
