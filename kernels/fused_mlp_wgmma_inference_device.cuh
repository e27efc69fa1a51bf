// The wgmma inference kernel of the fully fused MLP (Hopper, sm_90a only):
// the same contract as the block-tile inference kernel (KernelArgs in; out
// or out_half written, in or in_half read), for the shapes
// wgmma_inference_shape_supported accepts: W = 64 or 128, hidden ReLU, any
// output activation, n_in <= 64, n_out <= 16, and as many hidden layers as
// the weight images fit in shared memory (W = 128: up to 7).
//
// The forward chain of the wgmma training kernel without anything kept for a
// backward pass: per warpgroup, 64 rows, A from registers (the input as it
// is loaded, then each layer's fp16(ReLU(z)) through the accumulator-to-A
// identity), B the K-major weight images in shared memory, loaded once per
// block. No activation touches shared memory, so the warpgroups never
// synchronise: each takes 64-row chunks round-robin (chunk = g + WG *
// blockIdx.x + k * WG * gridDim.x) and loads its next chunk's input while
// the current one runs through the layers. Several warpgroups per block
// share one copy of the weights; the tensor cores stay busy while one
// warpgroup waits for its product or converts accumulators.
// Readable reference of the same math: kernels/mlp_reference.h.
#pragma once

#include "activation_device.cuh"
#include "fused_mlp_wgmma_device.cuh"
#include "mlp_reference.h"  // the host path of output_activation

namespace fusedngp::gpu::wgmma_inference {

using namespace fusedngp::gpu::wgmma;
using wgmma_train::Images;
using wgmma_train::SmemLayout;

constexpr int kOutPad = wgmma_train::kOutPad;

// The training layout's weight part: W_0 (one 64-wide k block of 128-byte
// rows), the hidden matrices, the output layer; no transposed W_0, no
// activations. Every size is a multiple of 1024 (swizzle atoms).
__host__ __device__ constexpr SmemLayout inference_layout(int width, int hidden_layers) {
    SmemLayout s{};
    s.w0 = 0;
    s.w_hidden = s.w0 + uint32_t(width) * 128u;
    s.w0t = s.w_hidden;  // unused
    s.w_out = s.w_hidden + uint32_t(hidden_layers - 1) * wgmma_train::hidden_weight_bytes(width);
    s.total = s.w_out + uint32_t(width / 64) * kOutPad * 128u;
    s.x = s.h = s.d_out = s.delta = s.scratch = s.total;
    return s;
}

__host__ __device__ constexpr size_t inference_smem_bytes_for(int width, int hidden_layers) {
    return size_t(inference_layout(width, hidden_layers).total) + 1024u;  // + alignment slack
}

// W_0's image is read up to KIN columns, past n_in_pad: zero it first. The
// other images are written whole.
template <int W, int KIN, int THREADS>
__device__ __forceinline__ void load_weight_images(const KernelArgs& p, uint8_t* smem, const SmemLayout& L) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    for (uint32_t i = threadIdx.x; i < L.w_hidden / 16u; i += THREADS) reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    wgmma_train::scatter_fragments(p.w_fwd + frag_offset(s, 0), s.n_in_pad, W, smem + L.w0, W, KIN, THREADS);
    for (uint32_t l = 1; l < D; ++l)
        wgmma_train::scatter_fragments(p.w_fwd + frag_offset(s, l), W, W,
                                       smem + L.w_hidden + (l - 1) * wgmma_train::hidden_weight_bytes(W), W, W, THREADS);
    wgmma_train::scatter_fragments(p.w_fwd + frag_offset(s, D), W, kOutPad, smem + L.w_out, kOutPad, W, THREADS);
    fence_proxy_async_shared();  // wgmma reads these through the async proxy
    __syncthreads();
}

// y = the output layer's pre-activation (m64n16) for this warpgroup's rows.
template <int W, int KIN>
__device__ __forceinline__ void forward_chain(uint32_t base, const Images<W>& im, uint32_t D,
                                              uint32_t (&xa)[KIN / 16][4], float (&y)[8]) {
    float acc[W / 2];
    uint32_t ha[W / 16][4];
    wgmma_train::product_rs<0>(acc, xa, wgmma_train::forward_weight<W, KIN>(base, im, 0, D));
    wgmma_train::relu_to_fragments(acc, ha);
    for (uint32_t l = 1; l < D; ++l) {
        wgmma_train::product_rs<0>(acc, ha, wgmma_train::forward_weight<W, KIN>(base, im, l, D));
        wgmma_train::relu_to_fragments(acc, ha);
    }
    wgmma_train::product_rs<0>(y, ha, wgmma_train::forward_weight<W, KIN>(base, im, D, D));
}

// The store and activation helpers are host-callable too: the emulation
// test (tests/gpu/test_wgmma_train_emulate.cu) checks the paired stores (and
// the paired loads of wgmma_train::load_input_fragments) against the scalar
// ones without a GPU.
FUSEDNGP_WGMMA_HD float2 output_activation(Activation a, float2 v) {
#if defined(__CUDA_ARCH__)
    return detail::activation_value_pair(a, v);
#else
    return make_float2(float(reference::activation(a, v.x)), float(reference::activation(a, v.y)));
#endif
}

// The output activation, then y to out (fp32) or out_half, two adjacent
// columns per store where n_out is even and the pointer aligned for it.
FUSEDNGP_WGMMA_HD void store_outputs(const KernelArgs& p, const float (&y)[8], uint32_t row0, int valid, int t,
                                     bool pairs) {
    const uint32_t n_out = p.shape.n_out;
FUSEDNGP_UNROLL
    for (int i = 0; i < 8; i += 2) {
        const RowCol pos = accumulator_position(t, i);  // register i + 1: column + 1
        if (pos.row >= valid || uint32_t(pos.col) >= n_out) continue;
        const float2 v = output_activation(p.shape.output_act, make_float2(y[i], y[i + 1]));
        const size_t idx = size_t(row0 + pos.row) * n_out + pos.col;
        const bool second = uint32_t(pos.col) + 1u < n_out;
        if (p.out_half != nullptr) {
            if (pairs) {
                *reinterpret_cast<__half2*>(p.out_half + idx) = __floats2half2_rn(v.x, v.y);
                continue;
            }
            p.out_half[idx] = __float2half_rn(v.x);
            if (second) p.out_half[idx + 1] = __float2half_rn(v.y);
            continue;
        }
        if (pairs) {
            *reinterpret_cast<float2*>(p.out + idx) = v;
            continue;
        }
        p.out[idx] = v.x;
        if (second) p.out[idx + 1] = v.y;
    }
}

// Rows of chunk c inside the batch: 0 past it, else up to 64.
__device__ __forceinline__ int chunk_rows(const KernelArgs& p, uint32_t c) {
    if (c >= p.n_tiles) return 0;
    return int(min(p.batch - c * uint32_t(kWarpgroupRows), uint32_t(kWarpgroupRows)));
}

// p.n_tiles counts 64-row chunks (rows_per_tile = 64).
template <int W, int KIN, int WARPGROUPS>
__global__ void __launch_bounds__(WARPGROUPS * kWarpgroupThreads, 1) fused_mlp_wgmma_inference_kernel(const KernelArgs p) {
#if FUSEDNGP_WGMMA_AVAILABLE
    constexpr int kThreads = WARPGROUPS * kWarpgroupThreads;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);  // swizzle atoms: 1024-aligned
    const uint32_t D = p.shape.n_hidden;
    const Images<W> im{inference_layout(W, int(D))};
    load_weight_images<W, KIN, kThreads>(p, smem, im.L);
    const uint32_t base = shared_address(smem);
    const int g = int(threadIdx.x) / kWarpgroupThreads, t = int(threadIdx.x) % kWarpgroupThreads;
    const uint32_t stride = gridDim.x * uint32_t(WARPGROUPS);
    const size_t out_bytes = p.out_half != nullptr ? sizeof(__half) : sizeof(float);
    const uintptr_t out_address = p.out_half != nullptr ? reinterpret_cast<uintptr_t>(p.out_half)
                                                        : reinterpret_cast<uintptr_t>(p.out);
    const bool pairs = p.shape.n_out % 2u == 0u && out_address % (2u * out_bytes) == 0u;
    const size_t in_bytes = p.in_half != nullptr ? sizeof(__half) : sizeof(float);
    const uintptr_t in_address = p.in_half != nullptr ? reinterpret_cast<uintptr_t>(p.in_half)
                                                      : reinterpret_cast<uintptr_t>(p.in);
    const bool in_pairs = p.shape.n_in % 2u == 0u && in_address % (2u * in_bytes) == 0u;

    uint32_t c = blockIdx.x * uint32_t(WARPGROUPS) + uint32_t(g);
    uint32_t xa[KIN / 16][4];
    wgmma_train::load_input_fragments<KIN>(p, c * kWarpgroupRows, chunk_rows(p, c), t, xa, in_pairs);
    // The next chunk's loads are in flight while this one runs. (Keeping
    // them raw until the chunk is done, as the training kernels do, measured
    // no faster here: H100, bf9fdc2.)
    for (; c < p.n_tiles; c += stride) {
        uint32_t next[KIN / 16][4];
        wgmma_train::load_input_fragments<KIN>(p, (c + stride) * kWarpgroupRows, chunk_rows(p, c + stride), t, next,
                                               in_pairs);
        float y[8];
        forward_chain<W, KIN>(base, im, D, xa, y);
        store_outputs(p, y, c * kWarpgroupRows, chunk_rows(p, c), t, pairs);
FUSEDNGP_UNROLL
        for (int s = 0; s < KIN / 16; ++s)
FUSEDNGP_UNROLL
            for (int r = 0; r < 4; ++r) xa[s][r] = next[s][r];
    }
#else
    (void)p;
    __trap();  // built without sm_90a: the host never selects this kernel (wgmma_train_device_ok)
#endif
}

} // namespace fusedngp::gpu::wgmma_inference
