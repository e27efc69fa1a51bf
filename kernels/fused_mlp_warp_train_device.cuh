// Register-resident, barrier-free training kernel for the narrow widths
// (W = 16, 32, 64). See docs/FUSED_MLP_DESIGN.md, "Warp training kernel"
// and "Warp training kernel at W = 64".
//
// Same work split as the warp inference kernel (fused_mlp_warp_device.cuh):
// each warp takes 16-row slabs (slab = global warp index + k * total warps,
// a persistent grid) and runs forward, loss gradient, backward and the weight
// gradients of one slab without any block barrier. Per slab:
//   * input: the next slab's is loaded one slab ahead, into registers
//     (per-warp mode) or with cp.async into a per-warp staging area in shared
//     memory (shared mode, fewer registers).
//   * forward: the C->A fragment trick of the inference kernel. Each hidden
//     pre-activation z_l is rounded to fp16 (as the tile kernel stores it)
//     and parked in the warp's own shared-memory slot in fragment order (one
//     16-byte store per lane and k16 tile; a lane only ever reads back what it
//     wrote, so no __syncwarp is needed); h_l = act(z_l) from the fp16 z, as
//     the tile kernel computes it.
//     Shared mode with KernelArgs::l2_prefetch: the next slab's dL/dout or
//     target rows (their first 4 KB) are prefetched into L2 at the same time
//     (read at its output layer).
//   * output layer, per 16-column chunk: y = act_out(z) (stored if asked),
//     delta_out = fp16(dL/dy * act_out'(z) * loss_scale) (dL/dy from the
//     caller or the fused L1/L2/RelativeL2 loss, whose values each lane also
//     sums when KernelArgs::loss_partial is set), then at once
//     dW_D += delta_out^T h and g = delta_out W_D (B = the backward fragment
//     buffer w_bwd).
//   * hidden layers from the top: delta_l = fp16(g * act'(z_l)) (the C
//     fragments of g become A fragments), dW_l += delta_l^T h_{l-1},
//     g = delta_l W_l; at l = 0 dL/dinput = (delta_0 W_0) / loss_scale if asked
//     (a lane notes any inf/NaN it stores for KernelArgs::nonfinite_flag: one
//     vote and at most one atomicOr per warp at kernel end).
//   * weight gradients, K = the slab's 16 rows: the A operand is delta^T and
//     the B operand h (K x N "col"), both transposes of fragments the warp
//     already holds. movmatrix.trans transposes an 8x8 fp16 fragment in
//     registers (sm_75+), so the operands never go through shared memory.
//     The fp32 sums live in a warp-private shared-memory region in C-fragment
//     order (one float4 per lane and 16 x 8 tile: the mma accumulates straight
//     into the loaded values), summed over all of the warp's slabs.
// At kernel end (the second and last barrier) the block adds its warps' sums
// in warp order into its partial (the tile kernel's padded layout), which
// launch_reduce_weight_gradients sums over blocks: fixed order everywhere, so
// results are bit-identical run to run.
// Shared mode (WarpDwMode::Shared, Shared128): one fp32 sum per block instead
// of one per warp (4P bytes per warp do not fit at W = 64: P = 7168 at D = 2).
// Warps take their slabs in rounds (round k: slabs (k * gridDim.x + block) *
// warps + warp) and add to each 16-output stripe of the sum in the order
// round by round, warp by warp: a warp waits for its turn on the stripe (an
// mbarrier per stripe and warp, warp_turn_device.cuh), does its
// read-modify-write, and hands the stripe to the next warp by arriving on
// that warp's mbarrier. Every element is thus summed in the same order on
// every run, with no block barrier: warps only wait for the warp ahead of
// them, one stripe at a time, and those waits pipeline (warp w + 1 works on
// stripe s while warp w is on stripe s + 1). Warps past the batch leave
// without taking turns: the slabs of a round are consecutive, so no warp
// behind them has a slab either, and the ring never waits on them.
// Weights (forward and backward fragment buffers) are staged once per block in
// shared memory (the first barrier).
#pragma once

#include "activation_device.cuh"
#include "fused_mlp_args.h"
#include "fused_mlp_device.cuh"
#include "fused_mlp_warp_device.cuh"
#include "fused_mlp_warp_launch.h"
#include "warp_turn_device.cuh"

#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>

namespace fusedngp::gpu::detail {

// Transpose of an 8x8 fp16 matrix held as one mma fragment register per lane
// (lane g*4+t: row g, columns 2t, 2t+1), in registers.
__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {
    uint32_t r;
    asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
    return r;
}

// dW (fan_out x fan_in, fp32, C-fragment order in shared memory) += d^T h
// over the slab's 16 rows. d: KT_D k16 tiles (A fragments, rows x fan_out
// units), h: KT_H k16 tiles (rows x fan_in), of which kt_h are used.
// dw_lane points at tile 0 of the first 16 output units, this lane's float4;
// tile (mo, ni) is at + (mo * 2 * kt_h + ni) * 32.
//   A = d^T (16 units x 16 rows): a0..a3 = T(d0), T(d2), T(d1), T(d3).
//   B = h (16 rows x 8 inputs, n8 tile 2j + s): b0 = T(h_j[2s]), b1 = T(h_j[2s+1]).
// SHARED: the sum is the block's; stripe stripe0 + mo is added to in this
// warp's turn (see the file comment). The transposes happen before the wait,
// so a warp holds a stripe only for its loads, products and stores.
template <int KT_D, int KT_H, bool SHARED>
__device__ __forceinline__ void accumulate_dw(float4* dw_lane, const uint32_t (&d)[KT_D][4],
                                              const uint32_t (&h)[KT_H][4], uint32_t kt_h, const TurnRing& ring,
                                              uint32_t stripe0, uint32_t lane) {
    uint32_t ht[KT_H][4];
#pragma unroll
    for (int j = 0; j < KT_H; ++j) {
        if ((uint32_t)j >= kt_h) break;
#pragma unroll
        for (int i = 0; i < 4; ++i) ht[j][i] = transpose8x8(h[j][i]);
    }
    const uint32_t n8 = 2u * kt_h;
#pragma unroll
    for (int mo = 0; mo < KT_D; ++mo) {
        const uint32_t a[4] = {transpose8x8(d[mo][0]), transpose8x8(d[mo][2]), transpose8x8(d[mo][1]),
                               transpose8x8(d[mo][3])};
        if constexpr (SHARED) turn_wait(ring, stripe0 + mo);
#pragma unroll
        for (int j = 0; j < KT_H; ++j) {
            if ((uint32_t)j >= kt_h) break;
#pragma unroll
            for (int s = 0; s < 2; ++s) {
                float4* cell = dw_lane + ((size_t)mo * n8 + 2u * j + s) * 32u;
                float4 v = *cell;
                float c[4] = {v.x, v.y, v.z, v.w};
                warp_mma_16816(c, a, make_uint2(ht[j][2 * s], ht[j][2 * s + 1]));
                *cell = make_float4(c[0], c[1], c[2], c[3]);
            }
        }
        if constexpr (SHARED) turn_pass(ring, stripe0 + mo, lane);
    }
}

// Shared mode: the next slab's raw input goes to a per-warp staging area
// in shared memory with cp.async, so no registers hold it through the slab
// (W = 64: 16 registers at kt_in = 2). Same elements and order as
// load_slab_input: float2 (kt, i) of a lane at stage_lane[(kt * 4 + i) * 32];
// rows past the batch and columns past n_in are zero-filled (src-size 0).
// Each lane later reads only what it copied itself, after cp.async.wait_all.
__device__ __forceinline__ void cp_async_zfill(void* dst, const void* src, uint32_t cp_bytes, uint32_t src_bytes) {
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if (cp_bytes == 8u)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
// One pair's slot (columns c, c + 1 of a row; zeros past n_in or the batch).
// fp32: 8 bytes (vec2: n_in even, so c < n_in implies c + 1 < n_in) or two
// 4-byte copies. fp16 (KernelArgs::in_half): the two halves in the slot's
// first word, by a 4-byte copy (vec2: n_in even, pointer 4-byte aligned) or
// else by an ordinary load and store (cp.async has no 2-byte size).
__device__ __forceinline__ void stage_pair(float2* dst, const float* src, const float* in, uint32_t c, uint32_t n_in,
                                           bool row_ok, bool vec2) {
    if (vec2) {
        const bool ok = row_ok && c < n_in;
        cp_async_zfill(dst, ok ? src + c : in, 8u, ok ? 8u : 0u);
    } else {
        const bool ok0 = row_ok && c < n_in, ok1 = row_ok && c + 1 < n_in;
        cp_async_zfill(dst, ok0 ? src + c : in, 4u, ok0 ? 4u : 0u);
        cp_async_zfill(reinterpret_cast<float*>(dst) + 1, ok1 ? src + c + 1 : in, 4u, ok1 ? 4u : 0u);
    }
}
__device__ __forceinline__ void stage_pair(float2* dst, const __half* src, const __half* in, uint32_t c,
                                           uint32_t n_in, bool row_ok, bool vec2) {
    if (vec2) {
        const bool ok = row_ok && c < n_in;
        cp_async_zfill(dst, ok ? src + c : in, 4u, ok ? 4u : 0u);
    } else {
        *reinterpret_cast<uint32_t*>(dst) = row_ok ? load_pair(src, c, n_in, false) : 0u;
    }
}
// The slab at row0 of `in` (fp32 or fp16) into the warp's staging area.
template <int KT, typename T>
__device__ __forceinline__ void async_load_slab_input(float2* stage_lane, const T* __restrict__ in, uint32_t n_in,
                                                      uint32_t batch, uint32_t row0, bool vec2, uint32_t lane) {
    const uint32_t g = lane >> 2, t = lane & 3u;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const uint32_t r = row0 + g + 8u * h;
        const bool row_ok = r < batch;
        const T* src = in + (size_t)(row_ok ? r : 0u) * n_in;
#pragma unroll
        for (int kt = 0; kt < KT; ++kt)
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const uint32_t c = kt * 16u + 2u * t + 8u * q;
                stage_pair(stage_lane + (kt * 4 + h + 2 * q) * 32, src, in, c, n_in, row_ok, vec2);
            }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// The next slab's input into the warp's staging area (shared mode), fp32 or
// fp16 (HALF).
template <bool HALF, int KT_IN>
__device__ __forceinline__ void stage_train_slab(float2* stage_lane, const KernelArgs& p, uint32_t row0, bool vec2,
                                                 uint32_t lane) {
    if constexpr (HALF) async_load_slab_input<KT_IN>(stage_lane, p.in_half, p.shape.n_in, p.batch, row0, vec2, lane);
    else async_load_slab_input<KT_IN>(stage_lane, p.in, p.shape.n_in, p.batch, row0, vec2, lane);
}

// The kernel body; SHARED selects the shared mode (WarpDwMode), RELU the
// ReLU flavour (kWarpRelu: hidden ReLU and output None compiled in, whatever
// the shape says; the planner picks it only for such networks), HALF fp16
// input (KernelArgs::in_half). The three __global__ kernels below differ only
// in their launch bounds.
template <int W, int KT_IN, bool SHARED, bool RELU, bool EXTRAS, bool HALF>
__device__ __forceinline__ void warp_train_body(const KernelArgs& p) {
    constexpr int NT = W / 8;   // n8 tiles of a hidden layer
    constexpr int KT = W / 16;  // k16 tiles of a hidden layer
    constexpr uint32_t kSlabRows = 16u;
    constexpr bool kShared = SHARED;
    // Warps per block: kWarpKernelThreads / 32 in the per-warp mode.
    const uint32_t kWarps = kShared ? blockDim.x >> 5 : (uint32_t)kWarpKernelWarps;
    const MlpShape& sh = p.shape;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t g = lane >> 2, t = lane & 3u;

    const uint32_t n_slabs = (p.batch + kSlabRows - 1) / kSlabRows;
    const uint32_t total_warps = gridDim.x * kWarps;
    uint32_t slab = blockIdx.x * kWarps + warp;

    const uint32_t n_in = sh.n_in, n_out = sh.n_out, D = sh.n_hidden;
    const uint32_t kt_in = sh.n_in_pad / 16u, kt_out = sh.n_out_pad / 16u;
    // Pairs of input elements in one access: 8 bytes (fp32) or 4 (fp16).
    const bool vec2_in = n_in % 2u == 0 && (HALF ? reinterpret_cast<uintptr_t>(p.in_half) % 4u == 0
                                                 : reinterpret_cast<uintptr_t>(p.in) % 8u == 0);
    const bool vec2_out = p.out != nullptr && n_out % 2u == 0 && reinterpret_cast<uintptr_t>(p.out) % 8u == 0;
    const float* loss_src = p.loss == LossKind::FromGradient ? p.dout : p.target;
    const bool vec2_loss = n_out % 2u == 0 && reinterpret_cast<uintptr_t>(loss_src) % 8u == 0;
    // Compile-time constants in the ReLU flavour: every activation call below
    // folds to its ReLU / identity branch (no switch, no out-of-line calls
    // kept alive, same arithmetic, so the same bits as flavour 0).
    const Activation hidden_act = RELU ? Activation::ReLU : sh.hidden_act;
    const Activation out_act = RELU ? Activation::None : sh.output_act;

    // The next slab's input: in registers (per-warp mode) or in the warp's
    // staging area (shared mode, s_stage below; issued once it is known).
    std::conditional_t<HALF, SlabHalfInput<1, KT_IN>, SlabInput<1, KT_IN>> next;
    if constexpr (!kShared)
        if (slab < n_slabs) load_slab<false>(next, p, slab * kSlabRows, vec2_in, lane);

    // Shared memory (warp_train_smem_bytes): turn mbarriers (shared mode:
    // warp-major, one per stripe) | w_fwd | w_bwd | dW sums (one per warp, or
    // the block's one) | activation slots of warps 0..kWarps-1 | input
    // staging of warps 0..kWarps-1 (shared mode).
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const size_t P = n_params_padded(sh);
    const uint32_t dw_copies = kShared ? 1u : kWarps;
    const uint32_t n_stripes = kShared ? (uint32_t)warp_train_turns(sh) : 0u, n_bars = n_stripes * kWarps;
    // (The barriers come first: at a fixed address, their addresses are cheap
    // to recompute, which saves the 128-register build a few spills.)
    uint64_t* s_bars = reinterpret_cast<uint64_t*>(smem_raw);
    uint2* s_fwd = reinterpret_cast<uint2*>(s_bars + (n_bars + 1u) / 2u * 2u);
    uint2* s_bwd = s_fwd + P / 4;
    float* s_dw = reinterpret_cast<float*>(s_bwd + P / 4);
    const uint32_t act_slots = (uint32_t)warp_train_act_slots(sh, KT_IN);
    uint4* s_act_all = reinterpret_cast<uint4*>(s_dw + dw_copies * P);
    uint4* s_act = s_act_all + (size_t)warp * act_slots * 32u + lane;
    float2* s_stage = reinterpret_cast<float2*>(s_act_all + (size_t)kWarps * act_slots * 32u) +
                      (size_t)warp * (KT_IN * 4u * 32u) + lane;
    if constexpr (kShared)
        if (slab < n_slabs) stage_train_slab<HALF, KT_IN>(s_stage, p, slab * kSlabRows, vec2_in, lane);
    {
        const uint32_t n16 = (uint32_t)(P * 2u / 16u);
        const uint4* src_f = reinterpret_cast<const uint4*>(p.w_fwd);
        const uint4* src_b = reinterpret_cast<const uint4*>(p.w_bwd);
        uint4* dst = reinterpret_cast<uint4*>(s_fwd);
        for (uint32_t i = threadIdx.x; i < n16; i += blockDim.x) {
            dst[i] = __ldg(src_f + i);
            dst[n16 + i] = __ldg(src_b + i);
        }
        float4* dw4 = reinterpret_cast<float4*>(s_dw);
        for (uint32_t i = threadIdx.x; i < (uint32_t)(dw_copies * P / 4); i += blockDim.x)
            dw4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kShared)
            for (uint32_t i = threadIdx.x; i < n_bars; i += blockDim.x) turn_init(s_bars + i);
        __syncthreads();
    }
    // Shared mode: this warp's place in the turn order (turn_next_round each round).
    TurnRing ring = turn_ring(s_bars, n_stripes, warp, kWarps);
    float4* dw_warp = reinterpret_cast<float4*>(s_dw + (kShared ? 0u : warp) * P) + lane;  // this lane's float4 of tile 0
    const uint2* wf = s_fwd + lane;
    const uint2* wb = s_bwd + lane;
    // Activation slot: input tiles 0..KT_IN-1, then z_l tile j at KT_IN + l * KT + j.
    auto z_slot = [&](uint32_t l, int j) { return s_act + (KT_IN + (size_t)l * KT + j) * 32u; };

    // Loss data (dL/dout or target) of one 16-column output chunk: rows g, g+8,
    // columns chunk*16 + n*8 + 2t, +1. v[hh][n].
    auto load_loss = [&](float2 (&v)[2][2], uint32_t row0, uint32_t chunk) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const uint32_t r = row0 + g + 8u * hh;
            const float* src = loss_src + (size_t)r * n_out;
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                float2 x = make_float2(0.f, 0.f);
                if (r < p.batch) {
                    if (vec2_loss) {
                        if (c < n_out) x = __ldg(reinterpret_cast<const float2*>(src + c));
                    } else {
                        if (c < n_out) x.x = __ldg(src + c);
                        if (c + 1 < n_out) x.y = __ldg(src + c + 1);
                    }
                }
                v[hh][n] = x;
            }
        }
    };
    // v: dL/dy from the caller (FromGradient) or the target.
    auto loss_grad = [&](float y, float v) { return fused_loss_gradient<EXTRAS>(p.loss, y, v, p.loss_norm); };
    // This lane's sum of loss values (KernelArgs::loss_partial) and whether
    // it stored a non-finite dL/dinput (KernelArgs::nonfinite_flag).
    const bool want_loss = EXTRAS && p.loss_partial != nullptr;
    float loss_sum = 0.f;
    bool din_bad = false;

    for (; slab < n_slabs; slab += total_warps, turn_next_round(ring)) {
        const uint32_t row0 = slab * kSlabRows;
        // ---- forward ----
        uint32_t h[1][KT][4];
        {
            uint32_t a_in[1][KT_IN][4];
            if constexpr (kShared) asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
            for (int kt = 0; kt < KT_IN; ++kt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    if constexpr (HALF) {
                        a_in[0][kt][i] = kShared ? *reinterpret_cast<const uint32_t*>(s_stage + (kt * 4 + i) * 32)
                                                 : next.x[0][kt][i];
                    } else {
                        const float2 x = kShared ? s_stage[(kt * 4 + i) * 32] : next.x[0][kt][i];
                        a_in[0][kt][i] = pack_half2(x.x, x.y);
                    }
                }
                s_act[(size_t)kt * 32u] = make_uint4(a_in[0][kt][0], a_in[0][kt][1], a_in[0][kt][2], a_in[0][kt][3]);
            }
            if (slab + total_warps < n_slabs) {
                // (The staging area is overwritten only after its values were
                // used above.)
                if constexpr (kShared)
                    stage_train_slab<HALF, KT_IN>(s_stage, p, (slab + total_warps) * kSlabRows, vec2_in, lane);
                else
                    load_slab<false>(next, p, (slab + total_warps) * kSlabRows, vec2_in, lane);
                // Shared mode: the next slab's dL/dout or target rows (read at
                // its output layer) into L2, one 128-byte line per lane, the
                // first 4 KB (all of it for n_out <= 64). (Not in the
                // per-warp mode: any prefetch code there took the W = 16
                // kernel from 96 to 126 registers, 5 -> 4 blocks per SM.)
                if (kShared && p.l2_prefetch && loss_src != nullptr) {
                    const uint32_t r0 = (slab + total_warps) * kSlabRows;
                    const uint32_t bytes = min(kSlabRows, p.batch - r0) * n_out * 4u;
                    if (lane * 128u < bytes)
                        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(
                            reinterpret_cast<const char*>(loss_src + (size_t)r0 * n_out) + lane * 128u));
                }
            }
            float acc[1][NT][4];
            warp_layer<1, KT_IN, NT, true>(acc, a_in, wf, kt_in, kt_in);
#pragma unroll 1
            for (uint32_t l = 0;; ++l) {
                // z_l = fp16(acc) to its slot; h_l = act(z_l) (from the fp16 z, as the tile kernel).
#pragma unroll
                for (int j = 0; j < KT; ++j) {
                    uint32_t z[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int n = 2 * j + i / 2, q = i % 2;
                        z[i] = pack_half2(acc[0][n][2 * q], acc[0][n][2 * q + 1]);
                    }
                    *z_slot(l, j) = make_uint4(z[0], z[1], z[2], z[3]);
                    activate_fragments(hidden_act, z);
#pragma unroll
                    for (int i = 0; i < 4; ++i) h[0][j][i] = z[i];
                }
                if (l + 1 == D) break;
                warp_layer<1, KT, NT, true>(acc, h, wf + frag_offset(sh, l + 1), KT, KT);
            }
        }

        // ---- output layer, loss gradient, dW_D and g = delta_out W_D ----
        float gacc[1][NT][4];
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) gacc[0][n][i] = 0.f;
        {
            const uint2* b_out = wf + frag_offset(sh, D);
            const uint2* b_back = wb + frag_offset(sh, D);
            float4* dw_out = dw_warp + padded_offset(sh, D) / 4;
#pragma unroll 1
            for (uint32_t chunk = 0; chunk < kt_out; ++chunk) {
                float2 lv[2][2];
                load_loss(lv, row0, chunk);
                float o[1][2][4];
                warp_layer<1, KT, 2, true>(o, h, b_out + (size_t)chunk * 2u * KT * 32u, KT, KT);
                uint32_t d[1][4];
#pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const uint32_t r = row0 + g + 8u * hh;
                    const bool row_ok = r < p.batch;
#pragma unroll
                    for (int n = 0; n < 2; ++n) {
                        const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                        const float2 z = make_float2(o[0][n][2 * hh], o[0][n][2 * hh + 1]);
                        const float2 y = activation_value_pair(out_act, z);
                        if (p.out != nullptr && row_ok) {
                            float* dst = p.out + (size_t)r * n_out + c;
                            if (vec2_out) {
                                if (c < n_out) __stcs(reinterpret_cast<float2*>(dst), y);
                            } else {
                                if (c < n_out) dst[0] = y.x;
                                if (c + 1 < n_out) dst[1] = y.y;
                            }
                        }
                        const float2 dz = activation_derivative_pair(out_act, z);
                        float d0 = 0.f, d1 = 0.f;
                        if (row_ok && c < n_out) {
                            d0 = loss_grad(y.x, lv[hh][n].x) * dz.x * p.loss_scale;
                            if (want_loss) loss_sum += fused_loss_value(p.loss, y.x, lv[hh][n].x);
                        }
                        if (row_ok && c + 1 < n_out) {
                            d1 = loss_grad(y.y, lv[hh][n].y) * dz.y * p.loss_scale;
                            if (want_loss) loss_sum += fused_loss_value(p.loss, y.y, lv[hh][n].y);
                        }
                        // A fragment of output units chunk*16..+15: a0/a1 rows g/g+8 of
                        // n8 tile 0, a2/a3 of n8 tile 1.
                        d[0][2 * n + hh] = pack_half2(d0, d1);
                    }
                }
                accumulate_dw<1, KT, kShared>(dw_out + (size_t)chunk * NT * 32u, d, h[0], KT,
                                              ring, D * KT + chunk, lane);
#pragma unroll
                for (int n = 0; n < NT; ++n)
                    warp_mma_16816(gacc[0][n], d[0], b_back[((size_t)n * kt_out + chunk) * 32u]);
            }
        }

        // ---- hidden layers, top down ----
        uint32_t z_cur[KT][4];
#pragma unroll
        for (int j = 0; j < KT; ++j) {
            const uint4 v = *z_slot(D - 1, j);
            z_cur[j][0] = v.x, z_cur[j][1] = v.y, z_cur[j][2] = v.z, z_cur[j][3] = v.w;
        }
#pragma unroll 1
        for (uint32_t l = D; l-- > 0;) {
            // delta_l = fp16(g * act'(z_l)).
            uint32_t dl[1][KT][4];
#pragma unroll
            for (int j = 0; j < KT; ++j)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int n = 2 * j + i / 2, q = i % 2;
                    const float2 dz = activation_derivative_pair(hidden_act, __half22float2(as_half2(z_cur[j][i])));
                    dl[0][j][i] = pack_half2(gacc[0][n][2 * q] * dz.x, gacc[0][n][2 * q + 1] * dz.y);
                }
            float4* dw_l = dw_warp + padded_offset(sh, l) / 4;
            if (l > 0) {
                uint32_t hp[KT][4];
#pragma unroll
                for (int j = 0; j < KT; ++j) {
                    const uint4 v = *z_slot(l - 1, j);
                    z_cur[j][0] = v.x, z_cur[j][1] = v.y, z_cur[j][2] = v.z, z_cur[j][3] = v.w;
#pragma unroll
                    for (int i = 0; i < 4; ++i) hp[j][i] = z_cur[j][i];
                    activate_fragments(hidden_act, hp[j]);
                }
                accumulate_dw<KT, KT, kShared>(dw_l, dl[0], hp, KT, ring, l * KT, lane);
                warp_layer<1, KT, NT, true>(gacc, dl, wb + frag_offset(sh, l), KT, KT);
            } else {
                uint32_t x[KT_IN][4];
#pragma unroll
                for (int kt = 0; kt < KT_IN; ++kt) {
                    const uint4 v = s_act[(size_t)kt * 32u];
                    x[kt][0] = v.x, x[kt][1] = v.y, x[kt][2] = v.z, x[kt][3] = v.w;
                }
                accumulate_dw<KT, KT_IN, kShared>(dw_l, dl[0], x, kt_in, ring, 0u, lane);
                if (p.din != nullptr) {
#pragma unroll 1
                    for (uint32_t chunk = 0; chunk < kt_in; ++chunk) {
                        float o[1][2][4];
                        warp_layer<1, KT, 2, true>(o, dl, wb + (size_t)chunk * 2u * KT * 32u, KT, KT);
#pragma unroll
                        for (int hh = 0; hh < 2; ++hh) {
                            const uint32_t r = row0 + g + 8u * hh;
                            if (r >= p.batch) continue;
                            float* dst = p.din + (size_t)r * n_in;
#pragma unroll
                            for (int n = 0; n < 2; ++n) {
                                const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                                const float v0 = o[0][n][2 * hh] * p.inv_loss_scale;
                                const float v1 = o[0][n][2 * hh + 1] * p.inv_loss_scale;
                                if (c < n_in) {
                                    dst[c] = v0;
                                    if constexpr (EXTRAS) din_bad |= !isfinite(v0);
                                }
                                if (c + 1 < n_in) {
                                    dst[c + 1] = v1;
                                    if constexpr (EXTRAS) din_bad |= !isfinite(v1);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    // ---- the flag (one vote and at most one atomic per warp) and the loss:
    // lanes summed in a fixed butterfly, each warp's sum in its own (now
    // unused) activation slot, added in warp order below ----
    if (EXTRAS && p.nonfinite_flag != nullptr && __any_sync(0xffffffffu, din_bad) && lane == 0)
        atomicOr(p.nonfinite_flag, 1u);
    if (want_loss) {
        double v = (double)loss_sum;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
        if (lane == 0) *reinterpret_cast<double*>(s_act_all + (size_t)warp * act_slots * 32u) = v;
    }

    // ---- the block's partial: warps' sums in warp order (or the block's
    // one sum), padded layout ----
    __syncthreads();
    if (want_loss && threadIdx.x == 0) {
        double sum = 0.0;
        for (uint32_t w = 0; w < kWarps; ++w)
            sum += *reinterpret_cast<const double*>(s_act_all + (size_t)w * act_slots * 32u);
        p.loss_partial[blockIdx.x] = sum;
    }
    float* partial = p.partial + (size_t)blockIdx.x * p.partial_stride;
    for (uint32_t f = threadIdx.x; f < (uint32_t)P; f += blockDim.x) {
        uint32_t l = 0;
        while (l < D && f >= padded_offset(sh, l + 1)) ++l;
        const uint32_t local = f - (uint32_t)padded_offset(sh, l);
        const uint32_t fi = fan_in_pad(sh, l), n8 = fi / 8u;
        const uint32_t tile = local / 128u, ln = (local / 4u) % 32u, i = local % 4u;
        const uint32_t o = (tile / n8) * 16u + ln / 4u + 8u * (i / 2u);
        const uint32_t in = (tile % n8) * 8u + 2u * (ln % 4u) + (i % 2u);
        float sum = 0.f;
        for (uint32_t w = 0; w < dw_copies; ++w) sum += s_dw[w * P + f];
        partial[padded_offset(sh, l) + (size_t)o * fi + in] = sum;
    }
}

// Per-warp mode: blocks of kWarpKernelThreads. (A minimum of 1 block per SM
// in the launch bounds made ptxas use 234 instead of 144 registers at W = 64:
// only the 128-register kernel names one.)
// ReLU flavour at W = 16, n_in <= 32: at least 6 blocks (24 warps) per SM,
// i.e. at most 80 registers, what it took with no spill before the fused
// loss's extras (RelativeL2, loss sums, the dL/dinput flag) pushed ptxas's
// own choice to 91-96 (5 blocks/SM). Still no spill at 80 (ptxas, sm_90); at
// n_in = 64 the cap would spill ~900 bytes, so it applies only up to 32.
template <int W, int KT_IN, bool RELU>
constexpr int warp_train_min_blocks() { return W == 16 && KT_IN <= 2 && RELU ? 6 : 1; }

// EXTRAS: the fused loss's RelativeL2, loss sums and dL/dinput flag compiled
// in. The ReLU flavour also comes without them (EXTRAS = false, picked at
// launch when a call needs none: needs_fused_loss_extras); flavour 0 always
// has them.
template <int W, int KT_IN, bool RELU, bool EXTRAS, bool HALF>
__global__ void __launch_bounds__(kWarpKernelThreads, warp_train_min_blocks<W, KT_IN, RELU>())
    fused_mlp_warp_train_kernel(const KernelArgs p) {
    warp_train_body<W, KT_IN, false, RELU, EXTRAS, HALF>(p);
}
// Shared mode, up to kMaxWarpTrainWarps warps (at most 65536 / 384 = 170 registers).
// ReLU flavour at W = 32, n_in <= 32 (the W32 plan, 8-warp blocks): at most
// 80 registers (2 blocks of up to 12 warps), so that 3 blocks of 8 warps fit
// per SM. ptxas's own choice was 79 or 89 depending on unrelated code (89:
// 2 blocks, 6.28 G samples/s at 2^20; 79: 6.58, H200).
template <int W, int KT_IN, bool RELU>
constexpr int warp_train_shared_min_blocks() { return W == 32 && KT_IN <= 2 && RELU ? 2 : 1; }

template <int W, int KT_IN, bool RELU, bool EXTRAS, bool HALF>
__global__ void __launch_bounds__(kMaxWarpTrainWarps * 32, warp_train_shared_min_blocks<W, KT_IN, RELU>())
    fused_mlp_warp_train_shared_kernel(const KernelArgs p) {
    warp_train_body<W, KT_IN, true, RELU, EXTRAS, HALF>(p);
}
// Shared mode, up to kMaxWarpTrain128Warps warps and 2 blocks per SM: 128
// registers, 16 warps per SM (W = 64: no spills at kt_in 1 and 2, 8 bytes at
// 4; with the input in registers instead of the staging area it spilled
// 288 bytes at kt_in = 2).
template <int W, int KT_IN, bool RELU, bool EXTRAS, bool HALF>
__global__ void __launch_bounds__(kMaxWarpTrain128Warps * 32, 2) fused_mlp_warp_train_shared128_kernel(const KernelArgs p) {
    warp_train_body<W, KT_IN, true, RELU, EXTRAS, HALF>(p);
}

} // namespace fusedngp::gpu::detail
