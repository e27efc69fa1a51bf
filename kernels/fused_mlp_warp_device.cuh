// Register-resident, warp-independent inference kernel for the narrow widths
// (W = 16, 32, 64). See docs/FUSED_MLP_DESIGN.md, "Warp inference kernel".
//
// Each warp takes 16 * MT-row slabs of the batch (slab = global warp index +
// k * total warps: a persistent grid, no atomics) and runs the whole network
// on one slab with every activation in registers. (Tried on the H200 at
// 5d5c0bf: one contiguous, equal row range per warp, so that no last round of
// slabs leaves warps idle. 6 % slower at W = 16, batch 2^20 and 2^22: the
// round-robin order keeps all warps reading one region of memory at a time.)
//   * The m16n8k16 fp32 accumulator fragments of two adjacent n8 tiles cover
//     the same rows and 16 consecutive columns that one k16 A-operand
//     fragment of the next product needs, element for element: lane
//     (g = lane / 4, t = lane % 4) holds C rows g and g + 8, columns 2t, 2t+1
//     of each n8 tile, and A rows g and g + 8, columns 2t, 2t+1 (a0/a1) and
//     2t+8, 2t+9 (a2/a3) of the k16 tile. So act(z) in fp32 -> packed fp16 is
//     the next layer's A operand: no shared memory, no ldmatrix, no barrier.
//   * The input is read from global memory straight into that layout (fp32
//     pairs -> fp16), one slab ahead: the loads of slab k + 1 are issued
//     before slab k is computed, so their latency hides behind its products.
//     (An L2 prefetch of the slab after that, as the tile kernels do, cost
//     4-5 % at W 16-64 on the H200 at 5f48d88, so there is none.)
//   * The output layer's fp32 accumulators go through the output activation
//     to global memory (float2 stores when n_out is even).
//   * Weights are the forward fragment buffer of the block-tile kernels
//     (fragment order, one 8-byte load per lane and tile), read through the
//     read-only path (L1-resident) or, with SMEM_W, staged once per block in
//     shared memory (the kernel's only barrier is that one, at the start).
//   * Flavours (WarpFlavor, fused_mlp_warp_launch.h): ReLU compiled in,
//     16-byte input/output access through permuted edge layers, and a
//     cp.async input ring; flavour 0 is the kernel described above.
// The block-tile kernel (fused_mlp_device.cuh) stays for W >= 128, for
// inputs wider than 64 (n_in_pad / 16 > kMaxWarpInputTiles: the prefetched
// input would not fit in registers; FusedMlp::plan_warp_inference falls back
// there) and as FusedMlpTuning::tile_inference.
#pragma once

#include "activation_device.cuh"
#include "fused_mlp_args.h"
#include "fused_mlp_warp_launch.h"

#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>

namespace fusedngp::gpu::detail {

constexpr int kWarpKernelWarps = kWarpKernelThreads / 32;

__device__ __forceinline__ void warp_mma_16816(float (&c)[4], const uint32_t (&a)[4], uint2 b) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// One B fragment entry (already offset by lane) from shared or global memory.
// Shared: a plain load (the pointer derives from the kernel's shared array,
// so it compiles to LDS), which the compiler may hoist and batch like the
// global ones; an asm volatile LDS here kept every load in program order
// (H200, 5f48d88: W32 14.0 G/s with it against 15.3 through L1).
template <bool SMEM_W>
__device__ __forceinline__ uint2 load_b(const uint2* p) {
    if constexpr (SMEM_W) {
        return *p;
    } else {
        return __ldg(p);
    }
}

// The raw input of one slab, in A-fragment order: x[m][kt][i] is the pair
// (row m*16 + g + 8*(i%2), columns kt*16 + 2t + 8*(i/2) and +1): fp32 as
// float2 (SlabInput), fp16 as the two halves' bits (SlabHalfInput,
// kWarpHalfIo: already the A operand). Rows past the batch and columns past
// n_in read nothing and hold zeros.
template <int MT, int KT>
struct SlabInput {
    float2 x[MT][KT][4];
};
template <int MT, int KT>
struct SlabHalfInput {
    uint32_t x[MT][KT][4];
};

// The input pointer of a slab type: KernelArgs::in, or in_half for fp16.
template <int MT, int KT>
__device__ __forceinline__ const float* input_of(const KernelArgs& p, const SlabInput<MT, KT>&) { return p.in; }
template <int MT, int KT>
__device__ __forceinline__ const __half* input_of(const KernelArgs& p, const SlabHalfInput<MT, KT>&) {
    return p.in_half;
}

// f(m, h, row_ok, src) for each slab row of this lane: row row0 + m*16 + g +
// 8h (the A-fragment rows of m16 tile m), src its first input element,
// row_ok whether it lies inside the batch. Both input loaders walk rows this way.
template <int MT, typename T, typename F>
__device__ __forceinline__ void for_each_lane_row(const T* __restrict__ in, uint32_t n_in, uint32_t batch,
                                                  uint32_t row0, uint32_t lane, F&& f) {
    const uint32_t g = lane >> 2;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t r = row0 + m * 16u + g + 8u * h;
            f(m, h, r < batch, in + (size_t)r * n_in);
        }
}

// 16-byte streaming load: data touched once, so no L1 allocation.
__device__ __forceinline__ float4 ld_stream4(const float* p) {
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}

// 8-byte streaming load (fp16 data, touched once).
__device__ __forceinline__ uint2 ld_stream2(const __half* p) {
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

// One input half as raw bits (0 past the row's end).
__device__ __forceinline__ uint32_t half_bits_or_zero(const __half* src, uint32_t c, uint32_t n_in) {
    return c < n_in ? (uint32_t)__ldg(reinterpret_cast<const unsigned short*>(src) + c) : 0u;
}

// Columns c, c + 1 of a row (zeros past n_in): vec2, one access for the
// pair (n_in even, so c < n_in implies c + 1 < n_in; the pointer aligned to
// the pair), else element by element.
__device__ __forceinline__ float2 load_pair(const float* src, uint32_t c, uint32_t n_in, bool vec2) {
    float2 v = make_float2(0.f, 0.f);
    if (vec2) {
        if (c < n_in) v = __ldg(reinterpret_cast<const float2*>(src + c));
    } else {
        if (c < n_in) v.x = __ldg(src + c);
        if (c + 1 < n_in) v.y = __ldg(src + c + 1);
    }
    return v;
}
__device__ __forceinline__ uint32_t load_pair(const __half* src, uint32_t c, uint32_t n_in, bool vec2) {
    if (vec2) return c < n_in ? __ldg(reinterpret_cast<const unsigned int*>(src + c)) : 0u;
    return half_bits_or_zero(src, c, n_in) | half_bits_or_zero(src, c + 1, n_in) << 16;
}

// Columns c .. c + 3 of a row (zeros past n_in): vec4, one streaming load
// (n_in % 4 == 0, the pointer aligned to the four), else element by element.
__device__ __forceinline__ float4 load_quad(const float* src, uint32_t c, uint32_t n_in, bool vec4) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (vec4) {
        if (c < n_in) v = ld_stream4(src + c);
    } else {
        if (c < n_in) v.x = __ldg(src + c);
        if (c + 1 < n_in) v.y = __ldg(src + c + 1);
        if (c + 2 < n_in) v.z = __ldg(src + c + 2);
        if (c + 3 < n_in) v.w = __ldg(src + c + 3);
    }
    return v;
}
__device__ __forceinline__ uint2 load_quad(const __half* src, uint32_t c, uint32_t n_in, bool vec4) {
    if (vec4) return c < n_in ? ld_stream2(src + c) : make_uint2(0u, 0u);
    return make_uint2(half_bits_or_zero(src, c, n_in) | half_bits_or_zero(src, c + 1, n_in) << 16,
                      half_bits_or_zero(src, c + 2, n_in) | half_bits_or_zero(src, c + 3, n_in) << 16);
}

// The slab at row0 of `in` (fp32 or fp16, as the slab type) into registers.
template <template <int, int> class Slab, int MT, int KT, typename T>
__device__ __forceinline__ void load_slab_input(Slab<MT, KT>& s, const T* __restrict__ in, uint32_t n_in,
                                                uint32_t batch, uint32_t row0, bool vec2, uint32_t lane) {
    const uint32_t t = lane & 3u;
    for_each_lane_row<MT>(in, n_in, batch, row0, lane, [&](int m, int h, bool row_ok, const T* src) {
#pragma unroll
        for (int kt = 0; kt < KT; ++kt)
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const uint32_t c = kt * 16u + 2u * t + 8u * q;
                auto v = decltype(load_pair(src, c, n_in, vec2)){};
                if (row_ok) v = load_pair(src, c, n_in, vec2);
                s.x[m][kt][h + 2 * q] = v;
            }
    });
}

// kWarpVec4: physical column (within a 16-column group) of logical fragment
// column j. Lane t's logical columns 2t, 2t+1, 2t+8, 2t+9 map to 4t..4t+3.
__device__ __forceinline__ uint32_t vec4_column(uint32_t j) {
    return j < 8u ? 4u * (j >> 1) + (j & 1u) : 4u * ((j - 8u) >> 1) + 2u + (j & 1u);
}

// The four permuted input columns 4t..4t+3 of one row into the A-fragment
// pairs: (2t, 2t+1) -> x[h], (2t+8, 2t+9) -> x[h + 2].
template <int MT, int KT>
__device__ __forceinline__ void put_vec4(SlabInput<MT, KT>& s, int m, int kt, int h, float4 v) {
    s.x[m][kt][h] = make_float2(v.x, v.y);
    s.x[m][kt][h + 2] = make_float2(v.z, v.w);
}
template <int MT, int KT>
__device__ __forceinline__ void put_vec4(SlabHalfInput<MT, KT>& s, int m, int kt, int h, uint2 v) {
    s.x[m][kt][h] = v.x;
    s.x[m][kt][h + 2] = v.y;
}

// load_slab_input for kWarpVec4: one 16-byte (fp16: 8-byte) load per lane,
// row and k-tile, the lane's permuted columns 4t..4t+3.
template <template <int, int> class Slab, int MT, int KT, typename T>
__device__ __forceinline__ void load_slab_input_vec4(Slab<MT, KT>& s, const T* __restrict__ in, uint32_t n_in,
                                                     uint32_t batch, uint32_t row0, bool vec4, uint32_t lane) {
    const uint32_t t = lane & 3u;
    for_each_lane_row<MT>(in, n_in, batch, row0, lane, [&](int m, int h, bool row_ok, const T* src) {
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) {
            const uint32_t c = kt * 16u + 4u * t;
            auto v = decltype(load_quad(src, c, n_in, vec4)){};
            if (row_ok) v = load_quad(src, c, n_in, vec4);
            put_vec4(s, m, kt, h, v);
        }
    });
}

// The register loaders: the slab at row0 of p's input, fp32 or fp16 as the
// slab type.
template <bool VEC4, typename Slab>
__device__ __forceinline__ void load_slab(Slab& s, const KernelArgs& p, uint32_t row0, bool vec, uint32_t lane) {
    if constexpr (VEC4) load_slab_input_vec4(s, input_of(p, s), p.shape.n_in, p.batch, row0, vec, lane);
    else load_slab_input(s, input_of(p, s), p.shape.n_in, p.batch, row0, vec, lane);
}

// ---- kWarpStage: the per-warp cp.async input ring ----
// A slab is 16 * MT rows of n_in = 16 * KT floats, contiguous in global
// memory, stored in shared memory at the same row pitch with the 16-byte
// chunks of odd rows XOR-swapped by 4 (KT >= 2): a lane-quad reads 64
// contiguous bytes of rows g and the eight rows of one read then fall on
// both bank halves (4 wavefronts for 512 bytes, the minimum).
template <int MT, int KT>
struct StageSlab {
    static constexpr uint32_t kChunksPerRow = 4u * KT;
    static constexpr uint32_t kChunks = 16u * MT * kChunksPerRow;
    static constexpr uint32_t kFloats = kChunks * 4u;
    __device__ static uint32_t chunk(uint32_t r, uint32_t c) {
        return r * kChunksPerRow + (KT >= 2 ? c ^ ((r & 1u) << 2) : c);
    }
};

// Issues the copies of the slab at row0 (rows past the batch: none) and
// commits them as one group, empty or not, so that wait_group counts slabs.
template <int MT, int KT>
__device__ __forceinline__ void issue_stage(float* buf, const float* __restrict__ in, uint32_t batch, uint32_t row0,
                                            bool live, bool aligned, uint32_t lane) {
    using S = StageSlab<MT, KT>;
    if (live) {
        const float* src = in + (size_t)row0 * (16u * KT);
        const uint32_t base = (uint32_t)__cvta_generic_to_shared(buf);
#pragma unroll
        for (uint32_t j = 0; j < S::kChunks / 32u; ++j) {
            const uint32_t i = lane + 32u * j, r = i / S::kChunksPerRow, c = i % S::kChunksPerRow;
            if (row0 + r >= batch) continue;
            const uint32_t dst = base + S::chunk(r, c) * 16u;
            const float* s4 = src + (size_t)i * 4u;
            if (aligned) {
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(s4));
            } else {
#pragma unroll
                for (uint32_t e = 0; e < 4; ++e)
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 4u * e), "l"(s4 + e));
            }
        }
    }
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void wait_stage() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// The staged slab into A-fragment order (permuted as kWarpVec4). Rows past
// the batch were not copied and read as zeros.
template <int MT, int KT>
__device__ __forceinline__ void read_stage(SlabInput<MT, KT>& s, const float* buf, uint32_t batch, uint32_t row0,
                                           uint32_t lane) {
    using S = StageSlab<MT, KT>;
    const uint32_t g = lane >> 2, t = lane & 3u;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t r = m * 16u + g + 8u * h;
            const bool row_ok = row0 + r < batch;
#pragma unroll
            for (int kt = 0; kt < KT; ++kt) {
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (row_ok) v = *reinterpret_cast<const float4*>(buf + S::chunk(r, kt * 4u + t) * 4u);
                put_vec4(s, m, kt, h, v);
            }
        }
}

// acc[m][n] = A[m] (16 x 16*KT, registers) * B (16*KT x 8*NT, fragment
// order with kt_count k-tiles per n-tile; only the first kt_used k-tiles are
// multiplied: the rest of A is zero padding with no B behind it).
template <int MT, int KT, int NT, bool SMEM_W>
__device__ __forceinline__ void warp_layer(float (&acc)[MT][NT][4], const uint32_t (&a)[MT][KT][4],
                                           const uint2* b_lane, uint32_t kt_count, uint32_t kt_used) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.f;
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
        if ((uint32_t)kt >= kt_used) break;
        uint2 b[NT];
#pragma unroll
        for (int n = 0; n < NT; ++n) b[n] = load_b<SMEM_W>(b_lane + ((size_t)n * kt_count + kt) * 32u);
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int n = 0; n < NT; ++n) warp_mma_16816(acc[m][n], a[m][kt], b[n]);
    }
}

// h = fp16(act(acc)), re-laid out as the A fragments of the next product:
// n8 tiles 2j and 2j+1 become k16 tile j.
// RELU: the activation is ReLU, whatever act says (kWarpRelu).
template <int MT, int NT, bool RELU>
__device__ __forceinline__ void activate_to_a(uint32_t (&h)[MT][NT / 2][4], float (&acc)[MT][NT][4], Activation act) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                float2 v = make_float2(acc[m][n][2 * p], acc[m][n][2 * p + 1]);
                if (RELU || act == Activation::ReLU) {
                    v.x = fmaxf(v.x, 0.f);
                    v.y = fmaxf(v.y, 0.f);
                } else if (act != Activation::None) {
                    v = activation_value_pair_slow(act, v);
                }
                h[m][n / 2][(n % 2) * 2 + p] = pack_half2(v.x, v.y);
            }
}

// The whole forward fragment buffer (n_params_padded halves, a multiple of
// 256) into shared memory. VEC4: layer 0 and the output layer permuted as
// kWarpVec4 needs (B'[k][n] = B[vec4_column(k)][n] for layer 0, B'[k][n] =
// B[k][vec4_column(n)] for the output layer, per 16-wide group), 8 bytes per
// thread and step; the hidden layers are copied as they are, 16 bytes per step.
template <int W, bool VEC4>
__device__ __forceinline__ void stage_weights(uint2* dst, const uint2* __restrict__ src, const MlpShape& sh) {
    const uint32_t n8 = (uint32_t)(n_params_padded(sh) / 4u);  // uint2 entries
    if constexpr (!VEC4) {
        for (uint32_t i = threadIdx.x; i < n8 / 2u; i += blockDim.x)
            reinterpret_cast<uint4*>(dst)[i] = __ldg(reinterpret_cast<const uint4*>(src) + i);
        return;
    }
    constexpr uint32_t KT = W / 16;
    const uint32_t l0_end = (uint32_t)frag_offset(sh, 1), out_begin = (uint32_t)frag_offset(sh, sh.n_hidden);
    for (uint32_t i = threadIdx.x; i < n8; i += blockDim.x) {
        const uint32_t lane = i & 31u, g = lane >> 2, t = lane & 3u;
        uint2 v;
        if (i < l0_end) {
            // Lane (g, t) needs B rows 4t, 4t+1 (b0 b1) and 4t+2, 4t+3 (b2 b3)
            // of column g: halves of the .x (k < 8) or .y (k >= 8) word of
            // lanes (g, 2t) and (g, 2t+1), or (g, 2t-4) and (g, 2t-3).
            const uint32_t base = (i & ~31u) + 4u * g;
            if (t < 2) {
                v.x = __ldg(&src[base + 2u * t].x);
                v.y = __ldg(&src[base + 2u * t + 1u].x);
            } else {
                v.x = __ldg(&src[base + 2u * t - 4u].y);
                v.y = __ldg(&src[base + 2u * t - 3u].y);
            }
        } else if (i >= out_begin) {
            // Output tile nt = 2 * chunk + n, column g of it is logical column
            // 8n + g of the chunk: take physical column vec4_column(8n + g).
            const uint32_t tile = (i - out_begin) >> 5, nt = tile / KT, kt = tile % KT;
            const uint32_t col = vec4_column(8u * (nt & 1u) + g);
            const uint32_t src_nt = (nt & ~1u) + (col >> 3);
            v = __ldg(&src[out_begin + (src_nt * KT + kt) * 32u + (col & 7u) * 4u + t]);
        } else {
            v = __ldg(&src[i]);
        }
        dst[i] = v;
    }
}

// f(r, y) for each batch row r of the slab this lane holds output for: y[n]
// the lane's two columns of n8 tile n of the chunk, through the output
// activation (none compiled in for RELU).
template <int MT, bool RELU, typename F>
__device__ __forceinline__ void for_each_output_row(const float (&o)[MT][2][4], uint32_t batch, uint32_t row0,
                                                    Activation out_act, uint32_t lane, F&& f) {
    const uint32_t g = lane >> 2;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
            const uint32_t r = row0 + m * 16u + g + 8u * hh;
            if (r >= batch) continue;
            float2 y[2];
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                y[n] = make_float2(o[m][n][2 * hh], o[m][n][2 * hh + 1]);
                if (!RELU) y[n] = activation_value_pair(out_act, y[n]);
            }
            f(r, y);
        }
}

// One 16-column output chunk of the slab (o: its two n8 tiles) through the
// output activation to global memory. VEC4: the lane's columns are the
// permuted 4t..4t+3, one 16-byte store per row when n_out % 4 == 0 and the
// pointer is aligned; otherwise float2 (n_out even) or scalar stores.
template <int MT, bool VEC4, bool RELU>
__device__ __forceinline__ void store_output(const float (&o)[MT][2][4], float* __restrict__ out, uint32_t n_out,
                                             uint32_t batch, uint32_t row0, uint32_t chunk, Activation out_act,
                                             bool vec_out, uint32_t lane) {
    const uint32_t t = lane & 3u;
    for_each_output_row<MT, RELU>(o, batch, row0, out_act, lane, [&](uint32_t r, const float2 (&y)[2]) {
        float* dst = out + (size_t)r * n_out;
        if constexpr (VEC4) {
            const uint32_t c = chunk * 16u + 4u * t;
            if (vec_out) {
                if (c < n_out) __stcs(reinterpret_cast<float4*>(dst + c), make_float4(y[0].x, y[0].y, y[1].x, y[1].y));
            } else {
#pragma unroll
                for (uint32_t e = 0; e < 4; ++e)
                    if (c + e < n_out) dst[c + e] = (e & 1u) ? y[e >> 1].y : y[e >> 1].x;
            }
        } else {
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                if (vec_out) {
                    if (c < n_out) __stcs(reinterpret_cast<float2*>(dst + c), y[n]);
                } else {
                    if (c < n_out) dst[c] = y[n].x;
                    if (c + 1 < n_out) dst[c + 1] = y[n].y;
                }
            }
        }
    });
}

// store_output for fp16 output (kWarpHalfIo): each value rounded once; VEC4
// one 8-byte store per row (n_out % 4 == 0, pointer 8-byte aligned), else a
// 4-byte store per pair (n_out even, 4-byte aligned), else half by half.
template <int MT, bool VEC4, bool RELU>
__device__ __forceinline__ void store_output_half(const float (&o)[MT][2][4], __half* __restrict__ out, uint32_t n_out,
                                                  uint32_t batch, uint32_t row0, uint32_t chunk, Activation out_act,
                                                  bool vec_out, uint32_t lane) {
    const uint32_t t = lane & 3u;
    for_each_output_row<MT, RELU>(o, batch, row0, out_act, lane, [&](uint32_t r, const float2 (&y)[2]) {
        __half* dst = out + (size_t)r * n_out;
        if constexpr (VEC4) {
            const uint32_t c = chunk * 16u + 4u * t;
            if (vec_out) {
                if (c < n_out)
                    __stcs(reinterpret_cast<uint2*>(dst + c), make_uint2(pack_half2(y[0].x, y[0].y), pack_half2(y[1].x, y[1].y)));
            } else {
#pragma unroll
                for (uint32_t e = 0; e < 4; ++e)
                    if (c + e < n_out) dst[c + e] = __float2half_rn((e & 1u) ? y[e >> 1].y : y[e >> 1].x);
            }
        } else {
#pragma unroll
            for (int n = 0; n < 2; ++n) {
                const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                if (vec_out) {
                    if (c < n_out) __stcs(reinterpret_cast<unsigned int*>(dst + c), pack_half2(y[n].x, y[n].y));
                } else {
                    if (c < n_out) dst[c] = __float2half_rn(y[n].x);
                    if (c + 1 < n_out) dst[c + 1] = __float2half_rn(y[n].y);
                }
            }
        }
    });
}

// The network on one slab whose converted input is a_in.
template <int W, int MT, int KT_IN, bool SMEM_W, bool VEC4, bool RELU, bool HALF>
__device__ __forceinline__ void warp_slab_forward(const KernelArgs& p, const uint2* weights,
                                                  uint32_t (&a_in)[MT][KT_IN][4], uint32_t row0, bool vec_out,
                                                  uint32_t lane) {
    constexpr int NT = W / 8;   // n8 tiles of a hidden layer
    constexpr int KT = W / 16;  // k16 tiles of a hidden layer's input
    const MlpShape& sh = p.shape;
    const uint32_t kt_in = sh.n_in_pad / 16u, D = sh.n_hidden;
    float acc[MT][NT][4];
    uint32_t h[MT][KT][4];
    warp_layer<MT, KT_IN, NT, SMEM_W>(acc, a_in, weights + lane, kt_in, kt_in);
    activate_to_a<MT, NT, RELU>(h, acc, sh.hidden_act);
#pragma unroll 1
    for (uint32_t l = 1; l < D; ++l) {
        warp_layer<MT, KT, NT, SMEM_W>(acc, h, weights + frag_offset(sh, l) + lane, KT, KT);
        activate_to_a<MT, NT, RELU>(h, acc, sh.hidden_act);
    }
    const uint2* b_out = weights + frag_offset(sh, D) + lane;
    const uint32_t out_chunks = sh.n_out_pad / 16u;
#pragma unroll 1
    for (uint32_t chunk = 0; chunk < out_chunks; ++chunk) {
        float o[MT][2][4];
        warp_layer<MT, KT, 2, SMEM_W>(o, h, b_out + (size_t)chunk * 2u * KT * 32u, KT, KT);
        if constexpr (HALF)
            store_output_half<MT, VEC4, RELU>(o, p.out_half, sh.n_out, p.batch, row0, chunk, sh.output_act, vec_out, lane);
        else
            store_output<MT, VEC4, RELU>(o, p.out, sh.n_out, p.batch, row0, chunk, sh.output_act, vec_out, lane);
    }
}

template <int MT, int KT_IN>
__device__ __forceinline__ void convert_input(uint32_t (&a_in)[MT][KT_IN][4], const SlabInput<MT, KT_IN>& x) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int kt = 0; kt < KT_IN; ++kt)
#pragma unroll
            for (int i = 0; i < 4; ++i) a_in[m][kt][i] = pack_half2(x.x[m][kt][i].x, x.x[m][kt][i].y);
}
// fp16 input: already the A operand.
template <int MT, int KT_IN>
__device__ __forceinline__ void convert_input(uint32_t (&a_in)[MT][KT_IN][4], const SlabHalfInput<MT, KT_IN>& x) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int kt = 0; kt < KT_IN; ++kt)
#pragma unroll
            for (int i = 0; i < 4; ++i) a_in[m][kt][i] = x.x[m][kt][i];
}

template <int W, int MT, int KT_IN, bool SMEM_W, int FLAVOR>
__global__ void __launch_bounds__(kWarpKernelThreads) fused_mlp_warp_inference_kernel(const KernelArgs p) {
    constexpr bool RELU = (FLAVOR & kWarpRelu) != 0;
    constexpr bool VEC4 = (FLAVOR & kWarpVec4) != 0;
    constexpr bool STAGE = (FLAVOR & kWarpStage) != 0;
    constexpr bool HALF = (FLAVOR & kWarpHalfIo) != 0;
    static_assert(!VEC4 || SMEM_W, "the permuted edge layers are made while staging the weights");
    static_assert(!STAGE || VEC4, "the stage ring is read in the permuted order");
    static_assert(!(STAGE && HALF), "the stage ring holds fp32 input");
    constexpr uint32_t kSlabRows = 16u * MT;
    constexpr int kStages = warp_stage_slabs(MT);
    using Stage = StageSlab<MT, KT_IN>;
    const MlpShape& sh = p.shape;
    const uint32_t lane = threadIdx.x & 31u;

    const uint32_t n_slabs = (p.batch + kSlabRows - 1) / kSlabRows;
    const uint32_t warps = gridDim.x * kWarpKernelWarps;
    uint32_t slab = blockIdx.x * kWarpKernelWarps + (threadIdx.x >> 5);

    const uint32_t n_in = sh.n_in, n_out = sh.n_out;
    // Vector accesses of 4 (VEC4) or 2 elements where the row length and
    // the pointer allow them.
    const uint32_t vec_elems = VEC4 ? 4u : 2u, vec_bytes = vec_elems * (HALF ? 2u : 4u);
    const uintptr_t in_addr = HALF ? reinterpret_cast<uintptr_t>(p.in_half) : reinterpret_cast<uintptr_t>(p.in);
    const uintptr_t out_addr = HALF ? reinterpret_cast<uintptr_t>(p.out_half) : reinterpret_cast<uintptr_t>(p.out);
    const bool vec_in = n_in % vec_elems == 0 && in_addr % vec_bytes == 0;
    const bool vec_out = n_out % vec_elems == 0 && out_addr % vec_bytes == 0;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    // kWarpStage: this warp's ring, after the weights.
    float* ring = reinterpret_cast<float*>(smem_raw + n_params_padded(sh) * 2u) +
                  (threadIdx.x >> 5) * (uint32_t)kStages * Stage::kFloats;

    // The first slab's loads (or the whole ring's) go out before the
    // weights are staged, so the two memory latencies overlap.
    std::conditional_t<HALF, SlabHalfInput<MT, KT_IN>, SlabInput<MT, KT_IN>> next;
    if constexpr (STAGE) {
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            const uint32_t sl = slab + (uint32_t)s * warps;
            issue_stage<MT, KT_IN>(ring + s * Stage::kFloats, p.in, p.batch, sl * kSlabRows, sl < n_slabs, vec_in, lane);
        }
    } else if (slab < n_slabs) {
        load_slab<VEC4>(next, p, slab * kSlabRows, vec_in, lane);
    }

    const uint2* weights = p.w_fwd;
    if constexpr (SMEM_W) {
        stage_weights<W, VEC4>(reinterpret_cast<uint2*>(smem_raw), p.w_fwd, sh);
        __syncthreads();  // the kernel's only barrier
        weights = reinterpret_cast<const uint2*>(smem_raw);
    }
    if (slab >= n_slabs) return;

    for (uint32_t k = 0; slab < n_slabs; slab += warps, ++k) {
        const uint32_t row0 = slab * kSlabRows;
        // This slab's input, converted; then the next slab's loads go out.
        uint32_t a_in[MT][KT_IN][4];
        if constexpr (STAGE) {
            float* buf = ring + (k % kStages) * Stage::kFloats;
            wait_stage<kStages - 1>();
            __syncwarp();  // every lane's copies of this slab have landed
            read_stage(next, buf, p.batch, row0, lane);
            convert_input(a_in, next);
            __syncwarp();  // every lane has read the buffer before it is refilled
            const uint32_t ahead = slab + (uint32_t)kStages * warps;
            issue_stage<MT, KT_IN>(buf, p.in, p.batch, ahead * kSlabRows, ahead < n_slabs, vec_in, lane);
        } else {
            convert_input(a_in, next);
            if (slab + warps < n_slabs) load_slab<VEC4>(next, p, (slab + warps) * kSlabRows, vec_in, lane);
        }
        warp_slab_forward<W, MT, KT_IN, SMEM_W, VEC4, RELU, HALF>(p, weights, a_in, row0, vec_out, lane);
    }
    if constexpr (STAGE) wait_stage<0>();  // no copy outlives the kernel
}

} // namespace fusedngp::gpu::detail
