// The wgmma training kernel emulated on the host (no GPU): the kernel's own
// helpers (kernels/fused_mlp_wgmma_device.cuh: weight scatter, image
// addressing, operand descriptors, fragment maps, loss, partial indexing) run
// per thread on a host copy of the block's shared memory, and each wgmma is
// replaced by a product that reads its operands through the descriptor
// fields, as we read the PTX canonical layouts (the same reading as the
// probe's `emulate`). The per-block partials then go through the reduce's
// arithmetic and are compared with the double reference, as the GPU tests
// do. What this checks without a device: that the kernel's images, operands
// and fragment bookkeeping fit together. What it cannot check: that the
// hardware reads the layouts as we do (the probe's `check` on the H200), the
// asynchronous protocol, or speed. The inference kernel's weight layout and
// forward chain (fused_mlp_wgmma_inference_device.cuh) are emulated the same
// way at the end.
#include "fused_mlp_wgmma_device.cuh"
#include "fused_mlp_wgmma_inference_device.cuh"
#include "fused_mlp_wgmma_split_device.cuh"
#include "gpu/mlp_fragment_slots.h"
#include "mlp_reference.h"
#include "mlp_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fusedngp::gpu::wgmma_train {
namespace {

using namespace fusedngp::gpu::mlp_test;

constexpr int kT = kWarpgroupThreads;

// ---- The emulated tensor core ------------------------------------------------------------

// Element (mn, k) of one k16 step's operand, read through its descriptor.
float descriptor_element(const std::vector<uint8_t>& smem, uint64_t desc, bool mn_major, int mn, int k) {
    const uint32_t start = uint32_t(desc & 0x3FFFu) << 4, lbo = uint32_t((desc >> 16) & 0x3FFFu) << 4,
                   sbo = uint32_t((desc >> 32) & 0x3FFFu) << 4;
    EXPECT_EQ(uint32_t(desc >> 62), 1u) << "every operand of the kernel is 128B-swizzled";
    const uint32_t plain = mn_major ? start + (mn / 64) * lbo + (mn % 64) * 2 + (k / 8) * sbo + (k % 8) * 128
                                    : start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2;
    const uint32_t address = swizzle_128b(plain);
    if (address + 2 > smem.size()) {
        ADD_FAILURE() << "operand read past shared memory";
        return NAN;
    }
    __half h;
    std::memcpy(&h, &smem[address], sizeof(h));
    return __half2float(h);
}

float low_half(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v & 0xFFFFu))); }
float high_half(uint32_t v) { return __half2float(__ushort_as_half((unsigned short)(v >> 16))); }

// D[64][n] = A[64][K] * B[K][n], scattered back into each thread's accumulators.
template <int NREG, class Acc>
void scatter_product(const std::vector<float>& a, const std::vector<float>& b, int k_total, Acc&& acc_of) {
    constexpr int n = 2 * NREG;
    for (int t = 0; t < kT; ++t)
        for (int i = 0; i < NREG; ++i) {
            const RowCol pos = accumulator_position(t, i);
            float sum = 0.f;
            for (int k = 0; k < k_total; ++k) sum += a[size_t(pos.row) * k_total + k] * b[size_t(k) * n + pos.col];
            acc_of(t)[i] = sum;
        }
}

// The kernel steps an operand by its product's trans flag (at_step<TRANS>):
// the operand's own layout must say the same.
template <int TRANS>
void expect_layout_matches(const Operand& o) {
    EXPECT_EQ(int(o.layout), int(TRANS ? Layout::Sw128MN : Layout::Sw128K)) << "operand layout vs trans flag";
}

template <int NREG, int TRANS_B>
std::vector<float> b_matrix(const std::vector<uint8_t>& smem, const Operand& b, int steps) {
    constexpr int n = 2 * NREG;
    expect_layout_matches<TRANS_B>(b);
    std::vector<float> m(size_t(16 * steps) * n);
    for (int s = 0; s < steps; ++s)
        for (int k = 0; k < 16; ++k)
            for (int j = 0; j < n; ++j)
                m[size_t(16 * s + k) * n + j] = descriptor_element(smem, at_step<TRANS_B>(b, s), TRANS_B == 1, j, k);
    return m;
}

// wgmma with A from registers: a_of(t) is thread t's uint32_t[STEPS][4].
template <int NREG, int STEPS, int TRANS_B, class Acc, class A>
void emulate_rs(const std::vector<uint8_t>& smem, Acc&& acc_of, A&& a_of, const Operand& b) {
    std::vector<float> a(size_t(64) * 16 * STEPS);
    for (int t = 0; t < kT; ++t)
        for (int s = 0; s < STEPS; ++s)
            for (int r = 0; r < 4; ++r) {
                const RowCol pos = a_fragment_position(t, r);
                const uint32_t v = a_of(t)[s][r];
                a[size_t(pos.row) * 16 * STEPS + 16 * s + pos.col] = low_half(v);
                a[size_t(pos.row) * 16 * STEPS + 16 * s + pos.col + 1] = high_half(v);
            }
    scatter_product<NREG>(a, b_matrix<NREG, TRANS_B>(smem, b, STEPS), 16 * STEPS, acc_of);
}

// wgmma with A and B in shared memory, STEPS k16 steps.
template <int NREG, int TRANS_A, int TRANS_B, int STEPS, class Acc>
void emulate_ss_steps(const std::vector<uint8_t>& smem, Acc&& acc_of, const Operand& a_op, const Operand& b) {
    expect_layout_matches<TRANS_A>(a_op);
    constexpr int K = 16 * STEPS;
    std::vector<float> a(size_t(64) * K);
    for (int s = 0; s < STEPS; ++s)
        for (int m = 0; m < 64; ++m)
            for (int k = 0; k < 16; ++k)
                a[size_t(m) * K + 16 * s + k] = descriptor_element(smem, at_step<TRANS_A>(a_op, s), TRANS_A == 1, m, k);
    scatter_product<NREG>(a, b_matrix<NREG, TRANS_B>(smem, b, STEPS), K, acc_of);
}
// K = the 128-row kernel's tile rows.
template <int NREG, int TRANS_A, int TRANS_B, class Acc>
void emulate_ss(const std::vector<uint8_t>& smem, Acc&& acc_of, const Operand& a_op, const Operand& b) {
    emulate_ss_steps<NREG, TRANS_A, TRANS_B, kRowSteps>(smem, acc_of, a_op, b);
}

// ---- The kernel, one block, its tiles in order ----------------------------------------------

template <int W, int KIN>
struct ThreadRegs {
    uint32_t xa[KIN / 16][4];
    float loss_in[8], acc[W / 2], y[8], din[KIN / 2];
    uint32_t ha[W / 16][4], da[1][4];
};

// The image part of load_weight_images: every fragment entry scattered.
template <int W, int KIN>
void load_weights(const KernelArgs& p, std::vector<uint8_t>& smem, const Images<W>& im) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    auto scatter = [&](const uint2* frags, uint32_t k_pad, uint32_t n_pad, uint32_t image, int rows, int cols) {
        for (uint32_t e = 0; e < k_pad * n_pad / 4; ++e)
            scatter_fragment_entry(frags[e], e, k_pad / 16, smem.data() + image, rows, cols);
    };
    scatter(p.w_fwd + frag_offset(s, 0), s.n_in_pad, W, im.L.w0, W, KIN);
    scatter(p.w_bwd + frag_offset(s, 0), W, s.n_in_pad, im.L.w0t, KIN, W);
    for (uint32_t l = 1; l < D; ++l) scatter(p.w_fwd + frag_offset(s, l), W, W, im.hidden_weight(l), W, W);
    scatter(p.w_fwd + frag_offset(s, D), W, kOutPad, im.L.w_out, kOutPad, W);
}

// One warpgroup's registers, thread by thread, kept across the phases of a tile.
template <int W, int KIN>
using WarpgroupRegs = std::vector<ThreadRegs<W, KIN>>;

// The row state of thread t of warpgroup g in `tile`, as the kernel's rows_of.
inline RowState rows_of(const KernelArgs& p, uint32_t tile, int g, int t) {
    const uint32_t row0 = tile * kTileRows + kWarpgroupRows * g;
    const bool inside = tile < p.n_tiles && row0 < p.batch;
    return RowState{row0, inside ? int(std::min<uint32_t>(p.batch - row0, 64)) : 0, g, t};
}

// forward_and_loss() for warpgroup g: h_{D-1} left in ha, loss_scale * dL/dy in y.
template <int W, int KIN>
void emulate_forward(const KernelArgs& p, std::vector<uint8_t>& smem, const Images<W>& im, uint32_t tile, int g,
                     WarpgroupRegs<W, KIN>& th, double& loss_sum) {
    const uint32_t D = p.shape.n_hidden;
    uint8_t* base = smem.data();
    auto acc = [&](int t) -> float(&)[W / 2] { return th[t].acc; };
    auto ha = [&](int t) -> uint32_t(&)[W / 16][4] { return th[t].ha; };
    for (int t = 0; t < kT; ++t) {
        const RowState rs = rows_of(p, tile, g, t);
        load_input_fragments<KIN>(p, rs.row0, rs.valid, t, th[t].xa);
        load_loss_inputs(p, rs.row0, rs.valid, t, th[t].loss_in);
        store_input_image<KIN>(th[t].xa, base + im.L.x, g, t);
    }
    auto forward_layer = [&](uint32_t l) {
        for (int t = 0; t < kT; ++t) {
            relu_to_fragments(th[t].acc, th[t].ha);
            store_activation(th[t].ha, base + im.h(l), act_addressing(g, t));
        }
    };
    emulate_rs<W / 2, KIN / 16, 0>(smem, acc, [&](int t) -> uint32_t(&)[KIN / 16][4] { return th[t].xa; },
                                    forward_weight<W, KIN>(0, im, 0, D));
    forward_layer(0);
    for (uint32_t l = 1; l < D; ++l) {
        emulate_rs<W / 2, W / 16, 0>(smem, acc, ha, forward_weight<W, KIN>(0, im, l, D));
        forward_layer(l);
    }
    emulate_rs<8, W / 16, 0>(smem, [&](int t) -> float(&)[8] { return th[t].y; }, ha,
                              forward_weight<W, KIN>(0, im, D, D));
    for (int t = 0; t < kT; ++t) {
        float sum = 0.f;
        output_loss(p, th[t].y, th[t].loss_in, rows_of(p, tile, g, t).row0, rows_of(p, tile, g, t).valid, t, sum);
        loss_sum += sum;
        accumulators_to_a_fragments(th[t].y, th[t].da);
        store_output_delta_image(th[t].y, base + im.L.d_out, g, t);
    }
}

// backward_layer(): delta_{l-1} into ha, from da (l = D) or ha.
template <int W, int KIN>
void emulate_backward_layer(const std::vector<uint8_t>& smem, const Images<W>& im, uint32_t l, uint32_t D, int g,
                            WarpgroupRegs<W, KIN>& th) {
    auto acc = [&](int t) -> float(&)[W / 2] { return th[t].acc; };
    if (l == D)
        emulate_rs<W / 2, 1, 1>(smem, acc, [&](int t) -> uint32_t(&)[1][4] { return th[t].da; },
                                 backward_weight<W, KIN>(0, im, D, D));
    else
        emulate_rs<W / 2, W / 16, 1>(smem, acc, [&](int t) -> uint32_t(&)[W / 16][4] { return th[t].ha; },
                                      backward_weight<W, KIN>(0, im, l, D));
    for (int t = 0; t < kT; ++t) {
        apply_relu_mask(th[t].acc, smem.data() + im.h(l - 1), act_addressing(g, t));
        accumulators_to_a_fragments(th[t].acc, th[t].ha);
    }
}

template <int W, int KIN>
void emulate_store_delta(std::vector<uint8_t>& smem, const Images<W>& im, uint32_t l, int g, WarpgroupRegs<W, KIN>& th) {
    for (int t = 0; t < kT; ++t) store_activation(th[t].ha, smem.data() + im.delta(l), act_addressing(g, t));
}

// input_gradient(): dL/dinput from delta_0 in ha.
template <int W, int KIN>
void emulate_input_gradient(const KernelArgs& p, const std::vector<uint8_t>& smem, const Images<W>& im, uint32_t tile,
                            int g, WarpgroupRegs<W, KIN>& th, bool& din_bad) {
    if (p.din == nullptr) return;
    emulate_rs<KIN / 2, W / 16, 0>(smem, [&](int t) -> float(&)[KIN / 2] { return th[t].din; },
                                    [&](int t) -> uint32_t(&)[W / 16][4] { return th[t].ha; },
                                    backward_weight<W, KIN>(0, im, 0, p.shape.n_hidden));
    for (int t = 0; t < kT; ++t) store_input_gradient(p, th[t].din, rows_of(p, tile, g, t), din_bad);
}

// chain() for warpgroup g, step by step.
template <int W, int KIN>
void emulate_chain(const KernelArgs& p, std::vector<uint8_t>& smem, const Images<W>& im, uint32_t tile, int g,
                   double& loss_sum, bool& din_bad) {
    const uint32_t D = p.shape.n_hidden;
    WarpgroupRegs<W, KIN> th(kT);
    emulate_forward<W, KIN>(p, smem, im, tile, g, th, loss_sum);
    emulate_backward_layer<W, KIN>(smem, im, D, D, g, th);
    emulate_store_delta<W, KIN>(smem, im, D - 1, g, th);
    for (uint32_t l = D - 1; l >= 1; --l) {
        emulate_backward_layer<W, KIN>(smem, im, l, D, g, th);
        emulate_store_delta<W, KIN>(smem, im, l - 1, g, th);
    }
    emulate_input_gradient<W, KIN>(p, smem, im, tile, g, th, din_bad);
}

// One thread's accumulators of an m64n(2 NREG) product.
template <int NREG>
struct Accumulators {
    float v[NREG];
};

// A dW chunk whose accumulator rows are outputs (o0 = 64 m), added to the
// partial through the kernel's index: stored on the first tile, then summed.
template <int W, int NREG, int KIN, int TRANS_B>
void emulate_rows_chunk(const KernelArgs& p, const std::vector<uint8_t>& smem, const Images<W>& im, uint32_t l, int m,
                        uint32_t ld, uint32_t col_limit, float* partial, bool first_tile) {
    const uint32_t D = p.shape.n_hidden;
    std::vector<Accumulators<NREG>> regs(kT);
    emulate_ss<NREG, 1, TRANS_B>(smem, [&](int t) -> float(&)[NREG] { return regs[t].v; },
                                 weight_gradient_a<W>(0, im, l, D, m), weight_gradient_b<W, KIN>(0, im, l, D));
    for (int t = 0; t < kT; ++t)
        for (int i = 0; i < NREG / 2; ++i) {
            const long long index = partial_pair_index(t, i, ld, 64 * m, col_limit);
            if (index < 0) continue;
            for (int j = 0; j < 2; ++j) {
                float& cell = partial[padded_offset(p.shape, l) + index + j];
                cell = first_tile ? regs[t].v[2 * i + j] : cell + regs[t].v[2 * i + j];
            }
        }
}

// input_ / hidden_ / output_layer_gradient() for warpgroup g: the chunks the
// kernel's loop visits (first_chunk, chunk_stride, owns_chunk).
template <int W, int KIN>
void emulate_layer_gradient(const KernelArgs& p, const std::vector<uint8_t>& smem, const Images<W>& im, uint32_t l,
                            int g, float* partial, bool first_tile) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    for (int m = first_chunk<W>(g); m < W / 64; m += chunk_stride<W>()) {
        if (!owns_chunk<W>(l, m, g)) continue;
        if (l == 0) {
            emulate_rows_chunk<W, KIN / 2, KIN, 0>(p, smem, im, 0, m, s.n_in_pad, s.n_in_pad, partial, first_tile);
        } else if (l < D) {
            emulate_rows_chunk<W, W / 2, KIN, 1>(p, smem, im, l, m, W, W, partial, first_tile);
        } else {
            std::vector<Accumulators<8>> dwd(kT);
            emulate_ss<8, 1, 0>(smem, [&](int t) -> float(&)[8] { return dwd[t].v; },
                                weight_gradient_a<W>(0, im, D, D, m), weight_gradient_b<W, KIN>(0, im, D, D));
            for (int t = 0; t < kT; ++t)
                for (int i = 0; i < 8; ++i) {
                    float& cell = partial[padded_offset(s, D) + partial_transposed_index(t, i, W, 64 * m)];
                    cell = first_tile ? dwd[t].v[i] : cell + dwd[t].v[i];
                }
        }
    }
}

// Each chunk has exactly one owning warpgroup, whatever the width: the sums
// keep their fixed order only then.
template <int W>
void expect_one_owner_per_chunk(uint32_t D) {
    for (uint32_t l = 0; l <= D; ++l)
        for (int m = 0; m < W / 64; ++m) {
            int owners = 0;
            for (int g = 0; g < kWarpgroups; ++g)
                for (int c = first_chunk<W>(g); c < W / 64; c += chunk_stride<W>()) owners += c == m && owns_chunk<W>(l, m, g);
            EXPECT_EQ(owners, 1) << "W " << W << " layer " << l << " chunk " << m;
        }
}

// tile_in_place() for both warpgroups, phase by phase between its barriers:
// each warpgroup's work between two barriers runs before the other's, which
// is one of the orders the barriers allow.
template <int W, int KIN>
void emulate_tile_in_place(const KernelArgs& p, std::vector<uint8_t>& smem, const Images<W>& im, uint32_t tile,
                           float* partial, bool first_tile, double& loss_sum, bool& din_bad) {
    const uint32_t D = p.shape.n_hidden;
    WarpgroupRegs<W, KIN> th[kWarpgroups] = {WarpgroupRegs<W, KIN>(kT), WarpgroupRegs<W, KIN>(kT)};
    for (int g = 0; g < kWarpgroups; ++g) {
        emulate_forward<W, KIN>(p, smem, im, tile, g, th[g], loss_sum);
        emulate_backward_layer<W, KIN>(smem, im, D, D, g, th[g]);
    }
    for (int g = 0; g < kWarpgroups; ++g) emulate_layer_gradient<W, KIN>(p, smem, im, D, g, partial, first_tile);
    for (int g = 0; g < kWarpgroups; ++g) emulate_store_delta<W, KIN>(smem, im, D - 1, g, th[g]);
    for (uint32_t l = D - 1; l >= 1; --l) {
        for (int g = 0; g < kWarpgroups; ++g) emulate_backward_layer<W, KIN>(smem, im, l, D, g, th[g]);
        for (int g = 0; g < kWarpgroups; ++g) emulate_layer_gradient<W, KIN>(p, smem, im, l, g, partial, first_tile);
        for (int g = 0; g < kWarpgroups; ++g) emulate_store_delta<W, KIN>(smem, im, l - 1, g, th[g]);
    }
    for (int g = 0; g < kWarpgroups; ++g) emulate_input_gradient<W, KIN>(p, smem, im, tile, g, th[g], din_bad);
    for (int g = 0; g < kWarpgroups; ++g) emulate_layer_gradient<W, KIN>(p, smem, im, 0, g, partial, first_tile);
}

// in_place: the kernel's IN_PLACE schedule and layout (the kernel takes it
// where deltas_in_place says; the emulation can take it at any depth).
template <int W, int KIN>
void emulate_block(const KernelArgs& p, uint32_t block, uint32_t grid, bool in_place, double& loss_sum, bool& din_bad) {
    const uint32_t D = p.shape.n_hidden;
    const Images<W> im{smem_layout(W, KIN, int(D), in_place)};
    expect_one_owner_per_chunk<W>(D);
    std::vector<uint8_t> smem(im.L.total, 0);
    load_weights<W, KIN>(p, smem, im);
    float* partial = p.partial + size_t(block) * p.partial_stride;
    bool first_tile = true;
    for (uint32_t tile = block; tile < p.n_tiles; tile += grid) {
        if (in_place) {
            emulate_tile_in_place<W, KIN>(p, smem, im, tile, partial, first_tile, loss_sum, din_bad);
        } else {
            for (int g = 0; g < kWarpgroups; ++g) emulate_chain<W, KIN>(p, smem, im, tile, g, loss_sum, din_bad);
            for (uint32_t l = 0; l <= D; ++l)
                for (int g = 0; g < kWarpgroups; ++g) emulate_layer_gradient<W, KIN>(p, smem, im, l, g, partial, first_tile);
        }
        first_tile = false;
    }
}

// ---- The column-split kernel (fused_mlp_wgmma_split_device.cuh), one block -------------------

namespace split = fusedngp::gpu::wgmma_split;

template <int KIN>
struct SplitRegs {
    uint32_t xa[KIN / 16][4];
    float loss_in[8], acc[split::kSlice / 2], y[8], din[KIN / 4];
    uint32_t hf[split::kSlice / 16][4], da[1][4];
};

// A dW chunk into the partial through the accumulator map's cell indices
// (the kernels' own addressing, pair_cell / transposed_cell, is held to
// them by PartialCellsMatchTheAccumulatorMap).
template <int NREG>
void add_emulated_rows_chunk(const std::vector<Accumulators<NREG>>& regs, float* layer_partial, uint32_t ld, int o0,
                             uint32_t col_limit, bool first_tile) {
    for (int t = 0; t < kT; ++t)
        for (int i = 0; i < NREG / 2; ++i) {
            const long long index = partial_pair_index(t, i, ld, o0, col_limit);
            if (index < 0) continue;
            for (int j = 0; j < 2; ++j) {
                float& cell = layer_partial[index + j];
                cell = first_tile ? regs[t].v[2 * i + j] : cell + regs[t].v[2 * i + j];
            }
        }
}

// One tile of split_forward + split_backward, both warpgroups phase by phase
// between the kernel's barriers (each warpgroup's work of a phase before the
// other's: one of the orders the barriers allow).
template <int W, int KIN>
void emulate_split_tile(const KernelArgs& p, std::vector<uint8_t>& smem, const split::SplitImages<W>& im, uint32_t tile,
                        float* partial, bool first_tile, double& loss_sum, bool& din_bad) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    uint8_t* base = smem.data();
    std::vector<SplitRegs<KIN>> th[2] = {std::vector<SplitRegs<KIN>>(kT), std::vector<SplitRegs<KIN>>(kT)};
    auto rows = [&](int g, int t) {
        const uint32_t row0 = tile * split::kRows;
        return RowState{row0, row0 < p.batch ? int(std::min<uint32_t>(p.batch - row0, split::kRows)) : 0, g, t};
    };
    auto acc = [&](int g) { return [&th, g](int t) -> float(&)[split::kSlice / 2] { return th[g][t].acc; }; };
    auto hf_to_image = [&](int g, uint32_t slot) {
        for (int t = 0; t < kT; ++t) store_activation(th[g][t].hf, base + slot, split::slice_addressing(g, t));
    };
    auto masked_delta = [&](int g, uint32_t h_slot) {
        for (int t = 0; t < kT; ++t) {
            apply_relu_mask(th[g][t].acc, base + h_slot, split::slice_addressing(g, t));
            accumulators_to_a_fragments(th[g][t].acc, th[g][t].hf);
        }
    };
    // Forward.
    for (int g = 0; g < 2; ++g) {
        for (int t = 0; t < kT; ++t) {
            const RowState rs = rows(g, t);
            load_input_fragments<KIN>(p, rs.row0, rs.valid, t, th[g][t].xa);
            load_loss_inputs(p, rs.row0, rs.valid, t, th[g][t].loss_in);
            if (g == 0) store_input_image<KIN, split::kRows>(th[g][t].xa, base + im.L.x, 0, t);
        }
        emulate_rs<split::kSlice / 2, KIN / 16, 0>(smem, acc(g), [&](int t) -> uint32_t(&)[KIN / 16][4] { return th[g][t].xa; },
                                                   split::split_forward_weight<W, KIN>(0, im, 0, D, g));
        for (int t = 0; t < kT; ++t) relu_to_fragments(th[g][t].acc, th[g][t].hf);
        hf_to_image(g, im.slot(0));
    }
    for (uint32_t l = 1; l < D; ++l)
        for (int g = 0; g < 2; ++g) {
            emulate_ss_steps<split::kSlice / 2, 0, 0, W / 16>(smem, acc(g), split::split_activation_a<W>(0, im, l - 1),
                                                              split::split_forward_weight<W, KIN>(0, im, l, D, g));
            for (int t = 0; t < kT; ++t) relu_to_fragments(th[g][t].acc, th[g][t].hf);
            hf_to_image(g, im.slot(l));
        }
    for (int g = 0; g < 2; ++g) {
        emulate_ss_steps<8, 0, 0, W / 16>(smem, [&](int t) -> float(&)[8] { return th[g][t].y; },
                                          split::split_activation_a<W>(0, im, D - 1),
                                          split::split_forward_weight<W, KIN>(0, im, D, D, g));
        for (int t = 0; t < kT; ++t) {
            float sum = 0.f;
            output_loss(p, th[g][t].y, th[g][t].loss_in, rows(g, t).row0, rows(g, t).valid, t, sum, g == 0);
            loss_sum += sum;
            if (g == 0) store_output_delta_image<split::kRows>(th[g][t].y, base + im.L.d_out, 0, t);
            accumulators_to_a_fragments(th[g][t].y, th[g][t].da);
        }
        // delta_{D-1}'s slice.
        emulate_rs<split::kSlice / 2, 1, 1>(smem, acc(g), [&](int t) -> uint32_t(&)[1][4] { return th[g][t].da; },
                                            split::split_backward_weight<W>(0, im, D, D, g));
        masked_delta(g, im.slot(D - 1));
    }
    // dW_D^T's chunk g, then delta_{D-1} over h_{D-1}'s slice g.
    for (int g = 0; g < 2; ++g) {
        std::vector<Accumulators<8>> dwd(kT);
        emulate_ss_steps<8, 1, 0, split::kRowSteps>(smem, [&](int t) -> float(&)[8] { return dwd[t].v; },
                                                    split::split_gradient_a<W>(0, im, D, D, g),
                                                    split::split_gradient_b<W, KIN>(0, im, D, D));
        for (int t = 0; t < kT; ++t)
            for (int i = 0; i < 8; ++i) {
                float& cell = partial[padded_offset(s, D) + partial_transposed_index(t, i, W, split::kSlice * g)];
                cell = first_tile ? dwd[t].v[i] : cell + dwd[t].v[i];
            }
        hf_to_image(g, im.slot(D - 1));
    }
    for (uint32_t l = D - 1; l >= 1; --l) {
        for (int g = 0; g < 2; ++g) {
            emulate_ss_steps<split::kSlice / 2, 0, 1, W / 16>(smem, acc(g), split::split_activation_a<W>(0, im, l),
                                                              split::split_backward_weight<W>(0, im, l, D, g));
            masked_delta(g, im.slot(l - 1));
            std::vector<Accumulators<W / 2>> dw(kT);
            emulate_ss_steps<W / 2, 1, 1, split::kRowSteps>(smem, [&](int t) -> float(&)[W / 2] { return dw[t].v; },
                                                            split::split_gradient_a<W>(0, im, l, D, g),
                                                            split::split_gradient_b<W, KIN>(0, im, l, D));
            add_emulated_rows_chunk(dw, partial + padded_offset(s, l), W, split::kSlice * g, W, first_tile);
        }
        for (int g = 0; g < 2; ++g) hf_to_image(g, im.slot(l - 1));
    }
    for (int g = 0; g < 2; ++g) {
        if (p.din != nullptr) {
            emulate_ss_steps<KIN / 4, 0, 0, W / 16>(smem, [&](int t) -> float(&)[KIN / 4] { return th[g][t].din; },
                                                    split::split_activation_a<W>(0, im, 0),
                                                    split::split_input_gradient_weight<W, KIN>(0, im, g));
            for (int t = 0; t < kT; ++t) store_input_gradient(p, th[g][t].din, rows(g, t), din_bad, uint32_t(KIN / 2 * g));
        }
        std::vector<Accumulators<KIN / 2>> dw0(kT);
        emulate_ss_steps<KIN / 2, 1, 0, split::kRowSteps>(smem, [&](int t) -> float(&)[KIN / 2] { return dw0[t].v; },
                                                          split::split_gradient_a<W>(0, im, 0, D, g),
                                                          split::split_gradient_b<W, KIN>(0, im, 0, D));
        add_emulated_rows_chunk(dw0, partial + padded_offset(s, 0), s.n_in_pad, split::kSlice * g, s.n_in_pad, first_tile);
    }
}

template <int W, int KIN>
void emulate_split_block(const KernelArgs& p, uint32_t block, uint32_t grid, double& loss_sum, bool& din_bad) {
    const split::SplitImages<W> im{split::split_layout(W, KIN, int(p.shape.n_hidden))};
    std::vector<uint8_t> smem(im.L.total, 0);
    Images<W> weights{im.L};  // the weight part of the layout is the 128-row kernel's
    load_weights<W, KIN>(p, smem, weights);
    float* partial = p.partial + size_t(block) * p.partial_stride;
    bool first_tile = true;
    for (uint32_t tile = block; tile < p.n_tiles; tile += grid) {
        emulate_split_tile<W, KIN>(p, smem, im, tile, partial, first_tile, loss_sum, din_bad);
        first_tile = false;
    }
}

// ---- The host side: fragment buffers, the call, the reduce --------------------------------

// The fp16 fragment buffers convert_weights_kernel (kernels/fused_mlp_common.cu)
// makes from the master weights: each weight's two slots from
// mlp_fragment_slots (its inverse, held to it by tests/test_mlp_fragment_slots.cpp),
// zero in the padding.
void convert_weights(const std::vector<float>& master, const MlpShape& s, std::vector<uint2>& fwd,
                     std::vector<uint2>& bwd) {
    fwd.assign(n_params_padded(s) / 4, make_uint2(0, 0));
    bwd = fwd;
    uint16_t* fwd_halves = reinterpret_cast<uint16_t*>(fwd.data());
    uint16_t* bwd_halves = reinterpret_cast<uint16_t*>(bwd.data());
    for (size_t p = 0; p < master.size(); ++p) {
        const __half half = __float2half_rn(master[p]);
        uint16_t h = 0;
        std::memcpy(&h, &half, sizeof(h));
        const MlpFragmentSlots slots = mlp_fragment_slots(s, p);
        fwd_halves[slots.fwd] = h;
        bwd_halves[slots.bwd] = h;
    }
}

// in_place: run the in-place schedule at a depth where the kernel would not
// (it always runs where deltas_in_place says).
// split: the column-split kernel (64-row tiles).
struct EmuCase {
    uint32_t width, n_in, n_out, depth, batch, grid;
    bool in_place = false;
    bool split = false;
};

bool emulated_in_place(const EmuCase& c) {
    const MlpShape s = mlp_shape(c.n_in, c.width, c.depth, c.n_out);
    return c.in_place || deltas_in_place(int(c.width), input_width_for(s.n_in_pad), int(c.depth));
}

std::string emu_name(const EmuCase& c) {
    return "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) + "_in" + std::to_string(c.n_in) + "_out" +
           std::to_string(c.n_out) + "_grid" + std::to_string(c.grid) +
           (c.split ? "_split" : emulated_in_place(c) ? "_in_place" : "");
}

void check_emulated(const EmuCase& c) {
    std::mt19937_64 rng(c.batch * 13 + c.n_in);
    reference::MlpDims d{c.n_in, c.width, c.depth, c.n_out, Activation::ReLU, Activation::None};
    const std::vector<double> params = random_params(d, rng);
    const Inputs inputs = random_inputs(d, params, c.batch, c.batch + 5);
    std::vector<double> target = random_values((size_t)c.batch * c.n_out, 1.0, false, rng);
    for (uint32_t row = 0; row < c.batch; ++row) {  // rows near a ReLU kink: target = output, gradient ~0
        if (!inputs.masked[row]) continue;
        std::vector<std::vector<double>> z;
        reference::forward(d, params.data(), inputs.x.data() + (size_t)row * c.n_in, target.data() + (size_t)row * c.n_out, z);
    }

    const MlpShape s = mlp_shape(c.n_in, c.width, c.depth, c.n_out);
    std::vector<uint2> fwd, bwd;
    convert_weights(to_float(params), s, fwd, bwd);
    const std::vector<float> in = to_float(inputs.x), tgt = to_float(target);
    std::vector<float> out((size_t)c.batch * c.n_out, NAN), din((size_t)c.batch * c.n_in, NAN);
    const size_t stride = n_params_padded(s);
    std::vector<float> partial(stride * c.grid, NAN);

    KernelArgs p;
    p.shape = s;
    p.w_fwd = fwd.data();
    p.w_bwd = bwd.data();
    p.in = in.data();
    p.out = out.data();
    p.target = tgt.data();
    p.din = din.data();
    p.partial = partial.data();
    p.partial_stride = stride;
    p.batch = c.batch;
    p.rows_per_tile = c.split ? split::kRows : kTileRows;
    p.n_tiles = (c.batch + p.rows_per_tile - 1) / p.rows_per_tile;
    p.loss_scale = 128.f;
    p.inv_loss_scale = 1.f / 128.f;
    p.loss_norm = 1.f / float((size_t)c.batch * c.n_out);
    p.loss = LossKind::L2;
    double dummy = 0;
    p.loss_partial = &dummy;  // non-null: output_loss sums the loss values
    ASSERT_LE(c.grid, p.n_tiles);

    double loss_sum = 0;
    bool din_bad = false;
    const bool in_place = emulated_in_place(c);
    const int kin = input_width_for(s.n_in_pad);
    ASSERT_LE(c.split ? split::split_smem_bytes_for(int(c.width), kin, int(c.depth))
                      : smem_bytes_for(int(c.width), kin, int(c.depth), in_place),
              kSmemPerBlock);
    for (uint32_t b = 0; b < c.grid; ++b) {
        const bool narrow = kin == 32;
        if (c.split) {
            ASSERT_EQ(c.width, 128u);
            narrow ? emulate_split_block<128, 32>(p, b, c.grid, loss_sum, din_bad)
                   : emulate_split_block<128, 64>(p, b, c.grid, loss_sum, din_bad);
        } else if (c.width == 64)
            narrow ? emulate_block<64, 32>(p, b, c.grid, in_place, loss_sum, din_bad)
                   : emulate_block<64, 64>(p, b, c.grid, in_place, loss_sum, din_bad);
        else
            narrow ? emulate_block<128, 32>(p, b, c.grid, in_place, loss_sum, din_bad)
                   : emulate_block<128, 64>(p, b, c.grid, in_place, loss_sum, din_bad);
    }
    EXPECT_FALSE(din_bad);
    // The reduce: blocks in order, / loss_scale, unpadded.
    std::vector<float> dw(d.n_params());
    for (uint32_t l = 0; l <= c.depth; ++l)
        for (uint32_t o = 0; o < fan_out(s, l); ++o)
            for (uint32_t i = 0; i < fan_in(s, l); ++i) {
                float sum = 0.f;
                for (uint32_t b = 0; b < c.grid; ++b)
                    sum += partial[b * stride + padded_offset(s, l) + (size_t)o * fan_in_pad(s, l) + i];
                dw[param_offset(s, l) + (size_t)o * fan_in(s, l) + i] = sum / p.loss_scale;
            }
    ASSERT_TRUE(all_finite(out)) << "y not written everywhere";
    ASSERT_TRUE(all_finite(din)) << "dL/dinput not written everywhere";
    ASSERT_TRUE(all_finite(dw)) << "a partial element never written";

    const double norm = 1.0 / ((double)c.batch * c.n_out);
    const ReferenceResult ref = reference_pass(d, params, inputs.x, c.batch, [&](uint32_t row, const double* y, double* dy) {
        for (uint32_t o = 0; o < c.n_out; ++o) dy[o] = 2.0 * (y[o] - target[(size_t)row * c.n_out + o]) * norm;
    });
    double ref_loss = 0;
    for (size_t i = 0; i < target.size(); ++i) ref_loss += (ref.out[i] - target[i]) * (ref.out[i] - target[i]);
    const double e_out = relative_error(out, ref.out, c.n_out, {});
    const double e_din = relative_error(din, ref.din, c.n_in, {});
    const double e_dw = relative_error(dw, ref.dparams, 0, {});
    const double e_loss = std::abs(loss_sum - ref_loss) / std::max(ref_loss, 1e-30);
    EXPECT_LE(e_out, 2e-3) << emu_name(c);
    EXPECT_LE(e_din, 1e-2) << emu_name(c);
    EXPECT_LE(e_dw, 1e-2) << emu_name(c);
    EXPECT_LE(e_loss, 2e-3) << emu_name(c);
    for (uint32_t l = 0; l <= c.depth; ++l) {
        const auto b = (std::ptrdiff_t)d.offset(l), e = (std::ptrdiff_t)d.offset(l + 1);
        const std::vector<float> got(dw.begin() + b, dw.begin() + e);
        const std::vector<double> want(ref.dparams.begin() + b, ref.dparams.begin() + e);
        EXPECT_LE(relative_error(got, want, 0, {}), 1e-2) << "dW of layer " << l << " " << emu_name(c);
    }
    std::printf("[ errors ] emulated %-28s out %.1e din %.1e dW %.1e loss %.1e\n", emu_name(c).c_str(), e_out, e_din,
                e_dw, e_loss);
}

class WgmmaTrainEmulated : public ::testing::TestWithParam<EmuCase> {};

TEST_P(WgmmaTrainEmulated, MatchesReference) { check_emulated(GetParam()); }

// Batch 300 on 2 blocks: block 0 runs tiles 0 and 2 (the add path, a partial
// last tile), block 1 tile 1. The shapes of the GPU tests, at W = 128 and 64
// (W = 64: the matrices alternate between the warpgroups, and up to 5 hidden layers fit).
std::vector<EmuCase> emu_cases() {
    std::vector<EmuCase> v;
    for (uint32_t w : {128u, 64u}) {
        v.push_back({w, 32, 16, 2, 300, 2});
        v.push_back({w, 3, 1, 1, 300, 2});
        v.push_back({w, 17, 5, 2, 130, 1});
        v.push_back({w, 48, 7, 2, 300, 2});
        v.push_back({w, 64, 16, 1, 1, 1});
    }
    v.push_back({64, 32, 3, 3, 300, 2});
    v.push_back({64, 64, 16, 4, 130, 1});
    v.push_back({64, 16, 5, 5, 130, 1});
    // Deltas in place: where the kernel takes them (W = 128 at 3 hidden
    // layers, W = 64 from 6, or 5 with n_in > 32, up to 8), and forced at
    // shallower depths, where the schedule's first and last phases meet.
    v.push_back({128, 32, 16, 3, 300, 2});
    v.push_back({128, 48, 7, 3, 300, 2});
    v.push_back({64, 32, 3, 6, 300, 2});
    v.push_back({64, 64, 16, 5, 130, 1});
    v.push_back({64, 17, 5, 8, 300, 2});
    v.push_back({64, 40, 16, 8, 130, 1});
    v.push_back({128, 3, 1, 1, 300, 2, true});
    v.push_back({128, 32, 16, 2, 300, 2, true});
    v.push_back({64, 32, 16, 2, 300, 2, true});
    // The column-split kernel: 1-4 hidden layers (4 fit only there), batch
    // 300 on 2 blocks = 5 tiles of 64 rows (the add path, a partial last tile).
    v.push_back({128, 32, 16, 4, 300, 2, false, true});
    v.push_back({128, 64, 16, 4, 150, 1, false, true});
    v.push_back({128, 17, 5, 3, 300, 2, false, true});
    v.push_back({128, 3, 1, 1, 300, 2, false, true});
    v.push_back({128, 48, 7, 2, 64, 1, false, true});
    return v;
}

// The cells the dW flush adds to (pair_cell, transposed_cell: one row
// pointer plus compile-time offsets) are partial_pair_index's and
// partial_transposed_index's (the accumulator map), for every thread and register.
TEST(WgmmaTrainEmulated, PartialCellsMatchTheAccumulatorMap) {
    for (uint32_t ld : {16u, 32u, 64u, 128u})
        for (int o0 : {0, 64})
            for (int t = 0; t < kT; ++t) {
                for (int i = 0; i < 32; ++i) {
                    const long long want = partial_pair_index(t, i, ld, o0, 1u << 30);
                    ASSERT_EQ((long long)pair_cell(t, i, ld, o0), want) << "t " << t << " pair " << i << " ld " << ld;
                }
                for (int i = 0; i < 8; ++i)
                    ASSERT_EQ((long long)transposed_cell(t, i, ld, o0), partial_transposed_index(t, i, ld, o0))
                        << "t " << t << " register " << i << " ld " << ld;
            }
}
INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaTrainEmulated, ::testing::ValuesIn(emu_cases()),
                         [](const ::testing::TestParamInfo<EmuCase>& p) { return emu_name(p.param); });

// ---- The inference kernel: its weight layout and forward chain ----------------------------

// The kernel's products over its own layout (weights only), one 64-row chunk
// per warpgroup pass; y (output None) stored where the kernel stores it.
template <int W, int KIN>
void emulate_inference(const KernelArgs& p, std::vector<float>& out) {
    const MlpShape& s = p.shape;
    const uint32_t D = s.n_hidden;
    const Images<W> im{wgmma_inference::inference_layout(W, int(D))};
    std::vector<uint8_t> smem(im.L.total, 0);
    auto scatter = [&](const uint2* frags, uint32_t k_pad, uint32_t n_pad, uint32_t image, int rows, int cols) {
        for (uint32_t e = 0; e < k_pad * n_pad / 4; ++e)
            scatter_fragment_entry(frags[e], e, k_pad / 16, smem.data() + image, rows, cols);
    };
    scatter(p.w_fwd + frag_offset(s, 0), s.n_in_pad, W, im.L.w0, W, KIN);
    for (uint32_t l = 1; l < D; ++l) scatter(p.w_fwd + frag_offset(s, l), W, W, im.hidden_weight(l), W, W);
    scatter(p.w_fwd + frag_offset(s, D), W, kOutPad, im.L.w_out, kOutPad, W);
    for (uint32_t c = 0; c < p.n_tiles; ++c) {
        const uint32_t row0 = c * kWarpgroupRows;
        const int valid = int(std::min<uint32_t>(p.batch - row0, kWarpgroupRows));
        std::vector<ThreadRegs<W, KIN>> th(kT);
        for (int t = 0; t < kT; ++t) load_input_fragments<KIN>(p, row0, valid, t, th[t].xa);
        auto acc = [&](int t) -> float(&)[W / 2] { return th[t].acc; };
        auto ha = [&](int t) -> uint32_t(&)[W / 16][4] { return th[t].ha; };
        emulate_rs<W / 2, KIN / 16, 0>(smem, acc, [&](int t) -> uint32_t(&)[KIN / 16][4] { return th[t].xa; },
                                        forward_weight<W, KIN>(0, im, 0, D));
        for (int t = 0; t < kT; ++t) relu_to_fragments(th[t].acc, th[t].ha);
        for (uint32_t l = 1; l < D; ++l) {
            emulate_rs<W / 2, W / 16, 0>(smem, acc, ha, forward_weight<W, KIN>(0, im, l, D));
            for (int t = 0; t < kT; ++t) relu_to_fragments(th[t].acc, th[t].ha);
        }
        emulate_rs<8, W / 16, 0>(smem, [&](int t) -> float(&)[8] { return th[t].y; }, ha,
                                  forward_weight<W, KIN>(0, im, D, D));
        for (int t = 0; t < kT; ++t)
            for (int i = 0; i < 8; ++i) {
                const RowCol pos = accumulator_position(t, i);
                if (pos.row < valid && uint32_t(pos.col) < s.n_out)
                    out[size_t(row0 + pos.row) * s.n_out + pos.col] = th[t].y[i];
            }
    }
}

struct InferenceEmuCase {
    uint32_t width, n_in, n_out, depth, batch;
};

std::string inference_emu_name(const InferenceEmuCase& c) {
    return "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) + "_in" +
           std::to_string(c.n_in) + "_out" + std::to_string(c.n_out);
}

class WgmmaInferenceEmulated : public ::testing::TestWithParam<InferenceEmuCase> {};

TEST_P(WgmmaInferenceEmulated, MatchesReference) {
    const InferenceEmuCase& c = GetParam();
    std::mt19937_64 rng(c.batch * 17 + c.n_in * 3 + c.depth);
    reference::MlpDims d{c.n_in, c.width, c.depth, c.n_out, Activation::ReLU, Activation::None};
    const std::vector<double> params = random_params(d, rng);
    const std::vector<double> x = random_values((size_t)c.batch * c.n_in, 1.0, true, rng);
    const MlpShape s = mlp_shape(c.n_in, c.width, c.depth, c.n_out);
    ASSERT_TRUE(wgmma_inference::inference_smem_bytes_for((int)c.width, (int)c.depth) <= 227u * 1024u);
    std::vector<uint2> fwd, bwd;
    convert_weights(to_float(params), s, fwd, bwd);
    const std::vector<float> in = to_float(x);
    std::vector<float> out((size_t)c.batch * c.n_out, NAN);
    KernelArgs p;
    p.shape = s;
    p.w_fwd = fwd.data();
    p.in = in.data();
    p.out = out.data();
    p.batch = c.batch;
    p.rows_per_tile = kWarpgroupRows;
    p.n_tiles = (c.batch + kWarpgroupRows - 1) / kWarpgroupRows;
    const bool narrow = input_width_for(s.n_in_pad) == 32;
    if (c.width == 64)
        narrow ? emulate_inference<64, 32>(p, out) : emulate_inference<64, 64>(p, out);
    else
        narrow ? emulate_inference<128, 32>(p, out) : emulate_inference<128, 64>(p, out);
    ASSERT_TRUE(all_finite(out)) << "y not written everywhere";
    std::vector<double> ref((size_t)c.batch * c.n_out);
    std::vector<std::vector<double>> z;
    for (uint32_t r = 0; r < c.batch; ++r)
        reference::forward(d, params.data(), x.data() + (size_t)r * c.n_in, ref.data() + (size_t)r * c.n_out, z);
    const double e = relative_error(out, ref, c.n_out, {});
    EXPECT_LE(e, 1e-3) << inference_emu_name(c);
    std::printf("[ errors ] emulated inference %-24s out %.1e\n", inference_emu_name(c).c_str(), e);
}

// The paired loads and stores (one 8-byte fp32 or 4-byte fp16 access per
// two columns) against the scalar paths, for every thread of a warpgroup:
// the same fragments from fp32 and fp16 inputs, the same outputs (and
// nothing written past the valid rows) with fp32 and fp16 outputs.
TEST(WgmmaInferenceEmulated, PairedLoadsAndStoresMatchTheScalarPaths) {
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> u(-2.f, 2.f);
    for (uint32_t n_in : {2u, 4u, 32u, 40u, 64u}) {
        const uint32_t batch = 70;
        const MlpShape s = mlp_shape(n_in, 64, 2, 16);
        std::vector<float> in((size_t)batch * n_in);
        for (float& v : in) v = u(rng);
        std::vector<__half> in_h(in.size());
        for (size_t i = 0; i < in.size(); ++i) in_h[i] = __float2half_rn(in[i]);
        for (bool half : {false, true}) {
            KernelArgs p;
            p.shape = s;
            p.batch = batch;
            if (half) p.in_half = in_h.data(); else p.in = in.data();
            for (uint32_t row0 : {0u, 64u}) {
                const int valid = int(std::min<uint32_t>(batch - row0, 64));
                for (int t = 0; t < kT; ++t) {
                    uint32_t paired[4][4], scalar[4][4];
                    load_input_fragments<64>(p, row0, valid, t, paired, true);
                    load_input_fragments<64>(p, row0, valid, t, scalar, false);
                    ASSERT_EQ(std::memcmp(paired, scalar, sizeof(paired)), 0)
                        << "n_in " << n_in << (half ? " fp16" : " fp32") << " row0 " << row0 << " thread " << t;
                    // Fetched raw, converted later (the kernels' prefetch of the next rows).
                    for (bool pairs : {false, true}) {
                        uint2 raw[4][4];
                        uint32_t converted[4][4];
                        fetch_input_fragments<64>(p, row0, valid, t, raw, pairs);
                        convert_input_fragments<64>(p, raw, converted);
                        ASSERT_EQ(std::memcmp(converted, scalar, sizeof(converted)), 0)
                            << "fetched then converted, n_in " << n_in << (half ? " fp16" : " fp32") << " thread " << t;
                    }
                }
            }
        }
    }
    for (uint32_t n_out : {2u, 6u, 16u})
        for (Activation act : {Activation::None, Activation::Sigmoid})
            for (bool half : {false, true}) {
                const uint32_t batch = 100, row0 = 64;  // a partial chunk: 36 valid rows
                const int valid = int(batch - row0);
                const MlpShape s = mlp_shape(32, 64, 2, n_out, Activation::ReLU, act);
                std::vector<float> out_pair((size_t)batch * n_out, NAN), out_scalar = out_pair;
                std::vector<__half> half_pair((size_t)batch * n_out, __float2half_rn(NAN)), half_scalar = half_pair;
                KernelArgs pp, ps;
                pp.shape = ps.shape = s;
                pp.batch = ps.batch = batch;
                if (half) {
                    pp.out_half = half_pair.data();
                    ps.out_half = half_scalar.data();
                } else {
                    pp.out = out_pair.data();
                    ps.out = out_scalar.data();
                }
                for (int t = 0; t < kT; ++t) {
                    float y[8];
                    for (float& v : y) v = u(rng);
                    wgmma_inference::store_outputs(pp, y, row0, valid, t, true);
                    wgmma_inference::store_outputs(ps, y, row0, valid, t, false);
                }
                for (size_t i = 0; i < out_pair.size(); ++i) {
                    const bool inside = i >= (size_t)row0 * n_out;
                    const float a = half ? __half2float(half_pair[i]) : out_pair[i];
                    const float b = half ? __half2float(half_scalar[i]) : out_scalar[i];
                    ASSERT_EQ(std::isnan(a), !inside) << "element " << i << " n_out " << n_out;
                    if (inside) ASSERT_EQ(a, b) << "element " << i << " n_out " << n_out << (half ? " fp16" : " fp32");
                }
            }
}

// Both input widths, padded inputs and outputs, a partial last chunk, and
// the deepest W = 128 network that fits (7 hidden layers: the last image's offset).
std::vector<InferenceEmuCase> inference_emu_cases() {
    std::vector<InferenceEmuCase> v;
    for (uint32_t w : {128u, 64u}) {
        v.push_back({w, 32, 16, 2, 130});
        v.push_back({w, 3, 1, 1, 70});
        v.push_back({w, 17, 5, 3, 64});
        v.push_back({w, 48, 16, 2, 100});
    }
    v.push_back({128, 32, 16, 7, 65});
    v.push_back({64, 64, 3, 7, 65});
    return v;
}
INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaInferenceEmulated, ::testing::ValuesIn(inference_emu_cases()),
                         [](const ::testing::TestParamInfo<InferenceEmuCase>& p) { return inference_emu_name(p.param); });

} // namespace
} // namespace fusedngp::gpu::wgmma_train
