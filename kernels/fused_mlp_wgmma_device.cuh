// The wgmma training kernel of the fully fused MLP (Hopper, sm_90a only):
// the same contract as fused_mlp_train_kernel (KernelArgs in, the same
// outputs: y, the fused loss, dL/dinput, per-block dL/dW partials in the
// padded layout the existing reduce reads), for the shapes
// wgmma_train_shape_supported accepts: W = 64 or 128, hidden ReLU, output None,
// n_in <= 64, n_out <= 16, and as many hidden layers as shared memory holds
// (W = 128: 1 to 3; W = 64: 1 to 8). See docs/HOPPER_WGMMA.md, "The wgmma
// training kernel as built"; every layout rule is the probe's
// (kernels/wgmma_device.cuh). Where every image of the schedule below does
// not fit (W = 128 from 3 hidden layers, W = 64 from 6 or 5), the deltas
// overwrite the activations instead (tile_in_place).
//
// A block is 2 warpgroups; each owns 64 rows of a 128-row tile.
//  1. Per warpgroup, in registers: the forward chain with A from registers
//     (the input converted as it is loaded, then each layer's fp16(ReLU(z))
//     through the accumulator-to-A identity), the loss on the m64n16 output
//     accumulators, and the backward chain delta_{l-1} = (delta_l W_l) .*
//     [h_{l-1} > 0], reading the same weight images MN-major (trans-b).
//     Every activation (x, h_l, dL/dy, delta_l) is also written to its
//     128B-swizzled shared-memory image on the side.
//  2. Barrier; per weight matrix, each warpgroup takes 64-row chunks of dW
//     and reads both operands from those images: dW_l = delta_l^T h_{l-1}
//     with A = delta_l MN-major (trans-a) and B = h_{l-1} MN-major (trans-b);
//     dW_0 with B = x^T, and the output layer as dW_D^T = h_{D-1}^T dL/dy,
//     whose narrow operands (n_in, n_out < 64 columns) are stored K-major so
//     that no MN-major operand is narrower than one 64-wide swizzle atom. The
//     chunk is added to the block's fp32 partial: stored on the block's first
//     tile, red.global.add after (each element has one owning thread, so the
//     order is fixed and the result deterministic).
// Weights: one K-major 128B image per matrix for the whole kernel, read as
// K-major B forward and as MN-major B (the same bytes) backward; W_0 also as
// a transposed image for dL/dinput (its 64-wide atom would be wider than
// n_in).
#pragma once

#include "fused_mlp_args.h"
#include "wgmma_device.cuh"

#include <cuda_fp16.h>
#include <cstdint>

namespace fusedngp::gpu::wgmma_train {

using namespace fusedngp::gpu::wgmma;

// The kernel's per-thread helpers that touch no wgmma and no device-only
// intrinsic are host-callable too: tests/gpu/test_wgmma_train_emulate.cu runs
// them on the host around an emulated wgmma, so the image addressing,
// descriptors and fragment maps are checked without a GPU.
#define FUSEDNGP_WGMMA_HD __host__ __device__ __forceinline__

// A read-only global load: __ldg on the device, a plain read on the host.
FUSEDNGP_WGMMA_HD float load_global(const float* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(p);
#else
    return *p;
#endif
}

// The raw bits of one fp16 input element (KernelArgs::in_half), likewise.
FUSEDNGP_WGMMA_HD uint32_t load_global_half_bits(const __half* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(reinterpret_cast<const unsigned short*>(p));
#else
    return *reinterpret_cast<const unsigned short*>(p);
#endif
}
// Two adjacent elements in one load (8 bytes of fp32, or the 4 bytes of two
// halves as raw bits), likewise; the caller guarantees the alignment.
FUSEDNGP_WGMMA_HD float2 load_global_pair(const float* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(reinterpret_cast<const float2*>(p));
#else
    return make_float2(p[0], p[1]);
#endif
}
FUSEDNGP_WGMMA_HD uint32_t load_global_half_pair_bits(const __half* p) {
#if defined(__CUDA_ARCH__)
    return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
#endif
}

constexpr int kWarpgroups = 2;
constexpr int kThreads = kWarpgroups * kWarpgroupThreads;
constexpr int kTileRows = kWarpgroups * kWarpgroupRows;  // rows per block tile
constexpr int kOutPad = 16;                              // n_out_pad (n_out <= 16)
constexpr int kRowSteps = kTileRows / 16;                // k-steps of a dW product (K = rows)

// The kernel's input width: n_in_pad rounded up to a compiled variant.
__host__ __device__ constexpr int input_width_for(uint32_t n_in_pad) { return n_in_pad <= 32 ? 32 : 64; }

// Byte offsets of the shared-memory images (from a 1024-byte aligned base;
// every size is a multiple of 1024, so every image starts on a swizzle atom).
struct SmemLayout {
    uint32_t w0;        // W_0   [W][KIN]      K-major (rows out, k in): forward layer 0
    uint32_t w0t;       // W_0^T [KIN][W]      K-major (rows in, k out): dL/dinput
    uint32_t w_hidden;  // W_l, l = 1..D-1, [W][W] K-major each: forward, and MN-major backward
    uint32_t w_out;     // W_D   [16][W]       K-major: output layer, and MN-major backward
    uint32_t x;         // x^T   [KIN][rows]   K-major: B of dW_0
    uint32_t h;         // h_l = fp16(ReLU(z_l)), l = 0..D-1, [rows][W] each (act_offset)
    uint32_t d_out;     // (dL/dy)^T [16][rows] K-major: B of dW_D^T
    uint32_t delta;     // delta_l, l = 0..D-1, [rows][W] each (act_offset); == h with deltas in place
    uint32_t scratch;   // 1 KB: the loss sums of the warps
    uint32_t total;
};

__host__ __device__ constexpr uint32_t activation_bytes(int width) { return uint32_t(width) * kTileRows * 2u; }
__host__ __device__ constexpr uint32_t hidden_weight_bytes(int width) { return uint32_t(width) * width * 2u; }

// in_place: no delta images. delta_l overwrites h_l's image once dW_{l+1}
// (the last reader of h_l) is done: the layout of deeper networks
// (deltas_in_place), one activation image per hidden layer instead of two.
__host__ __device__ constexpr SmemLayout smem_layout(int width, int kin, int hidden_layers, bool in_place = false) {
    SmemLayout s{};
    s.w0 = 0;
    s.w0t = s.w0 + uint32_t(width) * 128u;  // one 64-wide k block of 128-byte rows
    s.w_hidden = s.w0t + uint32_t(width / 64) * kin * 128u;
    s.w_out = s.w_hidden + uint32_t(hidden_layers - 1) * hidden_weight_bytes(width);
    s.x = s.w_out + uint32_t(width / 64) * kOutPad * 128u;
    s.h = s.x + uint32_t(kTileRows / 64) * kin * 128u;
    s.d_out = s.h + uint32_t(hidden_layers) * activation_bytes(width);
    const uint32_t after_d_out = s.d_out + uint32_t(kTileRows / 64) * kOutPad * 128u;
    s.delta = in_place ? s.h : after_d_out;
    s.scratch = in_place ? after_d_out : s.delta + uint32_t(hidden_layers) * activation_bytes(width);
    s.total = s.scratch + 1024u;
    return s;
}

// Dynamic shared memory to ask for: the images plus the slack to align them.
__host__ __device__ constexpr size_t smem_bytes_for(int width, int kin, int hidden_layers, bool in_place = false) {
    return size_t(smem_layout(width, kin, hidden_layers, in_place).total) + 1024u;
}

// Hopper's dynamic shared memory per block (sm_90: 227 KB), per SM (228 KB),
// and what the SM reserves of it per resident block (1 KB).
constexpr size_t kSmemPerBlock = 227u * 1024u;
constexpr size_t kSmemPerSm = 228u * 1024u;
constexpr size_t kSmemReservedPerBlock = 1024u;

// Deltas in place where every image does not fit: W = 128 from 3 hidden
// layers, W = 64 from 6 (n_in <= 32) or 5. The price is two block barriers
// around every dW product (tile_in_place), which the all-images schedule
// does without, so it is only the layout of the depths that need it.
__host__ __device__ constexpr bool deltas_in_place(int width, int kin, int hidden_layers) {
    return smem_bytes_for(width, kin, hidden_layers) > kSmemPerBlock;
}

// ---- Image addressing ------------------------------------------------------------

// Hidden activations and deltas: row-major [row][feature] in the 128B
// layout. Read as K-major A that is the next layer's input (row = m), and as
// MN-major A^T or B (feature = mn, row = k) by the weight-gradient products:
// the same bytes (tile_offset's identity).
template <int W>
FUSEDNGP_WGMMA_HD uint32_t act_offset(int row, int feature) {
    return tile_offset(Layout::Sw128MN, feature, row, W, kTileRows);
}
// x^T and (dL/dy)^T: K-major B of the weight-gradient products (n = feature,
// k = row); stored transposed because n_in and n_out are narrower than an MN-major atom.
// ROWS: the tile's rows (the split kernel's tiles have 64).
template <int COLS, int ROWS = kTileRows>
FUSEDNGP_WGMMA_HD uint32_t transposed_offset(int row, int feature) {
    return tile_offset(Layout::Sw128K, feature, row, COLS, ROWS);
}

FUSEDNGP_WGMMA_HD void store_u32(uint8_t* smem, uint32_t offset, uint32_t v) {
    *reinterpret_cast<uint32_t*>(smem + offset) = v;
}
FUSEDNGP_WGMMA_HD void store_half(uint8_t* smem, uint32_t offset, float v) {
    *reinterpret_cast<__half*>(smem + offset) = __float2half_rn(v);
}

// ---- Weights: fragment buffers -> 128B images, once per block --------------------

// One matrix of a fragment buffer (kernels/fused_mlp_common.cu: operand B
// [K][N], entry (nt * K/16 + kt) * 32 + lane holds B[k0][n], B[k0+1][n] |
// B[k0+8][n], B[k0+9][n], n = 8 nt + lane/4, k0 = 16 kt + 2 (lane % 4)) into
// a K-major 128B image whose rows are n and columns k.
FUSEDNGP_WGMMA_HD void scatter_fragment_entry(uint2 v, uint32_t e, uint32_t kt_count, uint8_t* image, int image_rows,
                                                int image_cols) {
    const uint32_t lane = e % 32u, tile = e / 32u, nt = tile / kt_count, kt = tile % kt_count;
    const int n = int(nt * 8u + lane / 4u), k0 = int(kt * 16u + 2u * (lane % 4u));
    store_u32(image, tile_offset(Layout::Sw128K, n, k0, image_rows, image_cols), v.x);
    store_u32(image, tile_offset(Layout::Sw128K, n, k0 + 8, image_rows, image_cols), v.y);
}
// threads: the block's (the inference kernel runs other block sizes).
__device__ __forceinline__ void scatter_fragments(const uint2* __restrict__ frags, uint32_t k_pad, uint32_t n_pad,
                                                  uint8_t* image, int image_rows, int image_cols,
                                                  uint32_t threads = kThreads) {
    const uint32_t kt_count = k_pad / 16u, entries = k_pad * n_pad / 4u;
    for (uint32_t e = threadIdx.x; e < entries; e += threads)
        scatter_fragment_entry(__ldg(frags + e), e, kt_count, image, image_rows, image_cols);
}

// Zero first: W_0's image is read up to KIN columns, past n_in_pad.
template <int W, int KIN>
__device__ __forceinline__ void load_weight_images(const KernelArgs& p, uint8_t* smem, const SmemLayout& L) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    for (uint32_t i = threadIdx.x; i < L.x / 16u; i += kThreads) reinterpret_cast<uint4*>(smem)[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    scatter_fragments(p.w_fwd + frag_offset(s, 0), s.n_in_pad, W, smem + L.w0, W, KIN);
    scatter_fragments(p.w_bwd + frag_offset(s, 0), W, s.n_in_pad, smem + L.w0t, KIN, W);
    for (uint32_t l = 1; l < D; ++l)
        scatter_fragments(p.w_fwd + frag_offset(s, l), W, W, smem + L.w_hidden + (l - 1) * hidden_weight_bytes(W), W, W);
    scatter_fragments(p.w_fwd + frag_offset(s, D), W, kOutPad, smem + L.w_out, kOutPad, W);
    fence_proxy_async_shared();  // wgmma reads these through the async proxy
    __syncthreads();
}

// ---- Products ------------------------------------------------------------------------

// An operand in shared memory: its descriptor and how its start moves per k16.
struct Operand {
    uint64_t desc;
    Layout layout;
    int rows_mn;  // for the K-major k-step (next 64-wide k block)
};

// `address`: the tile's shared-memory address (the emulator: its offset from
// a 1024-byte aligned base).
FUSEDNGP_WGMMA_HD Operand operand_at(uint32_t address, Layout layout, int rows_mn, int cols_k) {
    return {make_descriptor(address, descriptor_fields(layout, cols_k)), layout, rows_mn};
}
__device__ __forceinline__ Operand operand(const uint8_t* tile, Layout layout, int rows_mn, int cols_k) {
    return operand_at(shared_address(tile), layout, rows_mn, cols_k);
}
// The descriptor of k-step `step`. The layout comes from the product's
// trans flag (0: K-major, 1: MN-major), a compile-time constant: with the
// operand's run-time layout, operands chosen by a run-time layer index put a
// branch between consecutive wgmma, and ptxas injected a warpgroup.arrive
// before each (C7519). The host emulation checks that both agree.
template <int TRANS>
FUSEDNGP_WGMMA_HD uint64_t at_step(const Operand& o, int step) {
    constexpr Layout layout = TRANS ? Layout::Sw128MN : Layout::Sw128K;
    return o.desc + (kstep_offset(layout, step, o.rows_mn) >> 4);
}

// acc = A * B with A from registers (STEPS k16 steps) and B in shared
// memory; returns after the wait, A still intact.
template <int TRANS_B, int NREG, int STEPS>
__device__ __forceinline__ void product_rs(float (&acc)[NREG], uint32_t (&a)[STEPS][4], const Operand& b) {
    wgmma_fence();
FUSEDNGP_UNROLL
    for (int s = 0; s < STEPS; ++s) wgmma_rs<TRANS_B>(acc, a[s], at_step<TRANS_B>(b, s), s > 0);
    wgmma_commit();
    wgmma_wait<0>();
    pin_registers(acc);
    pin_registers(a);
}

// acc = A * B, both in shared memory, STEPS k16 steps (default: K = the
// tile's kTileRows rows); returns after the commit: the caller waits
// (wgmma_wait<0> + pin).
template <int TRANS_A, int TRANS_B, int STEPS = kRowSteps, int NREG>
__device__ __forceinline__ void issue_ss(float (&acc)[NREG], const Operand& a, const Operand& b) {
    wgmma_fence();
FUSEDNGP_UNROLL
    for (int s = 0; s < STEPS; ++s) wgmma_ss<TRANS_A, TRANS_B>(acc, at_step<TRANS_A>(a, s), at_step<TRANS_B>(b, s), s > 0);
    wgmma_commit();
}

// ---- Register <-> image helpers (warpgroup thread t, warpgroup g) --------------------

template <int NREG>
FUSEDNGP_WGMMA_HD void relu_to_fragments(float (&acc)[NREG], uint32_t (&a)[NREG / 8][4]) {
FUSEDNGP_UNROLL
    for (int i = 0; i < NREG; ++i) acc[i] = fmaxf(acc[i], 0.f);
    accumulators_to_a_fragments(acc, a);
}

// Where a thread's accumulator registers live in an activation image
// (act_offset of accumulator_position, split so the compiler keeps 8 values,
// not one address per register): register i sits at row 64g + 16w + l/4 +
// 8 ((i % 4) / 2) and feature 8 (i / 4) + 2 (l % 4) + i % 2, so row % 8 = l/4
// is the thread's swizzle key and only the 16-byte chunk (i / 4) % 8 meets it.
struct ActAddressing {
    uint32_t base;  // (8g + 2w) * 1024 + (l/4) * 128 + 4 (l % 4)
    uint32_t key;   // l / 4
};
__host__ __device__ constexpr ActAddressing act_addressing(int g, int t) {
    const uint32_t w = uint32_t(t) / 32u, l = uint32_t(t) % 32u;
    return {(8u * g + 2u * w) * 1024u + (l / 4u) * 128u + 4u * (l % 4u), l / 4u};
}
__host__ __device__ constexpr uint32_t act_offset_of(const ActAddressing& a, int i) {
    return a.base + uint32_t(i / 32) * (kTileRows * 128u) + uint32_t((i % 4) / 2) * 1024u +
           ((uint32_t((i / 4) % 8) ^ a.key) << 4) + 2u * uint32_t(i % 2);
}

// act_offset_of agrees with act_offset (accumulator_position) for every
// thread and register: checked at compile time (static_assert in the .cu).
template <int W>
__host__ __device__ constexpr bool act_addressing_matches() {
    for (int g = 0; g < kWarpgroups; ++g)
        for (int t = 0; t < kWarpgroupThreads; ++t)
            for (int i = 0; i < W / 2; ++i) {
                const RowCol pos = accumulator_position(t, i);
                const uint32_t want = tile_offset(Layout::Sw128MN, pos.col, kWarpgroupRows * g + pos.row, W, kTileRows);
                if (act_offset_of(act_addressing(g, t), i) != want) return false;
            }
    return true;
}

// register_offset(at, i): where accumulator register i of this thread sits in
// an activation image, for each kernel's addressing (this kernel's
// ActAddressing; the column-split kernel's SliceAddressing), so that the
// stores and masks below serve both.
__host__ __device__ constexpr uint32_t register_offset(const ActAddressing& a, int i) { return act_offset_of(a, i); }

// Fragment register a[j][r] holds the accumulator pair 8j + 2r, 8j + 2r + 1:
// one 4-byte store of two adjacent features.
template <int STEPS, class Addressing>
FUSEDNGP_WGMMA_HD void store_activation(const uint32_t (&a)[STEPS][4], uint8_t* image, const Addressing& at) {
FUSEDNGP_UNROLL
    for (int j = 0; j < STEPS; ++j)
FUSEDNGP_UNROLL
        for (int r = 0; r < 4; ++r) store_u32(image, register_offset(at, 8 * j + 2 * r), a[j][r]);
}

// acc *= ReLU'(z_l) = [h_l > 0], h_l read back from its image at this
// thread's own accumulator positions (it wrote them itself: no barrier).
template <int NREG, class Addressing>
FUSEDNGP_WGMMA_HD void apply_relu_mask(float (&acc)[NREG], const uint8_t* h_image, const Addressing& at) {
FUSEDNGP_UNROLL
    for (int i = 0; i < NREG; i += 2) {
        const __half2 h = *reinterpret_cast<const __half2*>(h_image + register_offset(at, i));
        acc[i] *= __low2float(h) > 0.f ? 1.f : 0.f;
        acc[i + 1] *= __high2float(h) > 0.f ? 1.f : 0.f;
    }
}

// The bits of one 4-byte value as another type (a register move on the device).
template <class To, class From>
FUSEDNGP_WGMMA_HD To bits_as(From v) {
    static_assert(sizeof(To) == sizeof(From), "bits_as: sizes differ");
    To r;
    memcpy(&r, &v, sizeof(r));
    return r;
}

// One fragment register of input as loaded, before conversion: columns k,
// k + 1 of `row` (zero past the batch, `inside` false, and past n_in), as
// two floats' bits (fp32 input) or as the two halves' bits in x (fp16).
// pairs: one 8-byte (fp32) or 4-byte (fp16) load, for inputs whose n_in is
// even and whose pointer is aligned for it (k is always even); else one load
// per column.
FUSEDNGP_WGMMA_HD uint2 raw_input(const KernelArgs& p, uint32_t row, bool inside, uint32_t k, bool pairs) {
    const uint32_t n_in = p.shape.n_in;
    if (p.in_half != nullptr) {  // fp16 input: the fragment's halves as they are
        uint32_t b0 = 0u, b1 = 0u;
        if (inside) {
            const __half* src = p.in_half + size_t(row) * n_in;
            if (pairs) return make_uint2(k < n_in ? load_global_half_pair_bits(src + k) : 0u, 0u);
            if (k < n_in) b0 = load_global_half_bits(src + k);
            if (k + 1 < n_in) b1 = load_global_half_bits(src + k + 1);
        }
        return make_uint2(b0 | b1 << 16, 0u);
    }
    float v0 = 0.f, v1 = 0.f;
    if (inside) {
        const float* src = p.in + size_t(row) * n_in;
        if (pairs && k < n_in) {
            const float2 v = load_global_pair(src + k);
            v0 = v.x, v1 = v.y;
        } else if (!pairs) {
            if (k < n_in) v0 = load_global(src + k);
            if (k + 1 < n_in) v1 = load_global(src + k + 1);
        }
    }
    return make_uint2(bits_as<uint32_t>(v0), bits_as<uint32_t>(v1));
}
// The fragment register: fp32 pairs rounded to halves, fp16 bits as they are.
FUSEDNGP_WGMMA_HD uint32_t input_from_raw(const KernelArgs& p, uint2 r) {
    return p.in_half != nullptr ? r.x : pack_half2(bits_as<float>(r.x), bits_as<float>(r.y));
}
FUSEDNGP_WGMMA_HD uint32_t input_fragment(const KernelArgs& p, uint32_t row, bool inside, uint32_t k, bool pairs) {
    return input_from_raw(p, raw_input(p, row, inside, k, pairs));
}

// This warpgroup's 64 input rows as fp16 A fragments (zero past the batch
// and past n_in). row0: the warpgroup's first row in the batch; pairs: see
// input_fragment.
// fn(s, r, row, k) for each of thread t's input fragment registers [s][r]:
// row in the warpgroup's 64, k its first column.
template <int KIN, class Fn>
FUSEDNGP_WGMMA_HD void for_each_input_fragment(int t, Fn&& fn) {
FUSEDNGP_UNROLL
    for (int s = 0; s < KIN / 16; ++s)
FUSEDNGP_UNROLL
        for (int r = 0; r < 4; ++r) {
            const RowCol pos = a_fragment_position(t, r);
            fn(s, r, pos.row, 16u * s + uint32_t(pos.col));
        }
}

template <int KIN>
FUSEDNGP_WGMMA_HD void load_input_fragments(const KernelArgs& p, uint32_t row0, int valid, int t,
                                            uint32_t (&xa)[KIN / 16][4], bool pairs = false) {
    for_each_input_fragment<KIN>(t, [&](int s, int r, int row, uint32_t k) {
        xa[s][r] = input_fragment(p, row0 + row, row < valid, k, pairs);
    });
}

// The same rows as loaded, before conversion: fetch the next chunk's input
// with fetch_input_fragments, run the current chunk, then convert_input_fragments.
// Converting at load time would make the thread wait for the loads right
// there (the fp32 path's conversion depends on them; the fp16 bits do not).
template <int KIN>
FUSEDNGP_WGMMA_HD void fetch_input_fragments(const KernelArgs& p, uint32_t row0, int valid, int t,
                                             uint2 (&raw)[KIN / 16][4], bool pairs = false) {
    for_each_input_fragment<KIN>(t, [&](int s, int r, int row, uint32_t k) {
        raw[s][r] = raw_input(p, row0 + row, row < valid, k, pairs);
    });
}
template <int KIN>
FUSEDNGP_WGMMA_HD void convert_input_fragments(const KernelArgs& p, const uint2 (&raw)[KIN / 16][4],
                                               uint32_t (&xa)[KIN / 16][4]) {
FUSEDNGP_UNROLL
    for (int s = 0; s < KIN / 16; ++s)
FUSEDNGP_UNROLL
        for (int r = 0; r < 4; ++r) xa[s][r] = input_from_raw(p, raw[s][r]);
}

template <int KIN, int ROWS = kTileRows>
FUSEDNGP_WGMMA_HD void store_input_image(const uint32_t (&xa)[KIN / 16][4], uint8_t* image, int g, int t) {
FUSEDNGP_UNROLL
    for (int s = 0; s < KIN / 16; ++s)
FUSEDNGP_UNROLL
        for (int r = 0; r < 4; ++r) {
            const RowCol pos = a_fragment_position(t, r);
            const int row = kWarpgroupRows * g + pos.row, k = 16 * s + pos.col;
            // The fragment's two halves (lower k in the low half), bit for bit.
            *reinterpret_cast<uint16_t*>(image + transposed_offset<KIN, ROWS>(row, k)) = uint16_t(xa[s][r] & 0xFFFFu);
            *reinterpret_cast<uint16_t*>(image + transposed_offset<KIN, ROWS>(row, k + 1)) = uint16_t(xa[s][r] >> 16);
        }
}

// dL/dy or the target at this thread's 8 output positions (0 outside), read
// at the tile's start so that the latency hides behind the forward pass.
FUSEDNGP_WGMMA_HD void load_loss_inputs(const KernelArgs& p, uint32_t row0, int valid, int t, float (&v)[8]) {
    const float* src = p.loss == LossKind::FromGradient ? p.dout : p.target;
    const uint32_t n_out = p.shape.n_out;
FUSEDNGP_UNROLL
    for (int i = 0; i < 8; ++i) {
        const RowCol pos = accumulator_position(t, i);
        const bool ok = pos.row < valid && uint32_t(pos.col) < n_out;
        v[i] = ok ? load_global(src + size_t(row0 + pos.row) * n_out + pos.col) : 0.f;
    }
}

// y (output None: y = z) to p.out; y becomes loss_scale * dL/dy in place (0
// past the batch and past n_out); the loss values go to loss_sum. writes
// false: dL/dy only (the split kernel's second copy of the same rows).
FUSEDNGP_WGMMA_HD void output_loss(const KernelArgs& p, float (&y)[8], const float (&loss_in)[8],
                                            uint32_t row0, int valid, int t, float& loss_sum, bool writes = true) {
    const uint32_t n_out = p.shape.n_out;
FUSEDNGP_UNROLL
    for (int i = 0; i < 8; ++i) {
        const RowCol pos = accumulator_position(t, i);
        const bool ok = pos.row < valid && uint32_t(pos.col) < n_out;
        const size_t idx = size_t(row0 + pos.row) * n_out + pos.col;
        float d = 0.f;
        if (ok) {
            if (writes && p.out != nullptr) p.out[idx] = y[i];
            d = fused_loss_gradient<true>(p.loss, y[i], loss_in[i], p.loss_norm) * p.loss_scale;
            if (writes && p.loss_partial != nullptr) loss_sum += fused_loss_value(p.loss, y[i], loss_in[i]);
        }
        y[i] = d;
    }
}

// ---- Where everything is: image offsets and the operands of each product ---------------
// Shared by the kernel (base = the aligned shared-memory address) and the
// host emulator (base = 0), so both read the same images through the same
// descriptors.

template <int W>
struct Images {
    SmemLayout L;
    FUSEDNGP_WGMMA_HD uint32_t h(uint32_t l) const { return L.h + l * activation_bytes(W); }
    FUSEDNGP_WGMMA_HD uint32_t delta(uint32_t l) const { return L.delta + l * activation_bytes(W); }
    FUSEDNGP_WGMMA_HD uint32_t hidden_weight(uint32_t l) const { return L.w_hidden + (l - 1) * hidden_weight_bytes(W); }
};

// B of forward layer l (0..D): W_l read K-major (rows out, k in).
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand forward_weight(uint32_t base, const Images<W>& im, uint32_t l, uint32_t D) {
    if (l == 0) return operand_at(base + im.L.w0, Layout::Sw128K, W, KIN);
    if (l == D) return operand_at(base + im.L.w_out, Layout::Sw128K, kOutPad, W);
    return operand_at(base + im.hidden_weight(l), Layout::Sw128K, W, W);
}
// B of the backward product through layer l: delta_{l-1} = delta_l W_l for
// l >= 1 (the forward image read MN-major, K = fan_out), dL/dinput through
// W_0^T's own K-major image for l = 0.
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand backward_weight(uint32_t base, const Images<W>& im, uint32_t l, uint32_t D) {
    if (l == 0) return operand_at(base + im.L.w0t, Layout::Sw128K, KIN, W);
    if (l == D) return operand_at(base + im.L.w_out, Layout::Sw128MN, W, kOutPad);
    return operand_at(base + im.hidden_weight(l), Layout::Sw128MN, W, W);
}
// A of dW_l's chunk m (64 rows of the result): delta_l^T for l < D, and
// h_{D-1}^T for the output layer (computed transposed); MN-major, trans-a.
template <int W>
FUSEDNGP_WGMMA_HD Operand weight_gradient_a(uint32_t base, const Images<W>& im, uint32_t l, uint32_t D, int m) {
    const uint32_t image = l == D ? im.h(D - 1) : im.delta(l);
    return operand_at(base + image + mn_block_offset_sw128mn(m, kTileRows), Layout::Sw128MN, W, kTileRows);
}
// B of dW_l: x^T (K-major) for l = 0, h_{l-1} (MN-major, trans-b) for hidden
// layers, (dL/dy)^T (K-major) for the output layer.
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand weight_gradient_b(uint32_t base, const Images<W>& im, uint32_t l, uint32_t D) {
    if (l == 0) return operand_at(base + im.L.x, Layout::Sw128K, KIN, kTileRows);
    if (l == D) return operand_at(base + im.L.d_out, Layout::Sw128K, kOutPad, kTileRows);
    return operand_at(base + im.h(l - 1), Layout::Sw128MN, W, kTileRows);
}

// loss_scale * dL/dy (the output accumulators after output_loss) into its
// transposed image, one half per element.
template <int ROWS = kTileRows>
FUSEDNGP_WGMMA_HD void store_output_delta_image(const float (&d)[8], uint8_t* image, int g, int t) {
    for (int i = 0; i < 8; ++i) {
        const RowCol pos = accumulator_position(t, i);
        store_half(image, transposed_offset<kOutPad, ROWS>(kWarpgroupRows * g + pos.row, pos.col), d[i]);
    }
}

struct RowState {
    uint32_t row0;  // the warpgroup's first row in the batch
    int valid;      // of its 64 rows, those inside the batch (may be <= 0)
    int g, t;       // warpgroup, thread in it
};

// The next chunk's or tile's input, loaded while the current one runs:
// with DEFER kept raw until finish() (after the current work: the fp32
// conversion would wait for the loads), else converted as it arrives (where
// no registers are spare for the raw values).
template <int KIN, bool DEFER>
struct NextInput {
    uint2 raw[KIN / 16][4];
    FUSEDNGP_WGMMA_HD void start(const KernelArgs& p, const RowState& next, uint32_t (&xa)[KIN / 16][4]) {
        if constexpr (DEFER)
            fetch_input_fragments<KIN>(p, next.row0, next.valid, next.t, raw);
        else
            load_input_fragments<KIN>(p, next.row0, next.valid, next.t, xa);
    }
    FUSEDNGP_WGMMA_HD void finish(const KernelArgs& p, uint32_t (&xa)[KIN / 16][4]) const {
        if constexpr (DEFER) convert_input_fragments<KIN>(p, raw, xa);
    }
};

// dL/dinput = acc / loss_scale for rows inside the batch and columns < n_in;
// the accumulators hold columns col0.. (the column-split kernel's warpgroups
// take halves); bad is set by a non-finite value.
template <int NREG>
FUSEDNGP_WGMMA_HD void store_input_gradient(const KernelArgs& p, const float (&acc)[NREG], const RowState& rs,
                                            bool& bad, uint32_t col0 = 0) {
    const uint32_t n_in = p.shape.n_in;
    for (int i = 0; i < NREG; ++i) {
        const RowCol pos = accumulator_position(rs.t, i);
        const uint32_t col = col0 + uint32_t(pos.col);
        if (pos.row >= rs.valid || col >= n_in) continue;
        const float v = acc[i] * p.inv_loss_scale;
        p.din[size_t(rs.row0 + pos.row) * n_in + col] = v;
        bad |= !isfinite(v);
    }
}

// The partial's element of dW chunk register pair 2i (rows o0.. = outputs,
// columns = inputs; ld = the padded fan-in), or -1 past col_limit.
FUSEDNGP_WGMMA_HD long long partial_pair_index(int t, int i, uint32_t ld, int o0, uint32_t col_limit) {
    const RowCol pos = accumulator_position(t, 2 * i);
    if (uint32_t(pos.col) >= col_limit) return -1;
    return (long long)(o0 + pos.row) * ld + pos.col;
}
// The same for the transposed output-layer chunk (rows i0.. = inputs, columns = outputs).
FUSEDNGP_WGMMA_HD long long partial_transposed_index(int t, int i, uint32_t ld, int i0) {
    const RowCol pos = accumulator_position(t, i);
    return (long long)pos.col * ld + i0 + pos.row;
}

// ---- The per-warpgroup chain: forward, loss, deltas, dL/dinput ------------------------

// Forward and loss for this warpgroup's rows: x and h_0..h_{D-1} go to their
// images, h_{D-1} stays in ha, and y becomes loss_scale * dL/dy (0 outside),
// in registers and in its transposed image.
template <int W, int KIN>
__device__ __forceinline__ void forward_and_loss(const KernelArgs& p, uint8_t* smem, const Images<W>& im,
                                                 const RowState& rs, uint32_t (&xa)[KIN / 16][4], float (&acc)[W / 2],
                                                 uint32_t (&ha)[W / 16][4], float (&y)[8], float& loss_sum) {
    const uint32_t D = p.shape.n_hidden, base = shared_address(smem);
    float loss_in[8];
    load_loss_inputs(p, rs.row0, rs.valid, rs.t, loss_in);
    store_input_image<KIN>(xa, smem + im.L.x, rs.g, rs.t);
    const ActAddressing at = act_addressing(rs.g, rs.t);

    // h_l = fp16(ReLU(h_{l-1} W_l^T)), kept as A fragments and imaged.
    product_rs<0>(acc, xa, forward_weight<W, KIN>(base, im, 0, D));
    relu_to_fragments(acc, ha);
    store_activation(ha, smem + im.h(0), at);
    for (uint32_t l = 1; l < D; ++l) {
        product_rs<0>(acc, ha, forward_weight<W, KIN>(base, im, l, D));
        relu_to_fragments(acc, ha);
        store_activation(ha, smem + im.h(l), at);
    }

    // Output and loss: y (m64n16) -> loss_scale * dL/dy, one k-step of A.
    product_rs<0>(y, ha, forward_weight<W, KIN>(base, im, D, D));
    output_loss(p, y, loss_in, rs.row0, rs.valid, rs.t, loss_sum);
    store_output_delta_image(y, smem + im.L.d_out, rs.g, rs.t);
}

// delta_{l-1} = (delta_l W_l) .* [h_{l-1} > 0] into ha (delta_l: the A
// fragments `a`, of STEPS k-steps; l = D is the output layer). h_{l-1} must
// still be in its image.
template <int W, int KIN, int STEPS>
__device__ __forceinline__ void backward_layer(uint32_t base, const uint8_t* smem, const Images<W>& im, uint32_t l,
                                               uint32_t D, uint32_t (&a)[STEPS][4], float (&acc)[W / 2],
                                               uint32_t (&ha)[W / 16][4], const ActAddressing& at) {
    product_rs<1>(acc, a, backward_weight<W, KIN>(base, im, l, D));
    apply_relu_mask(acc, smem + im.h(l - 1), at);
    accumulators_to_a_fragments(acc, ha);
}

// dL/dinput = delta_0 W_0 / loss_scale (delta_0 in ha), when asked.
template <int W, int KIN>
__device__ __forceinline__ void input_gradient(const KernelArgs& p, uint32_t base, const Images<W>& im,
                                               uint32_t (&ha)[W / 16][4], const RowState& rs, bool& din_bad) {
    if (p.din == nullptr) return;
    float din[KIN / 2];
    product_rs<0>(din, ha, backward_weight<W, KIN>(base, im, 0, p.shape.n_hidden));
    store_input_gradient(p, din, rs, din_bad);
}

// The whole chain of one warpgroup, every delta to its own image (the
// weight gradients follow from the images after one barrier).
template <int W, int KIN>
__device__ __forceinline__ void chain(const KernelArgs& p, uint8_t* smem, const Images<W>& im, const RowState& rs,
                                      uint32_t (&xa)[KIN / 16][4], float& loss_sum, bool& din_bad) {
    const uint32_t D = p.shape.n_hidden, base = shared_address(smem);
    const ActAddressing at = act_addressing(rs.g, rs.t);
    float acc[W / 2], y[8];
    uint32_t ha[W / 16][4];
    forward_and_loss<W, KIN>(p, smem, im, rs, xa, acc, ha, y, loss_sum);
    uint32_t da[1][4];
    accumulators_to_a_fragments(y, da);
    // From the output layer down.
    backward_layer<W, KIN>(base, smem, im, D, D, da, acc, ha, at);
    store_activation(ha, smem + im.delta(D - 1), at);
    for (uint32_t l = D - 1; l >= 1; --l) {
        backward_layer<W, KIN>(base, smem, im, l, D, ha, acc, ha, at);
        store_activation(ha, smem + im.delta(l - 1), at);
    }
    input_gradient<W, KIN>(p, base, im, ha, rs, din_bad);
}

// ---- Weight gradients from the images -------------------------------------------------

// The cells a thread adds, as one row pointer plus compile-time offsets:
// the same cells as partial_pair_index / partial_transposed_index (checked
// by the host tests), but per-register indices, hoisted out of the tile
// loop, would hold a 64-bit value for every register.
// Pair i (registers 2i, 2i + 1) of a rows chunk: row o0 + 16w + l/4 + 8 (i % 2),
// column 8 (i / 2) + 2 (l % 4).
FUSEDNGP_WGMMA_HD size_t pair_cell(int t, int i, uint32_t ld, int o0) {
    const int w = t / 32, l = t % 32;
    return size_t(o0 + 16 * w + l / 4) * ld + size_t(2 * (l % 4)) + size_t(i % 2) * 8u * ld + size_t(8 * (i / 2));
}
// Register i of a transposed chunk: row (output) 8 (i / 4) + 2 (l % 4) + i % 2,
// column (input) i0 + 16w + l/4 + 8 ((i % 4) / 2).
FUSEDNGP_WGMMA_HD size_t transposed_cell(int t, int i, uint32_t ld, int i0) {
    const int w = t / 32, l = t % 32;
    return size_t(2 * (l % 4)) * ld + size_t(i0 + 16 * w + l / 4) + size_t(i % 2) * ld + size_t(8 * ((i % 4) / 2)) +
           size_t(8 * (i / 4)) * ld;
}

// Adds a finished dW chunk to the block's partial ([fan_out][ld] fp32):
// stored on the block's first tile, then added with reductions that return
// nothing (RED: no registers for old values, no wait for them). Each element
// has one owning thread, whose same-address operations apply in program
// order, so the sums keep a fixed order: deterministic.
template <int NREG>
__device__ __forceinline__ void add_chunk_to_partial(float (&acc)[NREG], float* partial, uint32_t ld, int o0,
                                                     uint32_t col_limit, int t, bool first_tile) {
    wgmma_wait<0>();
    pin_registers(acc);
    float* const row = partial + pair_cell(t, 0, ld, o0);
    const size_t row8 = size_t(8u) * ld;
    const uint32_t col0 = 2u * uint32_t(t % 4);
FUSEDNGP_UNROLL
    for (int i = 0; i < NREG / 2; ++i) {
        if (col0 + 8u * uint32_t(i / 2) >= col_limit) continue;
        float2* cell = reinterpret_cast<float2*>(row + (i % 2 ? row8 : 0) + 8 * (i / 2));
        const float2 v = make_float2(acc[2 * i], acc[2 * i + 1]);
        if (first_tile)
            *cell = v;
        else
            atomicAdd(cell, v);
    }
}

__device__ __forceinline__ void add_transposed_chunk_to_partial(float (&acc)[8], float* partial, uint32_t ld, int i0,
                                                                int t, bool first_tile) {
    wgmma_wait<0>();
    pin_registers(acc);
    float* const base = partial + transposed_cell(t, 0, ld, i0);
FUSEDNGP_UNROLL
    for (int i = 0; i < 8; ++i) {
        float* cell = base + size_t(i % 2 + 8 * (i / 4)) * ld + 8 * ((i % 4) / 2);
        if (first_tile)
            *cell = acc[i];
        else
            atomicAdd(cell, acc[i]);
    }
}

// Which warpgroup computes the 64-row chunk m of dW_l. From W = 128 on, every
// matrix has a chunk per warpgroup: chunk m goes to warpgroup m % 2 in every
// layer. At W = 64 each matrix is one chunk, so the matrices alternate
// instead (D = 2: dW_0 and the output layer's to warpgroup 0, 32 + 16
// columns; dW_1 to warpgroup 1, 64), else warpgroup 1 would sit idle. Each
// chunk has one owner whichever rule: the sums keep their fixed order.
template <int W>
FUSEDNGP_WGMMA_HD int weight_gradient_owner(uint32_t l, int m) {
    if constexpr (W / 64 >= kWarpgroups)
        return m % kWarpgroups;
    else
        return int((l + uint32_t(m)) % uint32_t(kWarpgroups));
}

// Warpgroup g takes the chunks weight_gradient_owner gives it:
//   dW_0[o][i]   = sum_r delta_0[r][o] x[r][i]
//   dW_l[o][i]   = sum_r delta_l[r][o] h_{l-1}[r][i]
//   dW_D^T[i][o] = sum_r h_{D-1}[r][i] (dL/dy)[r][o]
// one function per kind of matrix. From W = 128 on, the loops visit only
// warpgroup g's chunks and every owner test is constant true.
struct GradientTarget {
    float* partial;  // the block's partial
    int g, t;
    bool first_tile;
};

template <int W>
FUSEDNGP_WGMMA_HD bool owns_chunk(uint32_t l, int m, int g) {
    return W / 64 >= kWarpgroups || weight_gradient_owner<W>(l, m) == g;
}
template <int W>
FUSEDNGP_WGMMA_HD int first_chunk(int g) {
    return W / 64 >= kWarpgroups ? g : 0;
}
template <int W>
FUSEDNGP_WGMMA_HD int chunk_stride() {
    return W / 64 >= kWarpgroups ? kWarpgroups : 1;
}

template <int W, int KIN>
__device__ __forceinline__ void input_layer_gradient(const KernelArgs& p, uint32_t base, const Images<W>& im,
                                                     const GradientTarget& to) {
    const MlpShape& s = p.shape;
    for (int m = first_chunk<W>(to.g); m < W / 64; m += chunk_stride<W>()) {
        if (!owns_chunk<W>(0, m, to.g)) continue;
        float acc[KIN / 2];
        issue_ss<1, 0>(acc, weight_gradient_a<W>(base, im, 0, s.n_hidden, m), weight_gradient_b<W, KIN>(base, im, 0, s.n_hidden));
        add_chunk_to_partial(acc, to.partial + padded_offset(s, 0), s.n_in_pad, 64 * m, s.n_in_pad, to.t, to.first_tile);
    }
}

template <int W, int KIN>
__device__ __forceinline__ void hidden_layer_gradient(const KernelArgs& p, uint32_t base, const Images<W>& im,
                                                      uint32_t l, const GradientTarget& to) {
    const MlpShape& s = p.shape;
    for (int m = first_chunk<W>(to.g); m < W / 64; m += chunk_stride<W>()) {
        if (!owns_chunk<W>(l, m, to.g)) continue;
        float acc[W / 2];
        issue_ss<1, 1>(acc, weight_gradient_a<W>(base, im, l, s.n_hidden, m), weight_gradient_b<W, KIN>(base, im, l, s.n_hidden));
        add_chunk_to_partial(acc, to.partial + padded_offset(s, l), W, 64 * m, W, to.t, to.first_tile);
    }
}

template <int W, int KIN>
__device__ __forceinline__ void output_layer_gradient(const KernelArgs& p, uint32_t base, const Images<W>& im,
                                                      const GradientTarget& to) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    for (int m = first_chunk<W>(to.g); m < W / 64; m += chunk_stride<W>()) {
        if (!owns_chunk<W>(D, m, to.g)) continue;
        float acc[kOutPad / 2];
        issue_ss<1, 0>(acc, weight_gradient_a<W>(base, im, D, D, m), weight_gradient_b<W, KIN>(base, im, D, D));
        add_transposed_chunk_to_partial(acc, to.partial + padded_offset(s, D), W, 64 * m, to.t, to.first_tile);
    }
}

template <int W, int KIN>
__device__ __forceinline__ void weight_gradients(const KernelArgs& p, uint8_t* smem, const Images<W>& im,
                                                 const GradientTarget& to) {
    const uint32_t base = shared_address(smem);
    input_layer_gradient<W, KIN>(p, base, im, to);
    for (uint32_t l = 1; l < p.shape.n_hidden; ++l) hidden_layer_gradient<W, KIN>(p, base, im, l, to);
    output_layer_gradient<W, KIN>(p, base, im, to);
}

// ---- Deltas in place: the chain and the weight gradients interleaved ---------------------

// Both warpgroups' ordinary stores to the images are visible to wgmma's
// async-proxy reads after this (and, after a product's wait, its reads are
// done before anyone's next store).
__device__ __forceinline__ void block_sync_images() {
    fence_proxy_async_shared();
    __syncthreads();
}

// One tile with deltas in place (smem_layout's in_place: delta(l) == h(l)).
// dW_{l} is the last reader of h_{l-1}; delta_{l-1} is computed into
// registers (its ReLU mask still read from h_{l-1}), waits there while both
// warpgroups run dW_l, then overwrites h_{l-1}. Per dW product: one barrier
// before (its operands complete) and one after (its reads done).
// next/xa: the next tile's input, loaded before the last product.
template <int W, int KIN>
__device__ __forceinline__ void tile_in_place(const KernelArgs& p, uint8_t* smem, const Images<W>& im,
                                              const RowState& rs, const RowState& next, uint32_t (&xa)[KIN / 16][4],
                                              float& loss_sum, bool& din_bad, const GradientTarget& to) {
    const uint32_t D = p.shape.n_hidden, base = shared_address(smem);
    const ActAddressing at = act_addressing(rs.g, rs.t);
    float acc[W / 2], y[8];
    uint32_t ha[W / 16][4];
    forward_and_loss<W, KIN>(p, smem, im, rs, xa, acc, ha, y, loss_sum);
    uint32_t da[1][4];
    accumulators_to_a_fragments(y, da);
    backward_layer<W, KIN>(base, smem, im, D, D, da, acc, ha, at);  // delta_{D-1}
    block_sync_images();
    output_layer_gradient<W, KIN>(p, base, im, to);  // reads h_{D-1}
    block_sync_images();
    store_activation(ha, smem + im.delta(D - 1), at);
    for (uint32_t l = D - 1; l >= 1; --l) {
        backward_layer<W, KIN>(base, smem, im, l, D, ha, acc, ha, at);  // delta_{l-1}
        block_sync_images();
        hidden_layer_gradient<W, KIN>(p, base, im, l, to);  // reads delta_l and h_{l-1}
        block_sync_images();
        store_activation(ha, smem + im.delta(l - 1), at);
    }
    input_gradient<W, KIN>(p, base, im, ha, rs, din_bad);
    NextInput<KIN, true> in;  // the next tile's input, converted after the last product
    in.start(p, next, xa);
    block_sync_images();
    input_layer_gradient<W, KIN>(p, base, im, to);  // reads delta_0 and x
    in.finish(p, xa);
}

// ---- The kernel ---------------------------------------------------------------------------

// ROWS: the kernel's tile rows (the column-split kernel's are 64).
template <int ROWS = kTileRows>
__device__ __forceinline__ void prefetch_input_l2(const KernelArgs& p, uint32_t tile) {
    if (!p.l2_prefetch || tile >= p.n_tiles) return;
    const uint32_t row0 = tile * ROWS, rows = min(uint32_t(ROWS), p.batch - row0);
    const bool half = p.in_half != nullptr;
    const size_t bytes = size_t(rows) * p.shape.n_in * (half ? sizeof(__half) : sizeof(float));
    const char* base = half ? reinterpret_cast<const char*>(p.in_half + size_t(row0) * p.shape.n_in)
                            : reinterpret_cast<const char*>(p.in + size_t(row0) * p.shape.n_in);
    for (size_t off = size_t(threadIdx.x) * 128u; off < bytes; off += size_t(kThreads) * 128u)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(base + off));
}

// The block's loss sum: lanes in a fixed butterfly, warps in order.
__device__ __forceinline__ void write_loss_partial(const KernelArgs& p, float loss_sum, uint8_t* scratch) {
    double v = double(loss_sum);
FUSEDNGP_UNROLL
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    double* per_warp = reinterpret_cast<double*>(scratch);
    if (threadIdx.x % 32u == 0) per_warp[threadIdx.x / 32u] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double sum = 0.0;
        for (int w = 0; w < kThreads / 32; ++w) sum += per_warp[w];
        p.loss_partial[blockIdx.x] = sum;
    }
}

// Tiles round-robin over the blocks (tile = blockIdx.x + k * gridDim.x), as
// the tile kernel: which block sums which rows depends only on batch and grid.
// MIN_BLOCKS: the blocks per SM the registers are budgeted for (2: at most
// 128 per thread). At W = 64, n_in <= 32 two blocks' images fit in shared
// memory (~107 KB each at D = 2), so one block's weight-gradient phase can
// overlap the other's chain. IN_PLACE: the deeper networks' schedule and
// layout (deltas_in_place, tile_in_place).
template <int W, int KIN, int MIN_BLOCKS = 1, bool IN_PLACE = false>
__global__ void __launch_bounds__(kThreads, MIN_BLOCKS) fused_mlp_wgmma_train_kernel(const KernelArgs p) {
#if FUSEDNGP_WGMMA_AVAILABLE
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);  // swizzle atoms: 1024-aligned
    const Images<W> im{smem_layout(W, KIN, int(p.shape.n_hidden), IN_PLACE)};
    load_weight_images<W, KIN>(p, smem, im.L);
    const int g = int(threadIdx.x) / kWarpgroupThreads, t = int(threadIdx.x) % kWarpgroupThreads;
    auto rows_of = [&](uint32_t tile) {  // valid: 0 past the last tile or the batch, else up to 64
        const uint32_t row0 = tile * kTileRows + uint32_t(kWarpgroupRows * g);
        const bool inside = tile < p.n_tiles && row0 < p.batch;
        return RowState{row0, inside ? int(min(p.batch - row0, uint32_t(kWarpgroupRows))) : 0, g, t};
    };
    float loss_sum = 0.f;
    bool din_bad = false;
    GradientTarget to{p.partial + size_t(blockIdx.x) * p.partial_stride, g, t, true};
    uint32_t xa[KIN / 16][4];
    load_input_fragments<KIN>(p, rows_of(blockIdx.x).row0, rows_of(blockIdx.x).valid, t, xa);
    for (uint32_t tile = blockIdx.x; tile < p.n_tiles; tile += gridDim.x) {
        __syncthreads();  // the previous tile's weight-gradient products are done with the images
        prefetch_input_l2(p, tile + 2 * gridDim.x);
        if constexpr (IN_PLACE) {
            tile_in_place<W, KIN>(p, smem, im, rows_of(tile), rows_of(tile + gridDim.x), xa, loss_sum, din_bad, to);
        } else {
            chain<W, KIN>(p, smem, im, rows_of(tile), xa, loss_sum, din_bad);
            // The next tile's input loads overlap the weight-gradient
            // products; with two blocks per SM (128 registers) there is no
            // room for the raw input beside them, so it converts as it arrives.
            NextInput<KIN, MIN_BLOCKS == 1> in;
            in.start(p, rows_of(tile + gridDim.x), xa);
            block_sync_images();  // the images were written by ordinary stores
            weight_gradients<W, KIN>(p, smem, im, to);
            in.finish(p, xa);
        }
        // The next tile overwrites the images with ordinary stores after the
        // barrier at the loop's top; the wgmma that read them are complete
        // (wait_group 0). The proxy fence is belt and braces for that
        // async-read -> generic-write order (one instruction per tile).
        fence_proxy_async_shared();
        to.first_tile = false;
    }
    if (p.nonfinite_flag != nullptr && __any_sync(0xffffffffu, din_bad) && threadIdx.x % 32u == 0)
        atomicOr(p.nonfinite_flag, 1u);
    if (p.loss_partial != nullptr) write_loss_partial(p, loss_sum, smem + im.L.scratch);
#else
    (void)p;
    __trap();  // built without sm_90a: the host never selects this kernel (wgmma_train_available)
#endif
}

} // namespace fusedngp::gpu::wgmma_train
