// The fully fused MLP kernels (device code). See docs/FUSED_MLP_DESIGN.md.
//
// One thread block owns a tile of R rows (samples) at a time and runs the
// whole network for it with every activation in shared memory:
//   training: input -> all hidden layers (pre-activations kept) -> output ->
//             dL/dout -> backward layer by layer (deltas overwrite the
//             pre-activations they no longer need) -> dL/dinput, while the
//             block's fp32 weight-gradient partial sums are updated per layer.
//   inference: the forward half, ping-ponging two hidden buffers.
// Only the input, the output, dL/dout and dL/dinput touch device memory.
//
// Tensor cores via mma.sync.m16n8k16 (fp16 x fp16 -> fp32). Operands:
//   activations: row-major fp16 in shared memory, loaded with ldmatrix
//                (.trans for the weight-gradient products);
//   weights:     pre-swizzled into per-lane fragment order by a conversion
//                kernel, read straight from global memory (L1/L2 resident), so
//                a fragment is one coalesced 8-byte load per lane.
#pragma once

#include "activation_device.cuh"
#include "fused_mlp_args.h"

#include <cuda_fp16.h>
#include <cstdint>

namespace fusedngp::gpu::detail {

constexpr int kWarps = kBlockWarps;
constexpr int kThreads = kWarps * 32;

// ---- PTX wrappers ----------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 fp16 tiles; lane i supplies the address of row (i % 8) of tile i / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const __half* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const __half* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// c += a * b for one 16x8x16 tile.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- Shared-memory tile ------------------------------------------------------

struct TileSmem {
    __half* x;       // [R][ldx]  input, fp16, zero padded
    __half* hidden;  // n_slots x [R][ldw]  pre-activations, later deltas
    __half* delta_out;  // [R][ldo]  loss-scaled dL/dz of the output layer (training)
    uint32_t ldx, ldw, ldo, rows;
    size_t slot_stride;
    __device__ __forceinline__ __half* slot(uint32_t i) const { return hidden + i * slot_stride; }
};

__device__ __forceinline__ TileSmem make_tile_smem(const KernelArgs& p, unsigned char* raw, bool training) {
    TileSmem s;
    s.rows = p.rows_per_tile;
    s.ldx = ld_input(p.shape);
    s.ldw = ld_hidden(p.shape);
    s.ldo = ld_output(p.shape);
    s.slot_stride = (size_t)s.rows * s.ldw;
    s.x = reinterpret_cast<__half*>(raw);
    s.hidden = s.x + (size_t)s.rows * s.ldx;
    s.delta_out = training ? s.hidden + n_hidden_slots(p.shape, true) * s.slot_stride : nullptr;
    return s;
}

// Buffer that holds hidden layer l: all of them in training, ping-pong otherwise.
__device__ __forceinline__ uint32_t slot_of(uint32_t l, bool training) { return training ? l : (l & 1u); }

__device__ __forceinline__ uint32_t warp_id() { return threadIdx.x >> 5; }
__device__ __forceinline__ uint32_t lane_id() { return threadIdx.x & 31u; }

// ---- Row-parallel product: C[rows x 8*NT8] = act(A[rows x K]) * B[K x N] -----
//
// One warp computes MT*16 rows x NT8*8 columns. A comes from shared memory
// (row-major, `lda` halves per row), B from global memory in fragment order:
// entry ((nt * KT + kt) * 32 + lane) holds lane's b0..b3 of tile (kt, nt).
// Accumulator element (m, n, i) is row m*16 + lane/4 + 8*(i/2),
// column n*8 + 2*(lane%4) + i%2 (the mma C layout).
template <int MT, int NT8, int KT_STATIC>
__device__ __forceinline__ void warp_gemm(float (&acc)[MT][NT8][4], const __half* a_tile, uint32_t lda,
                                          uint32_t kt_runtime, Activation a_act,
                                          const uint2* __restrict__ b_frags, uint32_t nt0) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT8; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.f;

    const uint32_t lane = lane_id();
    const uint32_t kt_count = KT_STATIC > 0 ? (uint32_t)KT_STATIC : kt_runtime;
    const __half* a_lane = a_tile + (lane & 15u) * lda + (lane >> 4) * 8u;
    const uint2* b_lane = b_frags + (size_t)nt0 * kt_count * 32u + lane;

    auto step = [&](uint32_t kt) {
        uint32_t a[MT][4];
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            ldmatrix_x4(a[m], a_lane + (size_t)m * 16u * lda + kt * 16u);
            activate_fragments(a_act, a[m]);
        }
        uint2 b[NT8];
#pragma unroll
        for (int n = 0; n < NT8; ++n) b[n] = __ldg(b_lane + ((size_t)n * kt_count + kt) * 32u);
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int n = 0; n < NT8; ++n) mma_16816(acc[m][n], a[m], b[n].x, b[n].y);
    };
    if constexpr (KT_STATIC > 0) {
#pragma unroll
        for (uint32_t kt = 0; kt < (uint32_t)KT_STATIC; ++kt) step(kt);
    } else {
#pragma unroll 1
        for (uint32_t kt = 0; kt < kt_runtime; ++kt) step(kt);
    }
}

// Calls f(row, col, v0, v1) for each pair of horizontally adjacent
// accumulator elements of the warp's tile (row/col relative to the tile).
template <int MT, int NT8, typename F>
__device__ __forceinline__ void for_each_pair(const float (&acc)[MT][NT8][4], F&& f) {
    const uint32_t lane = lane_id();
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT8; ++n)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                f(m * 16u + (lane >> 2) + 8u * h, n * 8u + 2u * (lane & 3u), acc[m][n][2 * h], acc[m][n][2 * h + 1]);
}

__device__ __forceinline__ __half2* half2_at(__half* base, uint32_t ld, uint32_t row, uint32_t col) {
    return reinterpret_cast<__half2*>(base + (size_t)row * ld + col);
}

// Hidden widths use chunks of up to 64 columns per warp (64 fp32 accumulators
// per lane at MT = 2); the thin input/output layers use 16-column chunks.
template <int W>
__host__ __device__ constexpr int hidden_nt8() { return W / 8 < 8 ? W / 8 : 8; }

// ---- Phases of a tile --------------------------------------------------------

// fp16 input rows (KernelArgs::in_half) -> the tile as they are: 16-byte
// loads where n_in % 8 == 0 and the pointer is aligned, else half by half.
__device__ __forceinline__ void load_input_half(const KernelArgs& p, const TileSmem& s, uint32_t row0, uint32_t valid) {
    const uint32_t n_in = p.shape.n_in;
    if (n_in % 8u == 0 && reinterpret_cast<uintptr_t>(p.in_half) % 16u == 0) {
        const uint32_t octs = p.shape.n_in_pad / 8u;  // n_in_pad is a multiple of 16
        for (uint32_t idx = threadIdx.x; idx < s.rows * octs; idx += kThreads) {
            const uint32_t r = idx / octs, c = (idx - r * octs) * 8u;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (r < valid && c < n_in) v = __ldg(reinterpret_cast<const uint4*>(p.in_half + (size_t)(row0 + r) * n_in + c));
            *reinterpret_cast<uint4*>(s.x + (size_t)r * s.ldx + c) = v;
        }
        return;
    }
    const __half zero = __float2half_rn(0.f);
    for (uint32_t idx = threadIdx.x; idx < s.rows * p.shape.n_in_pad; idx += kThreads) {
        const uint32_t r = idx / p.shape.n_in_pad, c = idx - r * p.shape.n_in_pad;
        s.x[(size_t)r * s.ldx + c] = r < valid && c < n_in ? p.in_half[(size_t)(row0 + r) * n_in + c] : zero;
    }
}

// Input rows [row0, row0 + valid) -> fp16 tile, zero rows/columns beyond.
__device__ __forceinline__ void load_input(const KernelArgs& p, const TileSmem& s, uint32_t row0, uint32_t valid) {
    if (p.in_half != nullptr) {
        load_input_half(p, s, row0, valid);
        return;
    }
    const uint32_t n_in = p.shape.n_in;
    const bool vec4 = (n_in % 4u == 0) && (reinterpret_cast<uintptr_t>(p.in) % 16u == 0);
    if (vec4) {
        // All loads of a batch are issued before the first store, so a tile
        // waits for about one memory latency, not one per iteration.
        constexpr int kBatch = 4;
        const uint32_t quads = p.shape.n_in_pad / 4u;
        const uint32_t total = s.rows * quads;
        for (uint32_t base = threadIdx.x; base < total; base += kThreads * kBatch) {
            float4 v[kBatch];
            uint32_t dst[kBatch];
#pragma unroll
            for (int j = 0; j < kBatch; ++j) {
                const uint32_t idx = base + j * kThreads;
                const uint32_t r = idx / quads, c = (idx - r * quads) * 4u;
                dst[j] = idx < total ? r * s.ldx + c : 0xFFFFFFFFu;
                v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (idx < total && r < valid && c < n_in)
                    v[j] = __ldg(reinterpret_cast<const float4*>(p.in + (size_t)(row0 + r) * n_in + c));
            }
#pragma unroll
            for (int j = 0; j < kBatch; ++j) {
                if (dst[j] == 0xFFFFFFFFu) continue;
                __half2* out = reinterpret_cast<__half2*>(s.x + dst[j]);
                out[0] = __floats2half2_rn(v[j].x, v[j].y);
                out[1] = __floats2half2_rn(v[j].z, v[j].w);
            }
        }
    } else {
        const uint32_t pairs = p.shape.n_in_pad / 2u;
        for (uint32_t idx = threadIdx.x; idx < s.rows * pairs; idx += kThreads) {
            const uint32_t r = idx / pairs, c = (idx - r * pairs) * 2u;
            float v0 = 0.f, v1 = 0.f;
            if (r < valid) {
                const float* src = p.in + (size_t)(row0 + r) * n_in;
                if (c < n_in) v0 = __ldg(src + c);
                if (c + 1 < n_in) v1 = __ldg(src + c + 1);
            }
            *half2_at(s.x, s.ldx, r, c) = __floats2half2_rn(v0, v1);
        }
    }
}

// Hidden layer l forward: pre-activation z_l = act(h_{l-1}) * W_l^T into its slot.
template <int W, int MT>
__device__ __forceinline__ void forward_hidden(const KernelArgs& p, const TileSmem& s, uint32_t l, bool training) {
    constexpr int NT8 = hidden_nt8<W>();
    constexpr uint32_t kChunks = W / (8 * NT8);
    const uint32_t slabs = s.rows / (16u * MT);
    const uint2* b = p.w_fwd + frag_offset(p.shape, l);
    __half* dst = s.slot(slot_of(l, training));
    for (uint32_t item = warp_id(); item < slabs * kChunks; item += kWarps) {
        const uint32_t slab = item / kChunks, chunk = item % kChunks;
        const uint32_t row = slab * 16u * MT;
        float acc[MT][NT8][4];
        if (l == 0) {
            warp_gemm<MT, NT8, 0>(acc, s.x + (size_t)row * s.ldx, s.ldx, p.shape.n_in_pad / 16u, Activation::None, b,
                                  chunk * NT8);
        } else {
            warp_gemm<MT, NT8, W / 16>(acc, s.slot(slot_of(l - 1, training)) + (size_t)row * s.ldw, s.ldw, 0,
                                       p.shape.hidden_act, b, chunk * NT8);
        }
        const uint32_t col = chunk * NT8 * 8u;
        for_each_pair(acc, [&](uint32_t r, uint32_t c, float v0, float v1) {
            *half2_at(dst, s.ldw, row + r, col + c) = __floats2half2_rn(v0, v1);
        });
    }
}

// EXTRAS (the training kernel's template flag): RelativeL2, the loss sums and
// the dL/dinput flag compiled in; without them (calls that need none:
// needs_fused_loss_extras) the kernel is the code from before the fused step.
template <bool EXTRAS>
__device__ __forceinline__ float loss_gradient(const KernelArgs& p, float y, size_t idx) {
    if (p.loss == LossKind::FromGradient) return __ldg(p.dout + idx);
    return fused_loss_gradient<EXTRAS>(p.loss, y, __ldg(p.target + idx), p.loss_norm);
}

// KernelArgs::loss_partial: one thread's loss value of element idx added to its sum.
template <bool EXTRAS>
__device__ __forceinline__ void add_loss_value(const KernelArgs& p, float y, size_t idx, float& loss_sum) {
    if (EXTRAS && p.loss_partial != nullptr) loss_sum += fused_loss_value(p.loss, y, __ldg(p.target + idx));
}

// Output layer: y = act_out(h_{D-1} * W_D^T) to p.out (if set); in training
// also delta_out = loss_scale * dL/dy * act_out'(z) into shared memory (zero
// for rows past the batch and padded columns, so they add nothing later);
// loss_sum gets the loss values (add_loss_value).
template <int W, int MT, bool EXTRAS>
__device__ __forceinline__ void output_layer(const KernelArgs& p, const TileSmem& s, uint32_t row0, uint32_t valid,
                                             bool training, float& loss_sum) {
    constexpr int NT8 = 2;
    const uint32_t n_out = p.shape.n_out;
    const uint32_t chunks = p.shape.n_out_pad / 16u;
    const uint32_t slabs = s.rows / (16u * MT);
    const uint32_t D = p.shape.n_hidden;
    const uint2* b = p.w_fwd + frag_offset(p.shape, D);
    const __half* src = s.slot(slot_of(D - 1, training));
    const Activation out_act = p.shape.output_act;
    const bool pair_store = p.out != nullptr && n_out % 2u == 0 && reinterpret_cast<uintptr_t>(p.out) % 8u == 0;
    const bool half_pair_store =
        p.out_half != nullptr && n_out % 2u == 0 && reinterpret_cast<uintptr_t>(p.out_half) % 4u == 0;
    for (uint32_t item = warp_id(); item < slabs * chunks; item += kWarps) {
        const uint32_t slab = item / chunks, chunk = item % chunks;
        const uint32_t row = slab * 16u * MT, col = chunk * 16u;
        float acc[MT][NT8][4];
        warp_gemm<MT, NT8, W / 16>(acc, src + (size_t)row * s.ldw, s.ldw, 0, p.shape.hidden_act, b, chunk * NT8);
        for_each_pair(acc, [&](uint32_t r, uint32_t c, float z0, float z1) {
            const uint32_t rr = row + r, cc = col + c;
            const bool row_ok = rr < valid;
            const float2 y = activation_value_pair(out_act, make_float2(z0, z1));
            const float y0 = y.x, y1 = y.y;
            const size_t g = (size_t)(row0 + rr) * n_out + cc;
            if (p.out != nullptr && row_ok) {
                if (pair_store && cc < n_out) {
                    *reinterpret_cast<float2*>(p.out + g) = make_float2(y0, y1);
                } else {
                    if (cc < n_out) p.out[g] = y0;
                    if (cc + 1 < n_out) p.out[g + 1] = y1;
                }
            } else if (p.out_half != nullptr && row_ok) {
                if (half_pair_store && cc < n_out) {
                    *reinterpret_cast<__half2*>(p.out_half + g) = __floats2half2_rn(y0, y1);
                } else {
                    if (cc < n_out) p.out_half[g] = __float2half_rn(y0);
                    if (cc + 1 < n_out) p.out_half[g + 1] = __float2half_rn(y1);
                }
            }
            if (training) {
                const float2 dz = activation_derivative_pair(out_act, make_float2(z0, z1));
                float d0 = 0.f, d1 = 0.f;
                if (row_ok && cc < n_out) {
                    d0 = loss_gradient<EXTRAS>(p, y0, g) * dz.x * p.loss_scale;
                    add_loss_value<EXTRAS>(p, y0, g, loss_sum);
                }
                if (row_ok && cc + 1 < n_out) {
                    d1 = loss_gradient<EXTRAS>(p, y1, g + 1) * dz.y * p.loss_scale;
                    add_loss_value<EXTRAS>(p, y1, g + 1, loss_sum);
                }
                *half2_at(s.delta_out, s.ldo, rr, cc) = __floats2half2_rn(d0, d1);
            }
        });
    }
}

// delta_l = (delta_{l+1} * W_{l+1}) .* act'(z_l), written over z_l in place
// (each lane reads the z it overwrites, so no other thread is affected).
template <int W, int MT>
__device__ __forceinline__ void backward_hidden(const KernelArgs& p, const TileSmem& s, uint32_t l) {
    constexpr int NT8 = hidden_nt8<W>();
    constexpr uint32_t kChunks = W / (8 * NT8);
    const uint32_t slabs = s.rows / (16u * MT);
    const uint32_t D = p.shape.n_hidden;
    const uint2* b = p.w_bwd + frag_offset(p.shape, l + 1);
    __half* z = s.slot(l);
    const Activation act = p.shape.hidden_act;
    for (uint32_t item = warp_id(); item < slabs * kChunks; item += kWarps) {
        const uint32_t slab = item / kChunks, chunk = item % kChunks;
        const uint32_t row = slab * 16u * MT;
        float acc[MT][NT8][4];
        if (l + 1 == D) {
            warp_gemm<MT, NT8, 0>(acc, s.delta_out + (size_t)row * s.ldo, s.ldo, p.shape.n_out_pad / 16u,
                                  Activation::None, b, chunk * NT8);
        } else {
            warp_gemm<MT, NT8, W / 16>(acc, s.slot(l + 1) + (size_t)row * s.ldw, s.ldw, 0, Activation::None, b,
                                       chunk * NT8);
        }
        const uint32_t col = chunk * NT8 * 8u;
        for_each_pair(acc, [&](uint32_t r, uint32_t c, float g0, float g1) {
            __half2* cell = half2_at(z, s.ldw, row + r, col + c);
            const float2 dz = activation_derivative_pair(act, __half22float2(*cell));
            *cell = __floats2half2_rn(g0 * dz.x, g1 * dz.y);
        });
    }
}

// dL/dinput = delta_0 * W_0, unscaled, to global memory; bad is set when a
// stored value is inf or NaN.
template <int W, int MT, bool EXTRAS>
__device__ __forceinline__ void backward_input(const KernelArgs& p, const TileSmem& s, uint32_t row0, uint32_t valid,
                                               bool& bad) {
    constexpr int NT8 = 2;
    const uint32_t n_in = p.shape.n_in;
    const uint32_t chunks = p.shape.n_in_pad / 16u;
    const uint32_t slabs = s.rows / (16u * MT);
    const uint2* b = p.w_bwd + frag_offset(p.shape, 0);
    for (uint32_t item = warp_id(); item < slabs * chunks; item += kWarps) {
        const uint32_t slab = item / chunks, chunk = item % chunks;
        const uint32_t row = slab * 16u * MT, col = chunk * 16u;
        float acc[MT][NT8][4];
        warp_gemm<MT, NT8, W / 16>(acc, s.slot(0) + (size_t)row * s.ldw, s.ldw, 0, Activation::None, b, chunk * NT8);
        for_each_pair(acc, [&](uint32_t r, uint32_t c, float g0, float g1) {
            const uint32_t rr = row + r, cc = col + c;
            if (rr >= valid) return;
            float* dst = p.din + (size_t)(row0 + rr) * n_in + cc;
            const float v0 = g0 * p.inv_loss_scale, v1 = g1 * p.inv_loss_scale;
            if (cc < n_in) {
                dst[0] = v0;
                if constexpr (EXTRAS) bad |= !isfinite(v0);
            }
            if (cc + 1 < n_in) {
                dst[1] = v1;
                if constexpr (EXTRAS) bad |= !isfinite(v1);
            }
        });
    }
}

// dW_l[o][i] += sum_r delta_l[r][o] * h_{l-1}[r][i] over the tile's rows,
// accumulated into this block's fp32 partial (padded [fan_out][fan_in]).
// Work item: 16 outputs x 16*TN inputs, K = all R rows. A = delta^T and
// B = h are both read with ldmatrix.trans from their row-major buffers.
// Each partial element is owned by one lane for the whole kernel, so the
// read-modify-write needs no atomics and the sum order is fixed.
template <int TN>
__device__ __forceinline__ void weight_gradient_items(const __half* delta, uint32_t ldd, const __half* h, uint32_t ldh,
                                                      Activation h_act, uint32_t fan_out_p, uint32_t fan_in_p,
                                                      uint32_t rows, float* partial, bool first_tile) {
    const uint32_t lane = lane_id();
    const uint32_t tiles_in = fan_in_p / (16u * TN);
    const uint32_t items = (fan_out_p / 16u) * tiles_in;
    // ldmatrix row/col offsets of this lane (see the fragment layouts above).
    const uint32_t a_row = (lane & 7u) + ((lane >> 4) & 1u) * 8u, a_col = ((lane >> 3) & 1u) * 8u;
    const uint32_t b_row = (lane & 7u) + ((lane >> 3) & 1u) * 8u, b_col = (lane >> 4) * 8u;
    for (uint32_t item = warp_id(); item < items; item += kWarps) {
        const uint32_t o0 = (item / tiles_in) * 16u, i0 = (item % tiles_in) * 16u * TN;
        auto cell_at = [&](int j, int hh) {
            const uint32_t o = o0 + (lane >> 2) + 8u * hh, i = i0 + j * 8u + 2u * (lane & 3u);
            return reinterpret_cast<float2*>(partial + (size_t)o * fan_in_p + i);
        };
        // Fetch the running sums first: their latency hides behind the products.
        float2 old[2 * TN][2];
#pragma unroll
        for (int j = 0; j < 2 * TN; ++j)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) old[j][hh] = first_tile ? make_float2(0.f, 0.f) : *cell_at(j, hh);
        float acc[2 * TN][4];
#pragma unroll
        for (int j = 0; j < 2 * TN; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
#pragma unroll 2
        for (uint32_t k = 0; k < rows; k += 16u) {
            uint32_t a[4];
            ldmatrix_x4_trans(a, delta + (size_t)(k + a_row) * ldd + o0 + a_col);
#pragma unroll
            for (int t = 0; t < TN; ++t) {
                uint32_t bf[4];
                ldmatrix_x4_trans(bf, h + (size_t)(k + b_row) * ldh + i0 + t * 16u + b_col);
                activate_fragments(h_act, bf);
                mma_16816(acc[2 * t], a, bf[0], bf[1]);
                mma_16816(acc[2 * t + 1], a, bf[2], bf[3]);
            }
        }
#pragma unroll
        for (int j = 0; j < 2 * TN; ++j)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)
                *cell_at(j, hh) = make_float2(old[j][hh].x + acc[j][2 * hh], old[j][hh].y + acc[j][2 * hh + 1]);
    }
}

__device__ __forceinline__ void weight_gradient(const KernelArgs& p, const TileSmem& s, uint32_t l, bool first_tile) {
    const MlpShape& sh = p.shape;
    const bool top = l == sh.n_hidden;
    const __half* delta = top ? s.delta_out : s.slot(l);
    const uint32_t ldd = top ? s.ldo : s.ldw;
    const __half* h = l == 0 ? s.x : s.slot(l - 1);
    const uint32_t ldh = l == 0 ? s.ldx : s.ldw;
    const Activation h_act = l == 0 ? Activation::None : sh.hidden_act;
    const uint32_t fo = fan_out_pad(sh, l), fi = fan_in_pad(sh, l);
    float* partial = p.partial + blockIdx.x * p.partial_stride + padded_offset(sh, l);
    if (fi % 32u == 0)
        weight_gradient_items<2>(delta, ldd, h, ldh, h_act, fo, fi, s.rows, partial, first_tile);
    else
        weight_gradient_items<1>(delta, ldd, h, ldh, h_act, fo, fi, s.rows, partial, first_tile);
}

// ---- L2 prefetch ---------------------------------------------------------------

// Asks L2 to fetch `count` elements from `base` (one line request per
// thread, block-strided). A hint only: no data reaches the block, nothing
// waits, so the HBM latency of the next tile's loads overlaps this tile's
// compute. Addresses stay inside [base, base + count).
template <typename T>
__device__ __forceinline__ void prefetch_l2(const T* base, size_t count) {
    if (base == nullptr || count == 0) return;
    const size_t bytes = count * sizeof(T);
    const char* b = reinterpret_cast<const char*>(base);
    for (size_t off = (size_t)threadIdx.x * 128u; off < bytes + 127u; off += (size_t)kThreads * 128u) {
        const char* addr = b + (off < bytes ? off : bytes - 1);
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(addr));
    }
}

// The rows of tile `tile` of a [batch][n] array.
template <typename T>
__device__ __forceinline__ void prefetch_rows(const KernelArgs& p, const T* data, uint32_t n, uint32_t tile) {
    if (tile >= p.n_tiles) return;
    const uint32_t row0 = tile * p.rows_per_tile;
    const uint32_t valid = min(p.rows_per_tile, p.batch - row0);
    prefetch_l2(data == nullptr ? nullptr : data + (size_t)row0 * n, (size_t)valid * n);
}

// The input rows of tile `tile`, fp32 or fp16.
__device__ __forceinline__ void prefetch_input_rows(const KernelArgs& p, uint32_t tile) {
    if (p.in_half != nullptr) prefetch_rows(p, p.in_half, p.shape.n_in, tile);
    else prefetch_rows(p, p.in, p.shape.n_in, tile);
}

// ---- Kernels -------------------------------------------------------------------

// Tiles are handed out round-robin (tile = blockIdx.x + k * gridDim.x), so
// which block sums which rows depends only on batch and grid: deterministic.
// With 16-row slabs the narrower widths fit in 128 registers, which lets two
// blocks share an SM; the 32-row-slab kernels need more and run one per SM.
template <int W, int MT>
__host__ __device__ constexpr int min_blocks_per_sm() { return (MT == 1 && W <= 128) ? 2 : 1; }

template <int W, int MT>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm<W, MT>()) fused_mlp_inference_kernel(const KernelArgs p) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const TileSmem s = make_tile_smem(p, smem_raw, false);
    for (uint32_t tile = blockIdx.x; tile < p.n_tiles; tile += gridDim.x) {
        const uint32_t row0 = tile * s.rows;
        const uint32_t valid = min(s.rows, p.batch - row0);
        __syncthreads();  // the previous tile is done with shared memory
        load_input(p, s, row0, valid);
        if (p.l2_prefetch) prefetch_input_rows(p, tile + gridDim.x);
        __syncthreads();
        for (uint32_t l = 0; l < p.shape.n_hidden; ++l) {
            forward_hidden<W, MT>(p, s, l, false);
            __syncthreads();
        }
        float unused = 0.f;
        output_layer<W, MT, false>(p, s, row0, valid, false, unused);
    }
}

// EXTRAS: see loss_gradient; both are compiled, launch_fused_train picks.
template <int W, int MT, bool EXTRAS>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm<W, MT>()) fused_mlp_train_kernel(const KernelArgs p) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const TileSmem s = make_tile_smem(p, smem_raw, true);
    const uint32_t D = p.shape.n_hidden;
    bool first_tile = true;
    float loss_sum = 0.f;  // this thread's loss values (KernelArgs::loss_partial)
    bool din_bad = false;  // a non-finite dL/dinput stored (KernelArgs::nonfinite_flag)
    for (uint32_t tile = blockIdx.x; tile < p.n_tiles; tile += gridDim.x) {
        const uint32_t row0 = tile * s.rows;
        const uint32_t valid = min(s.rows, p.batch - row0);
        __syncthreads();
        load_input(p, s, row0, valid);
        if (p.l2_prefetch) {
            // dL/dout (or the target) of this tile is read after the forward
            // pass, the next tile's input at the next tile's start.
            prefetch_rows(p, p.loss == LossKind::FromGradient ? p.dout : p.target, p.shape.n_out, tile);
            prefetch_input_rows(p, tile + gridDim.x);
        }
        __syncthreads();
        for (uint32_t l = 0; l < D; ++l) {
            forward_hidden<W, MT>(p, s, l, true);
            __syncthreads();
        }
        output_layer<W, MT, EXTRAS>(p, s, row0, valid, true, loss_sum);
        __syncthreads();
        weight_gradient(p, s, D, first_tile);
        // backward_hidden(l) overwrites z_l, which weight_gradient(l + 1) reads:
        // a barrier between each pair.
        __syncthreads();
        for (uint32_t l = D; l-- > 0;) {
            backward_hidden<W, MT>(p, s, l);
            __syncthreads();
            weight_gradient(p, s, l, first_tile);
            if (l > 0) __syncthreads();
        }
        // Reads delta_0 only, like weight_gradient(0): no barrier needed.
        if (p.din != nullptr) backward_input<W, MT, EXTRAS>(p, s, row0, valid, din_bad);
        first_tile = false;
    }
    // One vote and at most one atomic per warp.
    if (EXTRAS && p.nonfinite_flag != nullptr && __any_sync(0xffffffffu, din_bad) && lane_id() == 0)
        atomicOr(p.nonfinite_flag, 1u);
    if (EXTRAS && p.loss_partial != nullptr) {
        // Lanes in a fixed butterfly, warps in order (through the input
        // tile's shared memory, free once every warp is past the last tile).
        double v = (double)loss_sum;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
        double* s_warp = reinterpret_cast<double*>(smem_raw);
        __syncthreads();
        if (lane_id() == 0) s_warp[warp_id()] = v;
        __syncthreads();
        if (threadIdx.x == 0) {
            double sum = 0.0;
            for (int w = 0; w < kWarps; ++w) sum += s_warp[w];
            p.loss_partial[blockIdx.x] = sum;
        }
    }
}

} // namespace fusedngp::gpu::detail
