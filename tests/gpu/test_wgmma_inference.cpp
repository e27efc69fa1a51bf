// The Hopper wgmma inference kernel (kernels/fused_mlp_wgmma_inference_device.cuh,
// FusedMlpTuning::wgmma_inference) against the double reference, against the
// block-tile inference kernel on the same weights, and fp16 I/O against its
// own fp32 path: W = 64 and 128, 1 hidden layer up to the deepest that fits,
// padded inputs and outputs, output activations, batches from one partial
// chunk to many chunks per warpgroup, pointers off the pair grid. Outputs
// start NaN-poisoned; a second call must give the same bits. Skipped without
// a compute capability 9.0 device (the kernel is sm_90a only).
#include "fused_mlp_wgmma_launch.h"
#include "gpu/fused_mlp.h"
#include "mlp_reference.h"
#include "mlp_test_util.h"
#include "scoped_env.h"

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

struct InferenceCase {
    uint32_t width = 128, depth = 2, batch = 1001, n_in = 32, n_out = 16;
    Activation output = Activation::None;
    // Element offsets of the input and output pointers (1: off the pair grid).
    uint32_t in_offset = 0, out_offset = 0;
};

std::string case_name(const InferenceCase& c) {
    return "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) + "_in" +
           std::to_string(c.n_in) + "_out" + std::to_string(c.n_out) + "_act" + std::to_string((int)c.output) +
           "_off" + std::to_string(c.in_offset) + std::to_string(c.out_offset);
}

void PrintTo(const InferenceCase& c, std::ostream* os) { *os << case_name(c); }

void check_case(const InferenceCase& c) {
    std::mt19937_64 rng(c.width * 7 + c.depth * 131 + c.batch + c.n_in * 17 + c.n_out * 3 + (uint32_t)c.output);
    reference::MlpDims d;
    d.n_in = c.n_in, d.width = c.width, d.n_hidden = c.depth, d.n_out = c.n_out;
    d.hidden = Activation::ReLU, d.output = c.output;
    const std::vector<double> params = random_params(d, rng);
    // Inputs on the fp16 grid: the fp32 path converts them exactly, so both
    // I/O types run the same products.
    const std::vector<double> in = random_values((size_t)c.batch * c.n_in, 1.0, true, rng);
    const FusedMlpConfig cfg{c.n_in, c.n_out, c.width, c.depth, Activation::ReLU, c.output};
    FusedMlpTuning wgmma_tuning, tile_tuning;
    wgmma_tuning.wgmma_inference = 1;
    tile_tuning.tile_inference = true;
    FusedMlp mlp(cfg, wgmma_tuning), tile(cfg, tile_tuning);
    ASSERT_TRUE(mlp.inference_plan().wgmma_inference) << mlp.describe();
    ASSERT_TRUE(mlp.inference_half_plan().wgmma_inference) << mlp.describe();
    const std::vector<float> params_f = to_float(params);
    mlp.set_params(params_f.data());
    tile.set_params(params_f.data());

    const size_t n_out_total = (size_t)c.batch * c.n_out;
    std::vector<__half> in_h(c.in_offset + in.size());
    std::vector<float> in_f(c.in_offset + in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        in_h[c.in_offset + i] = __float2half_rn((float)in[i]);
        in_f[c.in_offset + i] = (float)in[i];
    }
    DeviceFloats d_in(in_f.size()), out(c.out_offset + n_out_total), again(c.out_offset + n_out_total),
        tile_out(n_out_total);
    DeviceHalves d_in_h(in_h.size()), out_h(c.out_offset + n_out_total);
    d_in.upload(in_f);
    d_in_h.upload(in_h);
    const float* x32 = d_in.ptr() + c.in_offset;
    mlp.inference(x32, out.ptr() + c.out_offset, c.batch, nullptr);
    mlp.inference(x32, again.ptr() + c.out_offset, c.batch, nullptr);
    mlp.inference_half(d_in_h.ptr() + c.in_offset, out_h.ptr() + c.out_offset, c.batch, nullptr);
    tile.inference(x32, tile_out.ptr(), c.batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());

    const std::vector<float> y_all = out.download(), again_all = again.download(), y_tile = tile_out.download();
    const std::vector<__half> h_all = out_h.download();
    const std::vector<float> y(y_all.begin() + c.out_offset, y_all.end());
    ASSERT_TRUE(all_finite(y)) << "unwritten or non-finite output " << mlp.describe();
    ASSERT_EQ(std::memcmp(y_all.data(), again_all.data(), y_all.size() * sizeof(float)), 0) << "not deterministic";
    // Nothing written before the output's start.
    for (uint32_t i = 0; i < c.out_offset; ++i) EXPECT_TRUE(std::isnan(y_all[i])) << "wrote before the output";
    size_t differ = 0;
    for (size_t i = 0; i < n_out_total; ++i)
        differ += bits_of(h_all[c.out_offset + i]) != bits_of(__float2half_rn(y[i]));
    EXPECT_EQ(differ, 0u) << "fp16 outputs that are not the fp32 outputs rounded";

    std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    if (rows.empty())
        for (uint32_t r = 0; r < c.batch; ++r) rows.push_back(r);
    std::vector<double> ref(n_out_total, 0.0), x(c.n_in), tile_d(y_tile.begin(), y_tile.end());
    std::vector<std::vector<double>> z;
    for (uint32_t r : rows) {
        for (uint32_t i = 0; i < c.n_in; ++i) x[i] = in[(size_t)r * c.n_in + i];
        reference::forward(d, params.data(), x.data(), ref.data() + (size_t)r * c.n_out, z);
    }
    // The tolerance of the other inference kernels (test_fused_mlp.cpp):
    // fp16 operands and activations, fp32 sums.
    const double e = relative_error(y, ref, c.n_out, rows), e_tile = relative_error(y, tile_d, c.n_out, rows);
    EXPECT_LE(e, 1e-3) << case_name(c) << " " << mlp.describe();
    EXPECT_LE(e_tile, 1e-3) << "against the block-tile kernel";
    std::printf("[ errors ] wgmma inference %-40s ref %.2e  tile %.2e\n", case_name(c).c_str(), e, e_tile);
}

std::vector<InferenceCase> cases() {
    std::vector<InferenceCase> v;
    auto add = [&](uint32_t w, uint32_t depth, uint32_t batch, uint32_t n_in, uint32_t n_out) {
        InferenceCase c;
        c.width = w, c.depth = depth, c.batch = batch, c.n_in = n_in, c.n_out = n_out;
        v.push_back(c);
        return &v.back();
    };
    for (uint32_t w : {64u, 128u}) {
        // Depths up to the deepest W = 128 fits (7 hidden layers).
        for (uint32_t depth : {1u, 2u, 3u, 4u, 7u}) add(w, depth, 20011, 32, 16);
        // One partial chunk, a chunk's edges, several chunks per warpgroup.
        for (uint32_t batch : {1u, 63u, 64u, 65u, 1000u, 200003u}) add(w, 2, batch, 32, 16);
        // Padding: both input variants (n_in_pad 32 and 64), odd widths.
        add(w, 2, 1001, 3, 1);
        add(w, 3, 1001, 17, 5);
        add(w, 2, 1001, 40, 3);
        add(w, 2, 4099, 64, 16);
        // Output activations; pointers off the pair grid.
        add(w, 2, 4099, 32, 16)->output = Activation::Sigmoid;
        add(w, 2, 4099, 32, 4)->output = Activation::Exponential;
        add(w, 2, 4099, 32, 16)->out_offset = 1;
        add(w, 2, 4099, 17, 6)->out_offset = 1;
        add(w, 2, 4099, 32, 16)->in_offset = 1;
    }
    return v;
}

class WgmmaInference : public ::testing::TestWithParam<InferenceCase> {};

TEST_P(WgmmaInference, MatchesReferenceTileKernelAndFp32Path) {
    SKIP_WITHOUT_HOPPER();
    check_case(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, WgmmaInference, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<InferenceCase>& p) { return case_name(p.param); });

// Which shapes and tunings plan the kernel (needs a device for FusedMlp).
TEST(WgmmaInferenceSelection, PlannedWhereItAppliesAndAsked) {
    SKIP_WITHOUT_GPU();
    const bool hopper = hopper_device();
    auto planned = [](FusedMlpConfig cfg, FusedMlpTuning t = {}) { return FusedMlp(cfg, t).inference_plan().wgmma_inference; };
    auto planned_half = [](FusedMlpConfig cfg) { return FusedMlp(cfg, {}).inference_half_plan().wgmma_inference; };
    const FusedMlpConfig w128{32, 16, 128, 2, Activation::ReLU, Activation::None};
    const FusedMlpConfig w128_one{32, 16, 128, 1, Activation::ReLU, Activation::None};
    const FusedMlpConfig w64{32, 16, 64, 2, Activation::ReLU, Activation::None};
    EXPECT_EQ(planned(w128), hopper);
    EXPECT_EQ(planned_half(w128), hopper);
    EXPECT_FALSE(planned(w128_one));  // fp32 I/O at one hidden layer: the block-tile kernel
    EXPECT_EQ(planned_half(w128_one), hopper);
    EXPECT_FALSE(planned(w64));
    EXPECT_FALSE(planned_half(w64));
    const FusedMlpConfig w64_three{32, 16, 64, 3, Activation::ReLU, Activation::None};
    EXPECT_FALSE(planned(w64_three));  // fp32 I/O at W = 64: the warp kernel
    EXPECT_EQ(planned_half(w64_three), hopper);
    FusedMlpTuning on, off, tile;
    on.wgmma_inference = 1;
    off.wgmma_inference = 0;
    tile.tile_inference = true;
    tile.wgmma_inference = 1;
    EXPECT_EQ(planned(w64, on), hopper);
    EXPECT_FALSE(planned(w128, off));
    EXPECT_FALSE(planned(w128, tile));
    // Outside the contract: other widths, hidden activations, wide inputs and
    // outputs, and depths whose weights exceed shared memory.
    const FusedMlpConfig unsupported[] = {
        {32, 16, 32, 2, Activation::ReLU, Activation::None},
        {32, 16, 256, 2, Activation::ReLU, Activation::None},
        {32, 16, 128, 2, Activation::SiLU, Activation::None},
        {65, 16, 128, 2, Activation::ReLU, Activation::None},
        {32, 17, 128, 2, Activation::ReLU, Activation::None},
        {32, 16, 128, 8, Activation::ReLU, Activation::None},
    };
    for (const FusedMlpConfig& cfg : unsupported) EXPECT_FALSE(planned(cfg, on)) << FusedMlp(cfg, on).describe();
}

// The request rule (host logic): tile_inference first, then the tuning, then
// FUSEDNGP_WGMMA_INFERENCE, then where it measured faster (wgmma_inference_wins:
// W = 128 with fp16 I/O or from 2 hidden layers, W = 64 with fp16 I/O from 3).
TEST(WgmmaInferenceSelection, RequestFollowsTuningThenEnvironmentThenWidth) {
    test::ScopedEnv env("FUSEDNGP_WGMMA_INFERENCE", nullptr);
    FusedMlpTuning automatic, on, off, tile;
    on.wgmma_inference = 1;
    off.wgmma_inference = 0;
    tile.tile_inference = true;
    tile.wgmma_inference = 1;
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u})
        for (uint32_t d : {1u, 2u, 3u, 4u})
            for (bool half : {false, true})
                EXPECT_EQ(wgmma_inference_requested(automatic, w, d, half),
                          (w == 128 && (half || d >= 2)) || (w == 64 && half && d >= 3))
                    << "W " << w << " D " << d << " half " << half;
    EXPECT_TRUE(wgmma_inference_requested(on, 64, 1, false));
    EXPECT_FALSE(wgmma_inference_requested(off, 128, 2, true));
    EXPECT_FALSE(wgmma_inference_requested(tile, 128, 2, true));
    env.set("0");
    EXPECT_FALSE(wgmma_inference_requested(automatic, 128, 2, true));
    EXPECT_TRUE(wgmma_inference_requested(on, 128, 2, false));
    env.set("1");
    EXPECT_TRUE(wgmma_inference_requested(automatic, 64, 1, false));
    EXPECT_FALSE(wgmma_inference_requested(off, 64, 1, false));
    EXPECT_FALSE(wgmma_inference_requested(tile, 64, 1, false));
}

// Shared memory: W = 128 fits 7 hidden layers in 227 KB, not 8.
TEST(WgmmaInferenceSelection, DeepestW128FitsSharedMemory) {
    MlpShape s = mlp_shape(32, 128, 7, 16, Activation::ReLU, Activation::None);
    EXPECT_TRUE(wgmma_inference_shape_supported(s));
    EXPECT_LE(wgmma_inference_smem_bytes(s), 227u * 1024u);
    s.n_hidden = 8;
    EXPECT_GT(wgmma_inference_smem_bytes(s), 227u * 1024u);
}

} // namespace
} // namespace fusedngp::gpu
