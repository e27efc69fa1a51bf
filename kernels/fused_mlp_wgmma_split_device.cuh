// The column-split wgmma training kernel (Hopper, sm_90a only): the wgmma
// training kernel's contract (KernelArgs in; y, the fused loss, dL/dinput and
// per-block dL/dW partials in the padded layout the reduce reads) at W = 128
// for 1-4 hidden layers, on 64-row tiles whose activation images are half the
// size of the 128-row kernel's, so that 4 hidden layers fit in shared memory
// (196-208 KB) and 1-2 leave room for two blocks per SM. See
// docs/HOPPER_WGMMA.md, "The column-split training kernel".
//
// A block is 2 warpgroups over one 64-row tile; warpgroup g owns the hidden
// columns 64g..64g+63 of every layer:
//  - forward: h_l[:, slice g] = fp16(ReLU(h_{l-1} W_l^T[:, slice g])), A the
//    whole h_{l-1} image (K = 128), B the slice's 64 rows of W_l; layer 0
//    takes A from registers (both warpgroups load the tile's input). A block
//    barrier after each layer: the next one reads both slices.
//  - output: both warpgroups compute the same y (m64n16, the small product),
//    so each has dL/dy in registers for its backward step; warpgroup 0 writes
//    y, the loss sums and the (dL/dy)^T image.
//  - backward, deltas in place: delta_{l-1}[:, slice g] = (delta_l W_l)[:, slice g]
//    .* [h_{l-1} > 0] into registers; then dW_l's chunk g (rows 64g.. =
//    delta_l^T's slice g, K = the tile's 64 rows, B = all of h_{l-1}); a
//    barrier; delta_{l-1} overwrites the slice of h_{l-1}; a barrier.
//  - dL/dinput: warpgroup g takes input columns (KIN/2) g..; then dW_0's chunk g.
// Each dW element has one owning thread (chunk g is warpgroup g's), whose
// red.global.add apply in program order: deterministic, as the 128-row kernel.
// Readable reference of the same math: kernels/mlp_reference.h.
#pragma once

#include "fused_mlp_wgmma_device.cuh"

namespace fusedngp::gpu::wgmma_split {

using namespace fusedngp::gpu::wgmma;
using wgmma_train::GradientTarget;
using wgmma_train::Operand;
using wgmma_train::RowState;
using wgmma_train::SmemLayout;
using wgmma_train::at_step;
using wgmma_train::kOutPad;
using wgmma_train::operand_at;

constexpr int kWarpgroups = 2;
constexpr int kThreads = kWarpgroups * kWarpgroupThreads;
constexpr int kRows = kWarpgroupRows;   // rows per block tile
constexpr int kSlice = 64;              // hidden columns per warpgroup
constexpr int kRowSteps = kRows / 16;   // k-steps of a dW product (K = rows)
constexpr int kSplitWidth = kWarpgroups * kSlice;

__host__ __device__ constexpr uint32_t slot_bytes(int width) { return uint32_t(width) * kRows * 2u; }

// The 128-row kernel's weight images; x^T [KIN][64 rows]; one activation
// image per hidden layer (delta(l) == h(l): in place); (dL/dy)^T [16][64 rows].
__host__ __device__ constexpr SmemLayout split_layout(int width, int kin, int hidden_layers) {
    SmemLayout s{};
    s.w0 = 0;
    s.w0t = s.w0 + uint32_t(width) * 128u;
    s.w_hidden = s.w0t + uint32_t(width / 64) * kin * 128u;
    s.w_out = s.w_hidden + uint32_t(hidden_layers - 1) * wgmma_train::hidden_weight_bytes(width);
    s.x = s.w_out + uint32_t(width / 64) * kOutPad * 128u;
    s.h = s.x + uint32_t(kin) * 128u;
    s.delta = s.h;
    s.d_out = s.h + uint32_t(hidden_layers) * slot_bytes(width);
    s.scratch = s.d_out + uint32_t(kOutPad) * 128u;
    s.total = s.scratch + 1024u;
    return s;
}

__host__ __device__ constexpr size_t split_smem_bytes_for(int width, int kin, int hidden_layers) {
    return size_t(split_layout(width, kin, hidden_layers).total) + 1024u;  // + alignment slack
}

// ---- Image addressing ------------------------------------------------------------

// Activations and deltas: row-major [row][feature] in the 128B layout, 64
// rows: K-major A [row][feature] of the next product, MN-major operand
// (feature = mn, row = k) of the weight-gradient products.
template <int W>
__host__ __device__ constexpr uint32_t slice_act_offset(int row, int feature) {
    return tile_offset(Layout::Sw128MN, feature, row, W, kRows);
}

// Where thread t of warpgroup g keeps its m64n64 accumulator register i in
// an activation image (feature 64 g + column): as wgmma_train::ActAddressing,
// 8 swizzle-dependent values per thread instead of an address per register.
struct SliceAddressing {
    uint32_t base;  // g * (64 rows * 128) + 2w * 1024 + (l/4) * 128 + 4 (l % 4)
    uint32_t key;   // l / 4
};
__host__ __device__ constexpr SliceAddressing slice_addressing(int g, int t) {
    const uint32_t w = uint32_t(t) / 32u, l = uint32_t(t) % 32u;
    return {uint32_t(g) * (kRows * 128u) + 2u * w * 1024u + (l / 4u) * 128u + 4u * (l % 4u), l / 4u};
}
__host__ __device__ constexpr uint32_t slice_offset_of(const SliceAddressing& a, int i) {
    return a.base + uint32_t((i % 4) / 2) * 1024u + ((uint32_t((i / 4) % 8) ^ a.key) << 4) + 2u * uint32_t(i % 2);
}

// The stores and masks of wgmma_train (store_activation, apply_relu_mask)
// take this addressing through register_offset.
__host__ __device__ constexpr uint32_t register_offset(const SliceAddressing& a, int i) { return slice_offset_of(a, i); }

// slice_offset_of agrees with slice_act_offset for every thread, slice and
// register (static_assert in the .cu).
template <int W>
__host__ __device__ constexpr bool slice_addressing_matches() {
    for (int g = 0; g < W / kSlice; ++g)
        for (int t = 0; t < kWarpgroupThreads; ++t)
            for (int i = 0; i < kSlice / 2; ++i) {
                const RowCol pos = accumulator_position(t, i);
                if (slice_offset_of(slice_addressing(g, t), i) != slice_act_offset<W>(pos.row, kSlice * g + pos.col))
                    return false;
            }
    return true;
}

template <int W>
struct SplitImages {
    SmemLayout L;
    FUSEDNGP_WGMMA_HD uint32_t slot(uint32_t l) const { return L.h + l * slot_bytes(W); }
    FUSEDNGP_WGMMA_HD uint32_t hidden_weight(uint32_t l) const {
        return L.w_hidden + (l - 1) * wgmma_train::hidden_weight_bytes(W);
    }
};

// ---- The operand of every product (base: the shared-memory address of the
// aligned images; 0 in the host emulator) ---------------------------------------

// B of forward layer l for warpgroup g: the slice's 64 rows of W_l (K-major,
// rows = outputs); the output layer whole (both warpgroups compute y).
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand split_forward_weight(uint32_t base, const SplitImages<W>& im, uint32_t l, uint32_t D, int g) {
    const uint32_t slice_rows = uint32_t(kSlice * g) * 128u;
    if (l == 0) return operand_at(base + im.L.w0 + slice_rows, Layout::Sw128K, W, KIN);
    if (l == D) return operand_at(base + im.L.w_out, Layout::Sw128K, kOutPad, W);
    return operand_at(base + im.hidden_weight(l) + slice_rows, Layout::Sw128K, W, W);
}
// B of delta_{l-1}[:, slice g] = delta_l W_l (l >= 1): the forward image read
// MN-major (n = fan-in), its 64-wide mn block g.
template <int W>
FUSEDNGP_WGMMA_HD Operand split_backward_weight(uint32_t base, const SplitImages<W>& im, uint32_t l, uint32_t D, int g) {
    if (l == D) return operand_at(base + im.L.w_out + mn_block_offset_sw128mn(g, kOutPad), Layout::Sw128MN, W, kOutPad);
    return operand_at(base + im.hidden_weight(l) + mn_block_offset_sw128mn(g, W), Layout::Sw128MN, W, W);
}
// B of dL/dinput's columns (KIN/2) g..: W_0^T's K-major image, those rows.
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand split_input_gradient_weight(uint32_t base, const SplitImages<W>& im, int g) {
    return operand_at(base + im.L.w0t + uint32_t(KIN / 2 * g) * 128u, Layout::Sw128K, KIN, W);
}
// A of a forward or backward product: the whole activation image of layer l
// (K-major, K = W).
template <int W>
FUSEDNGP_WGMMA_HD Operand split_activation_a(uint32_t base, const SplitImages<W>& im, uint32_t l) {
    return operand_at(base + im.slot(l), Layout::Sw128K, kRows, W);
}
// A of dW_l's chunk g: delta_l^T's slice g for l < D, h_{D-1}^T's for the
// output layer (computed transposed); MN-major, trans-a, K = the 64 rows.
template <int W>
FUSEDNGP_WGMMA_HD Operand split_gradient_a(uint32_t base, const SplitImages<W>& im, uint32_t l, uint32_t D, int g) {
    const uint32_t image = l == D ? im.slot(D - 1) : im.slot(l);
    return operand_at(base + image + mn_block_offset_sw128mn(g, kRows), Layout::Sw128MN, W, kRows);
}
// B of dW_l: x^T (K-major) for l = 0, all of h_{l-1} (MN-major, N = W) for
// hidden layers, (dL/dy)^T (K-major) for the output layer.
template <int W, int KIN>
FUSEDNGP_WGMMA_HD Operand split_gradient_b(uint32_t base, const SplitImages<W>& im, uint32_t l, uint32_t D) {
    if (l == 0) return operand_at(base + im.L.x, Layout::Sw128K, KIN, kRows);
    if (l == D) return operand_at(base + im.L.d_out, Layout::Sw128K, kOutPad, kRows);
    return operand_at(base + im.slot(l - 1), Layout::Sw128MN, W, kRows);
}

// ---- Register <-> image helpers -------------------------------------------------------

// ---- Products ------------------------------------------------------------------------

// acc = A * B, both in shared memory, STEPS k16 steps, waited for.
template <int TRANS_A, int TRANS_B, int STEPS, int NREG>
__device__ __forceinline__ void product_ss(float (&acc)[NREG], const Operand& a, const Operand& b) {
    wgmma_train::issue_ss<TRANS_A, TRANS_B, STEPS>(acc, a, b);
    wgmma_wait<0>();
    pin_registers(acc);
}

// ---- One tile ------------------------------------------------------------------------

// Forward and loss: each layer's slice imaged, a barrier after each; y and
// dL/dy (in registers, both warpgroups) with warpgroup 0 writing y, the loss
// and the (dL/dy)^T image. Returns dL/dy as one k-step of A fragments.
template <int W, int KIN>
__device__ __forceinline__ void split_forward(const KernelArgs& p, uint8_t* smem, const SplitImages<W>& im,
                                              const RowState& rs, uint32_t (&xa)[KIN / 16][4], uint32_t (&da)[1][4],
                                              float& loss_sum) {
    const uint32_t D = p.shape.n_hidden, base = shared_address(smem);
    const SliceAddressing at = slice_addressing(rs.g, rs.t);
    float loss_in[8];
    wgmma_train::load_loss_inputs(p, rs.row0, rs.valid, rs.t, loss_in);
    if (rs.g == 0) wgmma_train::store_input_image<KIN, kRows>(xa, smem + im.L.x, 0, rs.t);
    float acc[kSlice / 2];
    uint32_t hf[kSlice / 16][4];
    wgmma_train::product_rs<0>(acc, xa, split_forward_weight<W, KIN>(base, im, 0, D, rs.g));
    wgmma_train::relu_to_fragments(acc, hf);
    wgmma_train::store_activation(hf, smem + im.slot(0), at);
    wgmma_train::block_sync_images();
    for (uint32_t l = 1; l < D; ++l) {
        product_ss<0, 0, W / 16>(acc, split_activation_a<W>(base, im, l - 1), split_forward_weight<W, KIN>(base, im, l, D, rs.g));
        wgmma_train::relu_to_fragments(acc, hf);
        wgmma_train::store_activation(hf, smem + im.slot(l), at);
        wgmma_train::block_sync_images();
    }
    float y[8];
    product_ss<0, 0, W / 16>(y, split_activation_a<W>(base, im, D - 1), split_forward_weight<W, KIN>(base, im, D, D, rs.g));
    wgmma_train::output_loss(p, y, loss_in, rs.row0, rs.valid, rs.t, loss_sum, rs.g == 0);
    if (rs.g == 0) wgmma_train::store_output_delta_image<kRows>(y, smem + im.L.d_out, 0, rs.t);
    accumulators_to_a_fragments(y, da);
}

// The backward pass and every dW chunk of warpgroup g, deltas in place; the
// next tile's input is loaded before the last product.
// DEFER: the next tile's input stays raw until after the last product
// (registers for one block per SM; the two-block instantiation converts it
// as it arrives).
template <int W, int KIN, bool DEFER>
__device__ __forceinline__ void split_backward(const KernelArgs& p, uint8_t* smem, const SplitImages<W>& im,
                                               const RowState& rs, const RowState& next, uint32_t (&xa)[KIN / 16][4],
                                               uint32_t (&da)[1][4], bool& din_bad, const GradientTarget& to) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden, base = shared_address(smem);
    const SliceAddressing at = slice_addressing(rs.g, rs.t);
    float acc[kSlice / 2];
    uint32_t hf[kSlice / 16][4];
    // delta_{D-1}'s slice; then dW_D^T's chunk g reads h_{D-1}'s slice g (this
    // warpgroup's own) and (dL/dy)^T, after the barrier that ends every read
    // of h_{D-1} by the y products.
    wgmma_train::product_rs<1>(acc, da, split_backward_weight<W>(base, im, D, D, rs.g));
    wgmma_train::apply_relu_mask(acc, smem + im.slot(D - 1), at);
    accumulators_to_a_fragments(acc, hf);
    wgmma_train::block_sync_images();
    {
        float dw[kOutPad / 2];
        wgmma_train::issue_ss<1, 0, kRowSteps>(dw, split_gradient_a<W>(base, im, D, D, rs.g), split_gradient_b<W, KIN>(base, im, D, D));
        wgmma_train::add_transposed_chunk_to_partial(dw, to.partial + padded_offset(s, D), W, kSlice * rs.g, rs.t, to.first_tile);
    }
    wgmma_train::store_activation(hf, smem + im.slot(D - 1), at);
    for (uint32_t l = D - 1; l >= 1; --l) {
        wgmma_train::block_sync_images();  // delta_l whole in its image
        product_ss<0, 1, W / 16>(acc, split_activation_a<W>(base, im, l), split_backward_weight<W>(base, im, l, D, rs.g));
        wgmma_train::apply_relu_mask(acc, smem + im.slot(l - 1), at);
        accumulators_to_a_fragments(acc, hf);
        float dw[W / 2];
        wgmma_train::issue_ss<1, 1, kRowSteps>(dw, split_gradient_a<W>(base, im, l, D, rs.g), split_gradient_b<W, KIN>(base, im, l, D));
        wgmma_train::add_chunk_to_partial(dw, to.partial + padded_offset(s, l), W, kSlice * rs.g, W, rs.t, to.first_tile);
        wgmma_train::block_sync_images();  // every read of h_{l-1} and delta_l done
        wgmma_train::store_activation(hf, smem + im.slot(l - 1), at);
    }
    wgmma_train::block_sync_images();  // delta_0 whole
    if (p.din != nullptr) {
        float din[KIN / 4];
        product_ss<0, 0, W / 16>(din, split_activation_a<W>(base, im, 0), split_input_gradient_weight<W, KIN>(base, im, rs.g));
        wgmma_train::store_input_gradient(p, din, rs, din_bad, uint32_t(KIN / 2 * rs.g));
    }
    wgmma_train::NextInput<KIN, DEFER> in;
    in.start(p, next, xa);
    float dw0[KIN / 2];
    wgmma_train::issue_ss<1, 0, kRowSteps>(dw0, split_gradient_a<W>(base, im, 0, D, rs.g), split_gradient_b<W, KIN>(base, im, 0, D));
    wgmma_train::add_chunk_to_partial(dw0, to.partial + padded_offset(s, 0), s.n_in_pad, kSlice * rs.g, s.n_in_pad, rs.t, to.first_tile);
    in.finish(p, xa);
}

// Tiles round-robin over the blocks, as the other training kernels. Both
// warpgroups work on the same rows: row0 and valid are the tile's.
// MIN_BLOCKS 2: registers for two blocks per SM (128; ptxas spills 16-48 B),
// for the depths whose images let two blocks share the SM's shared memory
// (1-2 hidden layers): one block's barriers then overlap the other's work.
template <int W, int KIN, int MIN_BLOCKS = 1>
__global__ void __launch_bounds__(kThreads, MIN_BLOCKS) fused_mlp_wgmma_split_kernel(const KernelArgs p) {
#if FUSEDNGP_WGMMA_AVAILABLE
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = smem_raw + ((1024u - (shared_address(smem_raw) & 1023u)) & 1023u);  // swizzle atoms: 1024-aligned
    const SplitImages<W> im{split_layout(W, KIN, int(p.shape.n_hidden))};
    wgmma_train::load_weight_images<W, KIN>(p, smem, im.L);
    const int g = int(threadIdx.x) / kWarpgroupThreads, t = int(threadIdx.x) % kWarpgroupThreads;
    auto rows_of = [&](uint32_t tile) {
        const uint32_t row0 = tile * kRows;
        const bool inside = tile < p.n_tiles && row0 < p.batch;
        return RowState{row0, inside ? int(min(p.batch - row0, uint32_t(kRows))) : 0, g, t};
    };
    float loss_sum = 0.f;
    bool din_bad = false;
    GradientTarget to{p.partial + size_t(blockIdx.x) * p.partial_stride, g, t, true};
    uint32_t xa[KIN / 16][4];
    wgmma_train::load_input_fragments<KIN>(p, rows_of(blockIdx.x).row0, rows_of(blockIdx.x).valid, t, xa);
    for (uint32_t tile = blockIdx.x; tile < p.n_tiles; tile += gridDim.x) {
        __syncthreads();  // the previous tile's products are done with the images
        wgmma_train::prefetch_input_l2<kRows>(p, tile + 2 * gridDim.x);
        const RowState rs = rows_of(tile);
        uint32_t da[1][4];
        split_forward<W, KIN>(p, smem, im, rs, xa, da, loss_sum);
        split_backward<W, KIN, MIN_BLOCKS == 1>(p, smem, im, rs, rows_of(tile + gridDim.x), xa, da, din_bad, to);
        fence_proxy_async_shared();  // async reads of this tile before the next tile's ordinary stores
        to.first_tile = false;
    }
    if (p.nonfinite_flag != nullptr && __any_sync(0xffffffffu, din_bad) && threadIdx.x % 32u == 0)
        atomicOr(p.nonfinite_flag, 1u);
    if (p.loss_partial != nullptr) wgmma_train::write_loss_partial(p, loss_sum, smem + im.L.scratch);
#else
    (void)p;
    __trap();  // built without sm_90a: the host never selects this kernel
#endif
}

} // namespace fusedngp::gpu::wgmma_split
