// FusedMlp::inference_half (fp16 in, fp16 out) against the double-precision
// reference and against the fp32 path; train_step_half against train_step.
//
// Inputs and weights lie on the fp16 grid, so fp32 inference converts the
// input exactly and runs the same products: its output rounded to fp16 must
// equal inference_half's bit for bit, whichever kernel and flavour runs. The
// reference check bounds what is left, the kernels' own rounding plus the
// output's rounding to fp16 (2^-11 relative). Output buffers start as NaN.
#include "gpu/fused_mlp.h"
#include "mlp_reference.h"
#include "mlp_test_util.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace fusedngp::gpu {
namespace {

using namespace mlp_test;

struct HalfIoCase {
    uint32_t width = 32, depth = 2, batch = 127, n_in = 32, n_out = 16;
    Activation hidden = Activation::ReLU, output = Activation::None;
    FusedMlpTuning tuning{};
    // Element offsets of the input and output pointers (0: the allocation's
    // own alignment; 1: off every vector grid, the scalar fallbacks).
    uint32_t in_offset = 0, out_offset = 0;
    std::string label;
};

std::string half_io_case_name(const HalfIoCase& c) {
    return c.label + "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) +
           "_in" + std::to_string(c.n_in) + "_out" + std::to_string(c.n_out) + "_off" + std::to_string(c.in_offset) +
           std::to_string(c.out_offset);
}

void PrintTo(const HalfIoCase& c, std::ostream* os) { *os << half_io_case_name(c); }

void check_half_io(const HalfIoCase& c) {
    std::mt19937_64 rng(c.width * 7 + c.depth * 131 + c.batch + c.n_in * 17 + c.n_out);
    reference::MlpDims d;
    d.n_in = c.n_in, d.width = c.width, d.n_hidden = c.depth, d.n_out = c.n_out, d.hidden = c.hidden, d.output = c.output;
    const std::vector<double> params = random_params(d, rng);
    const std::vector<double> in = random_values((size_t)c.batch * c.n_in, 1.0, true, rng);

    FusedMlp mlp(FusedMlpConfig{c.n_in, c.n_out, c.width, c.depth, c.hidden, c.output}, c.tuning);
    const FusedMlp::PassPlan& plan = mlp.inference_half_plan();
    if (plan.warp) {
        EXPECT_TRUE(plan.warp_variant.flavor & kWarpHalfIo) << mlp.describe();
        EXPECT_FALSE(plan.warp_variant.flavor & kWarpStage) << mlp.describe();
    }
    const std::vector<float> params_f = to_float(params);
    mlp.set_params(params_f.data());

    std::vector<__half> in_h(c.in_offset + in.size());
    for (size_t i = 0; i < in.size(); ++i) in_h[c.in_offset + i] = __float2half_rn((float)in[i]);
    DeviceHalves d_in(in_h.size()), d_out(c.out_offset + (size_t)c.batch * c.n_out);
    d_in.upload(in_h);
    DeviceFloats d_in32(to_float(in)), d_out32((size_t)c.batch * c.n_out);
    mlp.inference_half(d_in.ptr() + c.in_offset, d_out.ptr() + c.out_offset, c.batch, nullptr);
    mlp.inference(d_in32.ptr(), d_out32.ptr(), c.batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());

    const std::vector<__half> out_h = d_out.download();
    const std::vector<float> out32 = d_out32.download();
    std::vector<float> out(out32.size());
    size_t differ = 0, first_differ = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const __half h = out_h[c.out_offset + i];
        out[i] = __half2float(h);
        if (bits_of(h) != bits_of(__float2half_rn(out32[i])) && differ++ == 0) first_differ = i;
    }
    ASSERT_TRUE(all_finite(out)) << "unwritten or non-finite output " << mlp.describe();
    // The same kernel for both I/O types: the same bits, rounded. The plans
    // may differ (wgmma_inference_wins: with fp16 I/O the wgmma kernel at W =
    // 128 with one hidden layer and at W = 64 from three, where fp32 I/O keeps
    // the block-tile or warp kernel); then within the kernels' A/B tolerance
    // plus the rounding.
    const FusedMlp::PassPlan& plan32 = mlp.inference_plan();
    if (plan.wgmma_inference == plan32.wgmma_inference && plan.warp == plan32.warp) {
        EXPECT_EQ(differ, 0u) << differ << " outputs differ from the fp32 path's, rounded; first at " << first_differ
                              << ": " << out[first_differ] << " against " << out32[first_differ] << " "
                              << mlp.describe();
    } else {
        const std::vector<double> out32_d(out32.begin(), out32.end());
        EXPECT_LE(relative_error(out, out32_d, c.n_out, {}), 1.5e-3) << "against the fp32 path " << mlp.describe();
    }

    std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    if (rows.empty())
        for (uint32_t r = 0; r < c.batch; ++r) rows.push_back(r);
    std::vector<double> ref((size_t)c.batch * c.n_out, 0.0), x(c.n_in);
    std::vector<std::vector<double>> z;
    for (uint32_t r : rows) {
        for (uint32_t i = 0; i < c.n_in; ++i) x[i] = in[(size_t)r * c.n_in + i];
        reference::forward(d, params.data(), x.data(), ref.data() + (size_t)r * c.n_out, z);
    }
    const double e = relative_error(out, ref, c.n_out, rows);
    // The fp32 path's 1e-3 (test_fused_mlp.cpp) plus the output's rounding.
    EXPECT_LE(e, 1.5e-3) << half_io_case_name(c) << " " << mlp.describe();
    std::printf("[ errors ] %-44s fp16 I/O %.2e  %s\n", half_io_case_name(c).c_str(), e,
                plan.warp ? ("warp flavour " + std::to_string(plan.warp_variant.flavor)).c_str() : "tile");
}

std::vector<HalfIoCase> half_io_cases() {
    std::vector<HalfIoCase> cases;
    auto add = [&](const char* label, uint32_t w, uint32_t depth, uint32_t batch, uint32_t n_in, uint32_t n_out) {
        HalfIoCase c;
        c.label = label;
        c.width = w;
        c.depth = depth;
        c.batch = batch;
        c.n_in = n_in;
        c.n_out = n_out;
        cases.push_back(c);
        return &cases.back();
    };
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u}) {
        // The default plans: one partial slab, a partial tile, many slabs per warp.
        for (uint32_t batch : {1u, 127u, 200003u}) add("auto_", w, 2, batch, 32, 16);
        add("auto_", w, 1, 1001, 32, 16);
        add("auto_", w, 4, 1001, 64, 16);
        // Padding and the scalar fallbacks: odd input and output widths,
        // three input k-tiles, several output chunks.
        add("pad_", w, 2, 1001, 3, 1);
        add("pad_", w, 2, 1001, 17, 5);
        add("pad_", w, 2, 1001, 40, 70);
        // Pointers off the vector grid.
        add("offset_", w, 2, 20011, 32, 16)->in_offset = 1;
        add("offset_", w, 2, 20011, 32, 16)->out_offset = 1;
        // Runtime activations (no ReLU flavour).
        HalfIoCase* act = add("act_", w, 3, 4099, 32, 16);
        act->hidden = Activation::SiLU;
        act->output = Activation::Sigmoid;
        // The block-tile kernel at every width.
        add("tile_", w, 2, 20011, 32, 16)->tuning.tile_inference = true;
        add("tile_", w, 2, 1001, 17, 5)->tuning.tile_inference = true;
    }
    // The warp kernel's fp16 flavours, forced: 8 with weights through L1 and
    // in shared memory, 10 (16-byte-grid loads, runtime activations), 11
    // (with ReLU); a forced cp.async ring (7) becomes 11 without it.
    for (uint32_t w : {16u, 32u, 64u}) {
        for (int mt : {1, 2}) {
            HalfIoCase* l1 = add(mt == 1 ? "f8l1s16_" : "f8l1s32_", w, 3, 200003, 32, 16);
            l1->tuning.warp_weights_in_smem = 0;
            l1->tuning.row_tiles_per_warp = mt;
            HalfIoCase* f0 = add(mt == 1 ? "f8s16_" : "f8s32_", w, 3, 200003, 32, 16);
            f0->tuning.warp_flavor = 0;
            f0->tuning.warp_weights_in_smem = 1;
            f0->tuning.row_tiles_per_warp = mt;
        }
        HalfIoCase* f10 = add("f10_", w, 2, 200003, 32, 16);
        f10->tuning.warp_flavor = kWarpVec4;
        f10->hidden = Activation::Tanh;
        HalfIoCase* f7 = add("f7_", w, 2, 200003, 16, 16);
        f7->tuning.warp_flavor = kWarpRelu | kWarpVec4 | kWarpStage;
        HalfIoCase* f1 = add("f1_", w, 2, 1001, 32, 16);  // ReLU without 16-byte access: flavour 8
        f1->tuning.warp_flavor = kWarpRelu;
    }
    return cases;
}

class FusedMlpHalfIo : public ::testing::TestWithParam<HalfIoCase> {};

TEST_P(FusedMlpHalfIo, MatchesReferenceAndTheFp32Path) {
    SKIP_WITHOUT_GPU();
    check_half_io(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Inference, FusedMlpHalfIo, ::testing::ValuesIn(half_io_cases()),
                         [](const ::testing::TestParamInfo<HalfIoCase>& p) { return half_io_case_name(p.param); });

// The fp16 plan's flavour for each fp32 flavour (FusedMlp::half_io_plan).
TEST(FusedMlpHalfIoPlan, FlavourFollowsTheFp32Plan) {
    SKIP_WITHOUT_GPU();
    const FusedMlpConfig relu{16, 16, 32, 2, Activation::ReLU, Activation::None};
    auto half_flavor = [&](int fp32_flavor, int smem) {
        FusedMlpTuning t;
        t.warp_flavor = fp32_flavor;
        t.warp_weights_in_smem = smem;
        const FusedMlp mlp(relu, t);
        EXPECT_LE(mlp.inference_half_plan().smem_bytes, mlp.inference_plan().smem_bytes);
        return mlp.inference_half_plan().warp_variant.flavor;
    };
    EXPECT_EQ(half_flavor(-1, -1), kWarpHalfIo | kWarpRelu | kWarpVec4);
    EXPECT_EQ(half_flavor(0, 1), kWarpHalfIo);
    EXPECT_EQ(half_flavor(0, 0), kWarpHalfIo);
    EXPECT_EQ(half_flavor(kWarpRelu, 1), kWarpHalfIo);
    EXPECT_EQ(half_flavor(kWarpVec4, 1), kWarpHalfIo | kWarpVec4);
    EXPECT_EQ(half_flavor(kWarpRelu | kWarpVec4 | kWarpStage, 1), kWarpHalfIo | kWarpRelu | kWarpVec4);
    // W = 128 with 2+ hidden layers: the wgmma kernel's plan serves both.
    const FusedMlp wide(FusedMlpConfig{32, 16, 128, 2, Activation::ReLU, Activation::None});
    EXPECT_FALSE(wide.inference_half_plan().warp);
    EXPECT_EQ(wide.inference_half_plan().rows_per_tile, wide.inference_plan().rows_per_tile);
}

// ---- train_step_half ------------------------------------------------------------------

struct HalfTrainCase {
    uint32_t width = 32, depth = 2, batch = 200003, n_in = 32, n_out = 16;
    Activation hidden = Activation::ReLU;
    FusedMlpTuning tuning{};
    uint32_t in_offset = 0;
    bool mean_loss = false;  // ask for the mean loss (the fused loss's extras)
    std::string label;
};

std::string half_train_case_name(const HalfTrainCase& c) {
    return c.label + "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) +
           "_in" + std::to_string(c.n_in) + "_off" + std::to_string(c.in_offset) + (c.mean_loss ? "_loss" : "");
}

void PrintTo(const HalfTrainCase& c, std::ostream* os) { *os << half_train_case_name(c); }

// train_step_half against train_step on the same fp16-grid values: the same
// kernel (when one takes fp16 input) rounds the fp32 input to exactly these
// halves, so outputs, dL/dW and the mean loss are the same bits. A call the
// warp kernel has no fp16 kernel for (the fused loss's extras) runs the
// block-tile kernel: then the same values within the warp-against-tile
// tolerances.
void check_half_train(const HalfTrainCase& c) {
    std::mt19937_64 rng(c.width * 13 + c.depth * 7 + c.batch + c.n_in);
    reference::MlpDims d;
    d.n_in = c.n_in, d.width = c.width, d.n_hidden = c.depth, d.n_out = c.n_out, d.hidden = c.hidden;
    const std::vector<float> params = to_float(random_params(d, rng));
    const std::vector<double> in = random_values((size_t)c.batch * c.n_in, 1.0, true, rng);
    const std::vector<float> target = to_float(random_values((size_t)c.batch * c.n_out, 1.0, false, rng));

    FusedMlp mlp(FusedMlpConfig{c.n_in, c.n_out, c.width, c.depth, c.hidden, Activation::None}, c.tuning);
    mlp.set_params(params.data());
    const FusedMlp::PassPlan& plan32 = mlp.training_plan_for(c.batch);
    const FusedMlp::PassPlan& plan16 = mlp.training_half_plan_for(c.batch, c.mean_loss);
    const bool same_kernel = &plan32 == &plan16;
    std::vector<__half> in_h(c.in_offset + in.size());
    for (size_t i = 0; i < in.size(); ++i) in_h[c.in_offset + i] = __float2half_rn((float)in[i]);
    DeviceHalves d_in16(in_h.size());
    d_in16.upload(in_h);
    DeviceFloats d_in(to_float(in)), d_target(target), d_out32((size_t)c.batch * c.n_out),
        d_out16((size_t)c.batch * c.n_out), d_dw32(mlp.n_params()), d_dw16(mlp.n_params()), d_loss(2);
    mlp.train_step(d_in.ptr(), d_target.ptr(), LossKind::L2, d_out32.ptr(), nullptr, d_dw32.ptr(), c.batch, nullptr,
                   false, c.mean_loss ? d_loss.ptr() : nullptr);
    mlp.train_step_half(d_in16.ptr() + c.in_offset, d_target.ptr(), LossKind::L2, d_out16.ptr(), nullptr, d_dw16.ptr(),
                        c.batch, nullptr, false, c.mean_loss ? d_loss.ptr() + 1 : nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> out32 = d_out32.download(), out16 = d_out16.download();
    const std::vector<float> dw32 = d_dw32.download(), dw16 = d_dw16.download(), loss = d_loss.download();
    ASSERT_TRUE(all_finite(out16) && all_finite(dw16)) << mlp.describe();
    double dw_norm = 0;
    for (float v : dw32) dw_norm += (double)v * v;
    ASSERT_GT(dw_norm, 0.0);
    if (same_kernel) {
        EXPECT_EQ(std::memcmp(out32.data(), out16.data(), out32.size() * sizeof(float)), 0) << mlp.describe();
        EXPECT_EQ(std::memcmp(dw32.data(), dw16.data(), dw32.size() * sizeof(float)), 0) << mlp.describe();
        if (c.mean_loss) {
            EXPECT_EQ(loss[0], loss[1]);
        }
    } else {
        const std::vector<double> dw_ref(dw32.begin(), dw32.end()), out_ref(out32.begin(), out32.end());
        // Another kernel: the warp-against-tile tolerances of test_fused_mlp.cpp.
        EXPECT_LE(relative_error(dw16, dw_ref, 0, {}), 1e-2) << mlp.describe();
        EXPECT_LE(relative_error(out16, out_ref, 0, {}), 1e-3) << mlp.describe();
        if (c.mean_loss) {
            EXPECT_NEAR(loss[0], loss[1], 1e-3 * std::fabs(loss[0]));
        }
    }
    const char* kernel = plan16.wgmma ? "wgmma" : (plan16.warp ? "warp" : (same_kernel ? "tile" : "tile (fallback)"));
    std::printf("[ kernel ] %-40s %s\n", half_train_case_name(c).c_str(), kernel);
}

std::vector<HalfTrainCase> half_train_cases() {
    std::vector<HalfTrainCase> cases;
    auto add = [&](const char* label, uint32_t w, uint32_t depth, uint32_t batch) {
        HalfTrainCase c;
        c.label = label;
        c.width = w;
        c.depth = depth;
        c.batch = batch;
        cases.push_back(c);
        return &cases.back();
    };
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u}) {
        add("auto_", w, 2, 300007);  // the default plan at a large batch (wgmma at W 64/128 on Hopper)
        add("auto_", w, 2, 1001);    // the block-tile kernel below the crossover
        add("auto_", w, 3, 300007);
        add("tile_", w, 2, 20011)->tuning.tile_training = true;
        HalfTrainCase* odd = add("tile_", w, 2, 1001);
        odd->tuning.tile_training = true;
        odd->n_in = 17;
        odd->in_offset = 1;
        add("loss_", w, 2, 300007)->mean_loss = true;
    }
    // The warp kernel's modes, forced, with the pair loads and their fallbacks.
    for (uint32_t w : {16u, 32u, 64u})
        for (int mode : {0, 1}) {
            for (uint32_t n_in : {32u, 17u, 64u})
                for (uint32_t offset : {0u, 1u}) {
                    HalfTrainCase* c = add(mode == 0 ? "warp_" : "warpshared_", w, 2, 100003);
                    c->tuning.force_warp_training = true;
                    c->tuning.warp_train_dw_mode = mode;
                    c->n_in = n_in;
                    c->in_offset = offset;
                }
            HalfTrainCase* act = add(mode == 0 ? "warpsilu_" : "warpsharedsilu_", w, 2, 100003);
            act->tuning.force_warp_training = true;
            act->tuning.warp_train_dw_mode = mode;
            act->hidden = Activation::SiLU;  // flavour 0: no fp16 kernel, the tile kernel runs
        }
    return cases;
}

class FusedMlpHalfTrain : public ::testing::TestWithParam<HalfTrainCase> {};

TEST_P(FusedMlpHalfTrain, SameResultsAsFp32Input) {
    SKIP_WITHOUT_GPU();
    check_half_train(GetParam());
}

INSTANTIATE_TEST_SUITE_P(TrainStep, FusedMlpHalfTrain, ::testing::ValuesIn(half_train_cases()),
                         [](const ::testing::TestParamInfo<HalfTrainCase>& p) { return half_train_case_name(p.param); });

TEST(FusedMlpHalfIoPlan, EmptyBatchWritesNothing) {
    SKIP_WITHOUT_GPU();
    FusedMlp mlp(FusedMlpConfig{32, 16, 64, 2, Activation::ReLU, Activation::None});
    DeviceHalves out(16);
    mlp.inference_half(nullptr, out.ptr(), 0, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    for (__half h : out.download()) EXPECT_EQ(bits_of(h), 0xFFFFu);
}

} // namespace
} // namespace fusedngp::gpu
