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
//     4-5 % at W 16-64 in run 1: removed.)
//   * The output layer's fp32 accumulators go through the output activation
//     to global memory (float2 stores when n_out is even).
//   * Weights are the forward fragment buffer of the block-tile kernels
//     (fragment order, one 8-byte load per lane and tile), read through the
//     read-only path (L1-resident) or, with SMEM_W, staged once per block in
//     shared memory (the kernel's only barrier is that one, at the start).
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
// (run 1: W32 14.0 G/s with it against 15.3 through L1).
template <bool SMEM_W>
__device__ __forceinline__ uint2 load_b(const uint2* p) {
    if constexpr (SMEM_W) {
        return *p;
    } else {
        return __ldg(p);
    }
}

// The raw fp32 input of one slab, in A-fragment order: x[m][kt][i] is the pair
// (row m*16 + g + 8*(i%2), columns kt*16 + 2t + 8*(i/2) and +1). Rows past the
// batch and columns past n_in read nothing and hold zeros.
template <int MT, int KT>
struct SlabInput {
    float2 x[MT][KT][4];
};

template <int MT, int KT>
__device__ __forceinline__ void load_slab_input(SlabInput<MT, KT>& s, const float* __restrict__ in, uint32_t n_in,
                                                uint32_t batch, uint32_t row0, bool vec2, uint32_t lane) {
    const uint32_t g = lane >> 2, t = lane & 3u;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t r = row0 + m * 16u + g + 8u * h;
            const bool row_ok = r < batch;
            const float* src = in + (size_t)r * n_in;
#pragma unroll
            for (int kt = 0; kt < KT; ++kt)
#pragma unroll
                for (int q = 0; q < 2; ++q) {
                    const uint32_t c = kt * 16u + 2u * t + 8u * q;
                    float2 v = make_float2(0.f, 0.f);
                    if (row_ok) {
                        if (vec2) {
                            // n_in even: c < n_in implies c + 1 < n_in.
                            if (c < n_in) v = __ldg(reinterpret_cast<const float2*>(src + c));
                        } else {
                            if (c < n_in) v.x = __ldg(src + c);
                            if (c + 1 < n_in) v.y = __ldg(src + c + 1);
                        }
                    }
                    s.x[m][kt][h + 2 * q] = v;
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
template <int MT, int NT>
__device__ __forceinline__ void activate_to_a(uint32_t (&h)[MT][NT / 2][4], float (&acc)[MT][NT][4], Activation act) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                float2 v = make_float2(acc[m][n][2 * p], acc[m][n][2 * p + 1]);
                if (act == Activation::ReLU) {
                    v.x = fmaxf(v.x, 0.f);
                    v.y = fmaxf(v.y, 0.f);
                } else if (act != Activation::None) {
                    v = activation_value_pair_slow(act, v);
                }
                h[m][n / 2][(n % 2) * 2 + p] = pack_half2(v.x, v.y);
            }
}

template <int W, int MT, int KT_IN, bool SMEM_W>
__global__ void __launch_bounds__(kWarpKernelThreads) fused_mlp_warp_inference_kernel(const KernelArgs p) {
    constexpr int NT = W / 8;   // n8 tiles of a hidden layer
    constexpr int KT = W / 16;  // k16 tiles of a hidden layer's input
    constexpr uint32_t kSlabRows = 16u * MT;
    const MlpShape& sh = p.shape;
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t g = lane >> 2, t = lane & 3u;

    const uint32_t n_slabs = (p.batch + kSlabRows - 1) / kSlabRows;
    const uint32_t warps = gridDim.x * kWarpKernelWarps;
    uint32_t slab = blockIdx.x * kWarpKernelWarps + (threadIdx.x >> 5);

    const uint32_t n_in = sh.n_in, n_out = sh.n_out, D = sh.n_hidden;
    const uint32_t kt_in = sh.n_in_pad / 16u;
    const bool vec2_in = n_in % 2u == 0 && reinterpret_cast<uintptr_t>(p.in) % 8u == 0;
    const bool vec2_out = n_out % 2u == 0 && reinterpret_cast<uintptr_t>(p.out) % 8u == 0;
    const Activation hidden_act = sh.hidden_act, out_act = sh.output_act;
    const uint32_t out_chunks = sh.n_out_pad / 16u;

    // The first slab's loads go out before the weights are staged, so the
    // two memory latencies overlap.
    SlabInput<MT, KT_IN> next;
    if (slab < n_slabs) load_slab_input(next, p.in, n_in, p.batch, slab * kSlabRows, vec2_in, lane);

    const uint2* weights = p.w_fwd;
    if constexpr (SMEM_W) {
        // The whole forward fragment buffer (n_params_padded halves, a
        // multiple of 256) into shared memory, 16 bytes per thread and step.
        extern __shared__ __align__(16) unsigned char smem_raw[];
        uint4* dst = reinterpret_cast<uint4*>(smem_raw);
        const uint4* src = reinterpret_cast<const uint4*>(p.w_fwd);
        const uint32_t n16 = (uint32_t)(n_params_padded(sh) * 2u / 16u);
        for (uint32_t i = threadIdx.x; i < n16; i += blockDim.x) dst[i] = __ldg(src + i);
        __syncthreads();  // the kernel's only barrier
        weights = reinterpret_cast<const uint2*>(smem_raw);
    }
    if (slab >= n_slabs) return;

    for (; slab < n_slabs; slab += warps) {
        const uint32_t row0 = slab * kSlabRows;
        // This slab's input, converted; then the next slab's loads go out.
        uint32_t a_in[MT][KT_IN][4];
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int kt = 0; kt < KT_IN; ++kt)
#pragma unroll
                for (int i = 0; i < 4; ++i) a_in[m][kt][i] = pack_half2(next.x[m][kt][i].x, next.x[m][kt][i].y);
        if (slab + warps < n_slabs) load_slab_input(next, p.in, n_in, p.batch, (slab + warps) * kSlabRows, vec2_in, lane);

        float acc[MT][NT][4];
        uint32_t h[MT][KT][4];
        warp_layer<MT, KT_IN, NT, SMEM_W>(acc, a_in, weights + lane, kt_in, kt_in);
        activate_to_a<MT, NT>(h, acc, hidden_act);
#pragma unroll 1
        for (uint32_t l = 1; l < D; ++l) {
            warp_layer<MT, KT, NT, SMEM_W>(acc, h, weights + frag_offset(sh, l) + lane, KT, KT);
            activate_to_a<MT, NT>(h, acc, hidden_act);
        }

        const uint2* b_out = weights + frag_offset(sh, D) + lane;
#pragma unroll 1
        for (uint32_t chunk = 0; chunk < out_chunks; ++chunk) {
            float o[MT][2][4];
            warp_layer<MT, KT, 2, SMEM_W>(o, h, b_out + (size_t)chunk * 2u * KT * 32u, KT, KT);
#pragma unroll
            for (int m = 0; m < MT; ++m)
#pragma unroll
                for (int hh = 0; hh < 2; ++hh) {
                    const uint32_t r = row0 + m * 16u + g + 8u * hh;
                    if (r >= p.batch) continue;
                    float* dst = p.out + (size_t)r * n_out;
#pragma unroll
                    for (int n = 0; n < 2; ++n) {
                        const uint32_t c = chunk * 16u + n * 8u + 2u * t;
                        const float2 y = activation_value_pair(out_act, make_float2(o[m][n][2 * hh], o[m][n][2 * hh + 1]));
                        if (vec2_out) {
                            if (c < n_out) __stcs(reinterpret_cast<float2*>(dst + c), y);
                        } else {
                            if (c < n_out) dst[c] = y.x;
                            if (c + 1 < n_out) dst[c + 1] = y.y;
                        }
                    }
                }
        }
    }
}

} // namespace fusedngp::gpu::detail
