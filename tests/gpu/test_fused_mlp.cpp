// FusedMlp against the double-precision reference (kernels/mlp_reference.h).
//
// Weights and inputs are drawn at random and then rounded to fp16, so the
// reference evaluates exactly the function the tensor cores see; what is
// left is the kernels' own rounding (fp16 activations and deltas, fp32 sums).
// Every output buffer is poisoned with NaN before the GPU writes it.
#include "fused_mlp_wgmma_launch.h"
#include "gpu/fused_mlp.h"
#include "mlp_reference.h"
#include "mlp_test_util.h"
#include "scoped_env.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace fusedngp::gpu {
namespace {

using namespace mlp_test;

struct Case {
    uint32_t width = 64, depth = 2, batch = 127, n_in = 32, n_out = 16;
    Activation hidden = Activation::ReLU, output = Activation::None;
    uint64_t seed = 1;
    double fwd_tol = 1e-3, grad_tol = 1e-2;
    double dout_scale = 1.0;      // magnitude of the random dL/dout
    FusedMlpTuning tuning{};
    std::string label;            // prefix of the test name
};

std::string case_name(const Case& c) {
    return c.label + "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) + "_in" +
           std::to_string(c.n_in) + "_out" + std::to_string(c.n_out) + "_act" + std::to_string((int)c.hidden) + "_" +
           std::to_string((int)c.output);
}

// gtest prints parameters through this (ctest lists them): the case name
// instead of the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

reference::MlpDims dims_of(const Case& c) {
    reference::MlpDims d;
    d.n_in = c.n_in;
    d.width = c.width;
    d.n_hidden = c.depth;
    d.n_out = c.n_out;
    d.hidden = c.hidden;
    d.output = c.output;
    return d;
}

// inference + backward against the reference.
void check_against_reference(const Case& c) {
    std::mt19937_64 rng(c.seed * 7919 + c.width * 31 + c.depth);
    const reference::MlpDims d = dims_of(c);
    const std::vector<double> params = random_params(d, rng);
    const Inputs inputs = random_inputs(d, params, c.batch, c.seed);
    const std::vector<double>& in = inputs.x;
    std::vector<double> dout = random_values((size_t)c.batch * c.n_out, c.dout_scale, false, rng);
    size_t masked = 0;
    for (uint32_t row = 0; row < c.batch; ++row) {
        if (!inputs.masked[row]) continue;
        ++masked;
        for (uint32_t o = 0; o < c.n_out; ++o) dout[(size_t)row * c.n_out + o] = 0.0;
    }
    ASSERT_LT(masked, c.batch) << "every row is near a ReLU kink";

    FusedMlpConfig cfg;
    cfg.n_input_dims = c.n_in;
    cfg.n_output_dims = c.n_out;
    cfg.width = c.width;
    cfg.n_hidden_layers = c.depth;
    cfg.hidden_activation = c.hidden;
    cfg.output_activation = c.output;
    FusedMlp mlp(cfg, c.tuning);
    ASSERT_EQ(mlp.n_params(), d.n_params());
    const std::vector<float> params_f = to_float(params);
    mlp.set_params(params_f.data());

    DeviceFloats d_in(to_float(in)), d_dout(to_float(dout));
    DeviceFloats d_out((size_t)c.batch * c.n_out), d_din((size_t)c.batch * c.n_in), d_dw(d.n_params());
    mlp.inference(d_in.ptr(), d_out.ptr(), c.batch, nullptr);
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), c.batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());

    const ReferenceResult ref = reference_pass(d, params, in, c.batch, [&](uint32_t row, const double*, double* dy) {
        for (uint32_t o = 0; o < c.n_out; ++o) dy[o] = dout[(size_t)row * c.n_out + o];
    });
    const std::vector<float> out = d_out.download(), din = d_din.download(), dw = d_dw.download();
    EXPECT_TRUE(all_finite(out)) << "unwritten or non-finite output";
    EXPECT_TRUE(all_finite(din)) << "unwritten or non-finite dL/dinput";
    EXPECT_TRUE(all_finite(dw)) << "unwritten or non-finite dL/dW";

    const std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    const double e_out = relative_error(out, ref.out, c.n_out, rows);
    const double e_din = relative_error(din, ref.din, c.n_in, rows);
    const double e_dw = relative_error(dw, ref.dparams, 0, {});
    EXPECT_LE(e_out, c.fwd_tol) << case_name(c) << " " << mlp.describe();
    EXPECT_LE(e_din, c.grad_tol) << case_name(c) << " " << mlp.describe();
    EXPECT_LE(e_dw, c.grad_tol) << case_name(c) << " " << mlp.describe();
    // A gradient that is all zero would pass a loose relative test only if the
    // reference were zero too; make sure it is not.
    double dw_norm = 0;
    for (float v : dw) dw_norm += (double)v * v;
    EXPECT_GT(dw_norm, 0.0);
    std::printf("[ errors ] %-40s out %.2e  din %.2e  dW %.2e  (rows masked at kinks: %zu)\n", case_name(c).c_str(),
                e_out, e_din, e_dw, masked);
}

// ---- Width x depth x batch grid ------------------------------------------------------

const Activation kActivations[] = {Activation::ReLU,     Activation::LeakyReLU, Activation::Sine,
                                   Activation::Sigmoid,  Activation::Softplus,  Activation::Tanh,
                                   Activation::SiLU,     Activation::None,      Activation::Squareplus,
                                   Activation::Exponential};

// Output activations of the grid: bounded sensitivity to the pre-activation.
// Sine and Exponential amplify the (fp16-sized) absolute error of large
// pre-activations of deep nets, and ReLU on a single output can be dead for
// every row; those three are covered by the activation sweep below, at a
// depth and scale where the comparison is well-conditioned.
const Activation kGridOutputActivations[] = {Activation::None,     Activation::Sigmoid, Activation::Tanh,
                                             Activation::Softplus, Activation::SiLU,    Activation::Squareplus,
                                             Activation::LeakyReLU};

std::vector<Case> grid_cases() {
    std::vector<Case> cases;
    int i = 0;
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u})
        for (uint32_t depth : {1u, 2u, 4u})
            for (uint32_t batch : {1u, 127u}) {
                Case c;
                c.width = w;
                c.depth = depth;
                c.batch = batch;
                // Exponential compounds through deep stacks until fp16
                // overflows (as in any fp16 MLP): it is left out of the
                // hidden activations here (the sweep covers it at depth 2).
                c.hidden = kActivations[i % 9];
                c.output = kGridOutputActivations[(i * 3 + 1) % 7];
                c.n_in = (i % 3 == 0) ? 3 : 32;  // odd widths exercise the padding
                c.n_out = (i % 4 == 1) ? 1 : 16;
                c.seed = 100 + i;
                cases.push_back(c);
                ++i;
            }
    return cases;
}

class FusedMlpGrid : public ::testing::TestWithParam<Case> {};

TEST_P(FusedMlpGrid, MatchesDoubleReference) {
    SKIP_WITHOUT_GPU();
    check_against_reference(GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllWidths, FusedMlpGrid, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return case_name(param_info.param); });

// ---- Every activation, as hidden and as output activation ---------------------------

std::vector<Case> activation_cases() {
    std::vector<Case> cases;
    for (Activation a : kActivations) {
        Case hidden;
        hidden.width = 32;
        hidden.hidden = a;
        hidden.seed = 7 + (int)a;
        hidden.label = "hidden_";
        cases.push_back(hidden);
        Case output = hidden;
        output.hidden = Activation::ReLU;
        output.output = a;
        output.seed = 50 + (int)a;
        output.label = "output_";
        cases.push_back(output);
    }
    return cases;
}

class FusedMlpActivations : public ::testing::TestWithParam<Case> {};

TEST_P(FusedMlpActivations, MatchesDoubleReference) {
    SKIP_WITHOUT_GPU();
    check_against_reference(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Each, FusedMlpActivations, ::testing::ValuesIn(activation_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return case_name(param_info.param); });

// ---- Larger shapes and launch variants ------------------------------------------------

TEST(FusedMlp, HugeOddBatch) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 16;
    c.depth = 2;
    c.batch = 1000003;  // many tiles per block: exercises the partial sums
    c.hidden = Activation::ReLU;
    check_against_reference(c);
}

TEST(FusedMlp, ManyTilesPerBlockWithSmallTiles) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 64;
    c.depth = 2;
    c.batch = 60001;
    c.tuning.rows_per_tile = 32;
    c.hidden = Activation::Tanh;
    check_against_reference(c);
}

// 157 tiles over (typically) 132 blocks: some blocks run two tiles. Small
// enough to run under compute-sanitizer racecheck.
TEST(FusedMlp, TwoTilesPerBlock) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 64;
    c.depth = 2;
    c.batch = 5000;
    c.tuning.rows_per_tile = 32;
    c.hidden = Activation::Softplus;
    check_against_reference(c);
}

// Small batches shrink the tile so they spread over the SMs (fill_gpu, the
// default, exercised by every small-batch test above); the full-tile path for
// a batch that leaves blocks idle must agree with the reference too.
TEST(FusedMlp, FullTilesWithoutFillingTheGpu) {
    SKIP_WITHOUT_GPU();
    for (uint32_t w : {16u, 256u}) {
        Case c;
        c.width = w;
        c.depth = 2;
        c.batch = 3001;
        c.tuning.fill_gpu = false;
        c.hidden = Activation::SiLU;
        check_against_reference(c);
    }
}

// The default path prefetches the next tile into L2 (a hint only); the path
// without it must agree with the reference too, over several tiles per block.
TEST(FusedMlp, WithoutL2Prefetch) {
    SKIP_WITHOUT_GPU();
    for (uint32_t w : {16u, 64u}) {
        Case c;
        c.width = w;
        c.depth = 2;
        c.batch = 70001;
        c.tuning.l2_prefetch = false;
        check_against_reference(c);
    }
}

TEST(FusedMlp, OneRowTilePerWarp) {
    SKIP_WITHOUT_GPU();
    for (uint32_t w : {16u, 64u, 128u}) {
        Case c;
        c.width = w;
        c.depth = 3;
        c.batch = 1000;
        c.tuning.row_tiles_per_warp = 1;
        c.hidden = Activation::SiLU;
        check_against_reference(c);
    }
}

// Deepest and widest: too much state per row for 32-row slabs, so the
// planner falls back to 16-row slabs. fp16 rounding of 16 stacked layers
// adds up (~sqrt(depth) * 2e-4), hence the looser forward tolerance.
TEST(FusedMlp, DeepWide) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 256;
    c.depth = 16;
    c.batch = 200;
    c.hidden = Activation::Tanh;
    c.fwd_tol = 3e-3;
    c.grad_tol = 2e-2;
    check_against_reference(c);
}

TEST(FusedMlp, WideInputAndOutput) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 64;
    c.depth = 2;
    c.batch = 777;
    c.n_in = 100;
    c.n_out = 70;
    c.hidden = Activation::ReLU;
    check_against_reference(c);
}

// Mean-reduced losses over big batches give dL/dout ~ 1e-6, below fp16's
// normal range; the loss scale must keep the gradients accurate.
TEST(FusedMlp, TinyLossGradients) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 64;
    c.depth = 2;
    c.batch = 500;
    c.dout_scale = 2e-6;
    check_against_reference(c);
}

TEST(FusedMlp, FusedL2TrainStep) {
    SKIP_WITHOUT_GPU();
    const uint32_t batch = 3001;
    Case c;
    c.width = 64;
    c.depth = 3;
    c.batch = batch;
    c.hidden = Activation::SiLU;
    c.output = Activation::Sigmoid;
    std::mt19937_64 rng(99);
    const reference::MlpDims d = dims_of(c);
    const std::vector<double> params = random_params(d, rng);
    const std::vector<double> in = random_values((size_t)batch * c.n_in, 1.0, true, rng);
    std::vector<double> target = random_values((size_t)batch * c.n_out, 1.0, false, rng);

    FusedMlpConfig cfg{c.n_in, c.n_out, c.width, c.depth, c.hidden, c.output};
    FusedMlp mlp(cfg);
    const std::vector<float> params_f = to_float(params);
    mlp.set_params(params_f.data());
    DeviceFloats d_in(to_float(in)), d_target(to_float(target));
    DeviceFloats d_out((size_t)batch * c.n_out), d_din((size_t)batch * c.n_in), d_dw(d.n_params());
    mlp.train_step(d_in.ptr(), d_target.ptr(), LossKind::L2, d_out.ptr(), d_din.ptr(), d_dw.ptr(), batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());

    const double norm = 1.0 / ((double)batch * c.n_out);
    const ReferenceResult ref = reference_pass(d, params, in, batch, [&](uint32_t row, const double* y, double* dy) {
        for (uint32_t o = 0; o < c.n_out; ++o) dy[o] = 2.0 * (y[o] - target[(size_t)row * c.n_out + o]) * norm;
    });
    const auto out = d_out.download(), din = d_din.download(), dw = d_dw.download();
    EXPECT_LE(relative_error(out, ref.out, c.n_out, {}), 1e-3);
    EXPECT_LE(relative_error(din, ref.din, c.n_in, {}), 1e-2);
    EXPECT_LE(relative_error(dw, ref.dparams, 0, {}), 1e-2);
}

// Same inputs -> bit-identical gradients, also when replayed from a CUDA graph.
// A call picks its training kernel by its batch (choose_warp_training), so a
// graph captured for one batch replays that batch's kernel: each width runs
// a batch above the crossover (the warp training kernel: per-warp or
// per-block sums combined in a fixed order, then the block reduce) and one
// below it (the block-tile kernel); on a Hopper GPU also the wgmma kernel
// (each partial element summed by one owning thread, in tile order).
void check_deterministic(uint32_t width, uint32_t batch, const std::string& kernel) {
    const uint32_t n_in = 32, n_out = 16;
    FusedMlpConfig cfg{n_in, n_out, width, 2, Activation::ReLU, Activation::None};
    FusedMlp mlp(cfg);
    const auto& plan = mlp.training_plan_for(batch);
    EXPECT_EQ(plan.wgmma ? "wgmma" : plan.warp ? "warp" : "tile", kernel)
        << "W" << width << " batch " << batch << " " << mlp.describe();
    std::mt19937_64 rng(5);
    const reference::MlpDims d{n_in, width, 2, n_out, Activation::ReLU, Activation::None};
    const auto params = to_float(random_params(d, rng));
    mlp.set_params(params.data());
    DeviceFloats d_in(to_float(random_values((size_t)batch * n_in, 1.0, true, rng)));
    DeviceFloats d_dout(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
    DeviceFloats d_out((size_t)batch * n_out), d_din((size_t)batch * n_in), d_dw(d.n_params());

    cudaStream_t stream;
    FUSEDNGP_CUDA_CHECK(cudaStreamCreate(&stream));
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, stream);
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto dw1 = d_dw.download(), din1 = d_din.download();
    EXPECT_TRUE(all_finite(dw1));
    EXPECT_TRUE(all_finite(din1));

    d_dw.poison();
    d_din.poison();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FUSEDNGP_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    mlp.forward(d_in.ptr(), d_out.ptr(), batch, stream);
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, stream);
    FUSEDNGP_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    FUSEDNGP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
        FUSEDNGP_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
        const auto dw2 = d_dw.download(), din2 = d_din.download();
        EXPECT_EQ(0, std::memcmp(dw1.data(), dw2.data(), dw1.size() * sizeof(float))) << "W" << width << " B" << batch;
        EXPECT_EQ(0, std::memcmp(din1.data(), din2.data(), din1.size() * sizeof(float))) << "W" << width << " B" << batch;
    }
    EXPECT_TRUE(all_finite(d_out.download()));

    // accumulate = true adds onto what is there.
    mlp.backward(d_in.ptr(), d_dout.ptr(), nullptr, d_dw.ptr(), batch, stream, true);
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto dw3 = d_dw.download();
    for (size_t i = 0; i < dw3.size(); ++i) ASSERT_EQ(dw3[i], dw1[i] + dw1[i]) << "W" << width << " B" << batch << " " << i;

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

// The ReLU flavour of the warp training kernel (kWarpRelu) only compiles in
// what flavour 0 picks at run time for a ReLU / None network: the same
// arithmetic, so bit-identical dL/dW, dL/dinput and outputs when both run the
// same variant on the same grid (the flavours' register counts may differ,
// and with them the blocks per SM, the grid and so the order of the fp32
// sums: both are held at one block per SM here), for every weight-gradient
// mode (per-warp sums at W16, per-block at W32, the 128-register kernel at W64).
// Backward (dL/dW, dL/dinput from dL/dout) and then the fused L2 step
// (output, dL/dW) of one network, downloaded in that order: what the
// same-bits tests below compare between two kernels.
struct BackwardAndL2Step {
    std::vector<float> dw, din, out, dw_l2;
};
BackwardAndL2Step backward_and_l2_step(FusedMlp& mlp, const DeviceFloats& in, const DeviceFloats& dout,
                                       const DeviceFloats& target, uint32_t batch, size_t n_params) {
    const uint32_t n_in = (uint32_t)(in.n / batch), n_out = (uint32_t)(dout.n / batch);
    DeviceFloats d_out((size_t)batch * n_out), d_din((size_t)batch * n_in), d_dw(n_params);
    BackwardAndL2Step r;
    mlp.backward(in.ptr(), dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    r.dw = d_dw.download();
    r.din = d_din.download();
    mlp.train_step(in.ptr(), target.ptr(), LossKind::L2, d_out.ptr(), nullptr, d_dw.ptr(), batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    r.out = d_out.download();
    r.dw_l2 = d_dw.download();
    return r;
}

// Every result of a and b finite and bit for bit the same.
void expect_same_bits(const BackwardAndL2Step& a, const BackwardAndL2Step& b, const std::string& what) {
    const std::pair<const char*, const std::vector<float>*> parts[] = {
        {"backward dL/dW", &a.dw}, {"backward dL/dinput", &a.din}, {"L2 step output", &a.out}, {"L2 step dL/dW", &a.dw_l2}};
    const std::vector<float>* other[] = {&b.dw, &b.din, &b.out, &b.dw_l2};
    for (size_t k = 0; k < 4; ++k) {
        const std::vector<float>& x = *parts[k].second;
        const std::vector<float>& y = *other[k];
        EXPECT_TRUE(all_finite(x)) << what << " " << parts[k].first;
        EXPECT_TRUE(x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0)
            << what << " " << parts[k].first;
    }
}

TEST(FusedMlp, WarpTrainingReluFlavourSameBitsAsRuntimeActivations) {
    SKIP_WITHOUT_GPU();
    const uint32_t n_in = 32, n_out = 16, batch = 300007;
    for (uint32_t w : {16u, 32u, 64u}) {
        FusedMlpConfig cfg{n_in, n_out, w, 2, Activation::ReLU, Activation::None};
        FusedMlpTuning relu_t;
        relu_t.force_warp_training = true;
        relu_t.max_blocks_per_sm = 1;
        relu_t.warp_train_dw_mode = (int)(w == 16 ? WarpDwMode::PerWarp : (w == 32 ? WarpDwMode::Shared : WarpDwMode::Shared128));
        relu_t.warp_train_warps = 8;
        FusedMlpTuning f0_t = relu_t;
        f0_t.warp_train_flavor = 0;
        FusedMlp relu(cfg, relu_t), f0(cfg, f0_t);
        ASSERT_TRUE(relu.training_plan_for(batch).warp);
        ASSERT_TRUE(f0.training_plan_for(batch).warp);
        ASSERT_EQ(relu.training_plan_for(batch).warp_train.flavor, (int)kWarpRelu) << relu.describe();
        ASSERT_EQ(f0.training_plan_for(batch).warp_train.flavor, 0) << f0.describe();
        ASSERT_EQ(relu.training_plan_for(batch).max_blocks, f0.training_plan_for(batch).max_blocks);
        ASSERT_EQ((int)relu.training_plan_for(batch).warp_train.dw_mode, relu_t.warp_train_dw_mode);
        ASSERT_EQ(relu.training_plan_for(batch).warp_train.warps, f0.training_plan_for(batch).warp_train.warps);
        std::printf("[ plans  ] W%u relu: %s\n             f0: %s\n", w, relu.describe().c_str(), f0.describe().c_str());
        std::mt19937_64 rng(11 + w);
        const reference::MlpDims d{n_in, w, 2, n_out, Activation::ReLU, Activation::None};
        const auto params = to_float(random_params(d, rng));
        relu.set_params(params.data());
        f0.set_params(params.data());
        DeviceFloats d_in(to_float(random_values((size_t)batch * n_in, 1.0, true, rng)));
        DeviceFloats d_dout(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
        DeviceFloats d_target(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
        expect_same_bits(backward_and_l2_step(relu, d_in, d_dout, d_target, batch, d.n_params()),
                         backward_and_l2_step(f0, d_in, d_dout, d_target, batch, d.n_params()), "W" + std::to_string(w));
    }
}

// The ReLU flavour's kernels without the fused loss's extras (what calls
// that need none run) against the same variant with them
// (FusedMlpTuning::warp_train_extras = 1): the same bits for backward and the
// L2 step, at each width's planned variant.
TEST(FusedMlp, WarpTrainingLeanAndExtrasKernelsSameBits) {
    SKIP_WITHOUT_GPU();
    const uint32_t n_in = 32, n_out = 16, batch = 20011;
    for (uint32_t w : {16u, 32u, 64u}) {
        FusedMlpConfig cfg{n_in, n_out, w, 2, Activation::ReLU, Activation::None};
        FusedMlpTuning lean_t;
        lean_t.force_warp_training = true;
        FusedMlpTuning extras_t = lean_t;
        extras_t.warp_train_extras = 1;
        FusedMlp lean(cfg, lean_t), extras(cfg, extras_t);
        ASSERT_TRUE(lean.training_plan_for(batch).warp);
        ASSERT_EQ(lean.training_plan_for(batch).warp_train.flavor, (int)kWarpRelu) << lean.describe();
        ASSERT_FALSE(lean.training_plan_for(batch).warp_train.always_extras);
        ASSERT_TRUE(extras.training_plan_for(batch).warp_train.always_extras);
        std::mt19937_64 rng(29 + w);
        const reference::MlpDims d{n_in, w, 2, n_out, Activation::ReLU, Activation::None};
        const auto params = to_float(random_params(d, rng));
        lean.set_params(params.data());
        extras.set_params(params.data());
        DeviceFloats d_in(to_float(random_values((size_t)batch * n_in, 1.0, true, rng)));
        DeviceFloats d_dout(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
        DeviceFloats d_target(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
        expect_same_bits(backward_and_l2_step(lean, d_in, d_dout, d_target, batch, d.n_params()),
                         backward_and_l2_step(extras, d_in, d_dout, d_target, batch, d.n_params()), "W" + std::to_string(w));
    }
}

TEST(FusedMlp, DeterministicAndGraphCapturable) {
    SKIP_WITHOUT_GPU();
    {
        // The warp / tile choice by batch: with the wgmma kernel off, which
        // takes W = 64 at every batch on a compute capability 9.0 device.
        test::ScopedEnv no_wgmma("FUSEDNGP_WGMMA_TRAIN", "0");
        for (uint32_t w : {64u, 16u, 32u}) {
            check_deterministic(w, 300000, "warp");
            check_deterministic(w, 20000, "tile");
        }
    }
    int device = 0;
    FUSEDNGP_CUDA_CHECK(cudaGetDevice(&device));
    if (!wgmma_train_device_ok(device)) return;
    for (uint32_t w : {64u, 128u})
        for (uint32_t batch : {300000u, 20000u}) check_deterministic(w, batch, "wgmma");
}

// ---- Warp inference kernel against the block-tile kernel ------------------------------
//
// W <= 64 inference runs the register-resident warp kernel by default (the
// grid above checks it against the reference at every width, depth and
// activation). Here both kernels run on the same weights and inputs, into
// NaN-poisoned outputs, and each is compared with the double reference and
// with the other. c.tuning selects the warp kernel's variant; the tile run
// adds tile_inference. Batches: 1 (one partial slab), 127, 200003 (several
// slabs per warp: the input pipeline), 1000003 (4098 rows compared).

// The flavour bits a forced FusedMlpTuning::warp_flavor keeps (the rules
// of FusedMlp::warp_flavor_for, restated).
int expected_warp_flavor(const Case& c, const FusedMlp::PassPlan& plan) {
    if (!plan.warp_variant.weights_in_smem) return 0;
    int f = c.tuning.warp_flavor;
    if (c.hidden != Activation::ReLU || c.output != Activation::None) f &= ~kWarpRelu;
    if (c.n_in != 16u * (uint32_t)plan.warp_variant.kt_in) f &= ~kWarpStage;
    return f;
}

void check_warp_against_tile(const Case& c) {
    std::mt19937_64 rng(c.seed * 104729 + c.width * 131 + c.depth);
    const reference::MlpDims d = dims_of(c);
    const std::vector<double> params = random_params(d, rng);
    const std::vector<float> in = to_float(random_values((size_t)c.batch * c.n_in, 1.0, true, rng));

    FusedMlpConfig cfg{c.n_in, c.n_out, c.width, c.depth, c.hidden, c.output};
    FusedMlp warp(cfg, c.tuning);
    FusedMlpTuning tile_tuning = c.tuning;
    tile_tuning.tile_inference = true;
    FusedMlp tile(cfg, tile_tuning);
    ASSERT_TRUE(warp.inference_plan().warp) << warp.describe();
    ASSERT_FALSE(tile.inference_plan().warp) << tile.describe();
    if (c.tuning.row_tiles_per_warp != 0) {
        EXPECT_EQ(warp.inference_plan().row_tiles_per_warp, c.tuning.row_tiles_per_warp);
    }
    if (c.tuning.warp_weights_in_smem >= 0) {
        EXPECT_EQ(warp.inference_plan().warp_variant.weights_in_smem, c.tuning.warp_weights_in_smem == 1);
    }
    if (c.tuning.warp_flavor >= 0) {
        EXPECT_EQ(warp.inference_plan().warp_variant.flavor, expected_warp_flavor(c, warp.inference_plan()))
            << warp.describe();
    }
    const std::vector<float> params_f = to_float(params);
    warp.set_params(params_f.data());
    tile.set_params(params_f.data());

    DeviceFloats d_in(in), d_warp((size_t)c.batch * c.n_out), d_tile((size_t)c.batch * c.n_out);
    warp.inference(d_in.ptr(), d_warp.ptr(), c.batch, nullptr);
    tile.inference(d_in.ptr(), d_tile.ptr(), c.batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> out_warp = d_warp.download(), out_tile = d_tile.download();
    ASSERT_TRUE(all_finite(out_warp)) << "warp kernel: unwritten or non-finite output " << warp.describe();
    ASSERT_TRUE(all_finite(out_tile)) << "tile kernel: unwritten or non-finite output";

    std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    std::vector<uint32_t> all_rows;
    if (rows.empty())
        for (uint32_t r = 0; r < c.batch; ++r) all_rows.push_back(r);
    const std::vector<uint32_t>& checked = rows.empty() ? all_rows : rows;
    std::vector<double> ref((size_t)c.batch * c.n_out, 0.0), tile_d(out_tile.begin(), out_tile.end());
    std::vector<std::vector<double>> z;
    std::vector<double> x(c.n_in);
    for (uint32_t r : checked) {
        for (uint32_t i = 0; i < c.n_in; ++i) x[i] = in[(size_t)r * c.n_in + i];
        reference::forward(d, params.data(), x.data(), ref.data() + (size_t)r * c.n_out, z);
    }
    const double e_warp = relative_error(out_warp, ref, c.n_out, checked);
    const double e_tile = relative_error(out_tile, ref, c.n_out, checked);
    const double e_ab = relative_error(out_warp, tile_d, c.n_out, checked);
    EXPECT_LE(e_warp, c.fwd_tol) << case_name(c) << " " << warp.describe();
    EXPECT_LE(e_tile, c.fwd_tol) << case_name(c);
    EXPECT_LE(e_ab, c.fwd_tol) << case_name(c) << " " << warp.describe();
    std::printf("[ errors ] %-52s warp %.2e  tile %.2e  warp-tile %.2e\n", case_name(c).c_str(), e_warp, e_tile, e_ab);
}

// The warp kernel's flavours (WarpFlavor), forced: each one at both slab
// heights with several slabs per warp (the cp.async ring wraps many times),
// the ring at batches of one partial slab, 127 and 1000003 rows, at input
// widths 16 (one k-tile, no swizzle) and 64, with scalar and odd-chunk
// outputs; 16-byte loads with scalar fallbacks (n_in 17, 3) and three
// k-tiles (40, where the ring is dropped); the full grid.
template <typename Add, typename Last>
void add_flavor_cases(uint32_t w, Add add, Last last) {
    const Activation relu = Activation::ReLU, none = Activation::None;
    auto flavored = [&](int flavor, bool full_grid) {
        last().tuning.warp_flavor = flavor;
        last().tuning.warp_full_grid = full_grid;
    };
    for (int f : {1, 2, 3, 6, 7})
        for (int mt : {1, 2}) {
            const bool relu_flavor = (f & kWarpRelu) != 0;
            const std::string label = "f" + std::to_string(f) + "s" + std::to_string(16 * mt) + "_";
            add(w, relu_flavor ? 2 : 3, 200003, 32, 16, relu_flavor ? relu : Activation::SiLU,
                relu_flavor ? none : Activation::Sigmoid, mt, 1, label.c_str());
            flavored(f, false);
        }
    for (uint32_t batch : {1u, 127u, 1000003u}) {
        add(w, 2, batch, 32, 16, relu, none, 0, 1, "f7_");
        flavored(7, false);
    }
    add(w, 2, 1001, 16, 5, relu, none, 0, 1, "f7pad_");
    flavored(7, false);
    add(w, 2, 1001, 64, 70, relu, none, 0, 1, "f7pad_");
    flavored(7, false);
    add(w, 2, 1001, 16, 70, Activation::Tanh, Activation::Softplus, 0, 1, "f6pad_");
    flavored(6, false);
    add(w, 2, 1001, 40, 16, relu, none, 0, 1, "f7pad_");  // kt_in 3: no ring, 16-byte loads
    flavored(7, false);
    add(w, 2, 1001, 17, 5, relu, none, 0, 1, "f3pad_");   // scalar loads and stores
    flavored(3, false);
    add(w, 4, 1001, 3, 1, Activation::LeakyReLU, none, 0, 1, "f2pad_");
    flavored(2, false);
    for (int f : {0, 3}) {
        add(w, 2, 200003, 32, 16, relu, none, 0, 1, f == 0 ? "f0full_" : "f3full_");
        flavored(f, true);
    }
}

std::vector<Case> warp_cases() {
    std::vector<Case> cases;
    auto add = [&](uint32_t w, uint32_t depth, uint32_t batch, uint32_t n_in, uint32_t n_out, Activation hidden,
                   Activation output, int mt, int smem, const char* label) {
        Case c;
        c.width = w;
        c.depth = depth;
        c.batch = batch;
        c.n_in = n_in;
        c.n_out = n_out;
        c.hidden = hidden;
        c.output = output;
        c.tuning.row_tiles_per_warp = mt;
        c.tuning.warp_weights_in_smem = smem;
        c.seed = 300 + cases.size();
        c.label = label;
        if (depth > 4) c.fwd_tol = 3e-3;  // fp16 rounding of 16 stacked layers (as DeepWide)
        cases.push_back(c);
    };
    const Activation relu = Activation::ReLU, none = Activation::None;
    for (uint32_t w : {16u, 32u, 64u}) {
        // The default plan at the batches of the brief and the deepest net.
        for (uint32_t batch : {1u, 127u, 200003u, 1000003u}) add(w, 2, batch, 32, 16, relu, none, 0, -1, "auto_");
        add(w, 16, 1000, 32, 16, Activation::Tanh, none, 0, -1, "auto_");
        add(w, 1, 999, 32, 16, relu, Activation::Sigmoid, 0, -1, "auto_");
        // Every variant (slab height x weight placement), several slabs per warp.
        for (int mt : {1, 2})
            for (int smem : {0, 1})
                add(w, 3, 200003, 32, 16, Activation::SiLU, none, mt, smem,
                    mt == 1 ? (smem ? "s16smem_" : "s16l1_") : (smem ? "s32smem_" : "s32l1_"));
        // Input and output padding: n_in 3 (scalar loads, one k-tile), 17 (odd,
        // two k-tiles), 40 (three k-tiles in the four-tile kernel), 64 (four);
        // n_out 1 (scalar stores), 70 (odd chunks: five output chunks).
        add(w, 2, 1001, 3, 1, Activation::LeakyReLU, none, 0, -1, "pad_");
        add(w, 2, 1001, 17, 5, Activation::Sine, Activation::Tanh, 0, -1, "pad_");
        add(w, 2, 1001, 40, 70, Activation::Softplus, none, 0, -1, "pad_");
        add(w, 4, 1001, 64, 16, Activation::Sigmoid, Activation::Squareplus, 1, 0, "pad_");
        add(w, 4, 1001, 64, 16, Activation::Squareplus, Activation::SiLU, 2, 1, "pad_");
        add(w, 16, 127, 3, 1, relu, none, 1, 1, "pad_");
        add_flavor_cases(w, add, [&]() -> Case& { return cases.back(); });
    }
    return cases;
}

class FusedMlpWarpVsTile : public ::testing::TestWithParam<Case> {};

TEST_P(FusedMlpWarpVsTile, SameOutputs) {
    SKIP_WITHOUT_GPU();
    check_warp_against_tile(GetParam());
}

INSTANTIATE_TEST_SUITE_P(WarpInference, FusedMlpWarpVsTile, ::testing::ValuesIn(warp_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return case_name(param_info.param); });

// Input and output pointers off the 16-byte grid (one float in): the
// 16-byte flavours fall back to 4-byte cp.async copies (ring) and scalar
// loads and stores. Each flavour against flavour 0 on aligned buffers.
TEST(FusedMlp, WarpInferenceMisalignedFlavors) {
    SKIP_WITHOUT_GPU();
    std::mt19937_64 rng(77);
    const uint32_t batch = 20011, n_in = 32, n_out = 16;
    for (uint32_t w : {16u, 32u, 64u}) {
        const FusedMlpConfig cfg{n_in, n_out, w, 2, Activation::ReLU, Activation::None};
        reference::MlpDims d;
        d.n_in = n_in, d.width = w, d.n_hidden = 2, d.n_out = n_out;
        const std::vector<float> params = to_float(random_params(d, rng));
        const std::vector<float> in = to_float(random_values((size_t)batch * n_in, 1.0, true, rng));
        std::vector<float> in_off(in.size() + 1, 0.f);
        std::copy(in.begin(), in.end(), in_off.begin() + 1);
        DeviceFloats d_in(in), d_in_off(in_off), d_ref((size_t)batch * n_out), d_out((size_t)batch * n_out + 1);
        FusedMlpTuning t0;
        t0.warp_flavor = 0;
        FusedMlp ref(cfg, t0);
        ref.set_params(params.data());
        ref.inference(d_in.ptr(), d_ref.ptr(), batch, nullptr);
        const std::vector<float> y0 = d_ref.download();
        for (int f : {3, 7}) {
            FusedMlpTuning t;
            t.warp_flavor = f;
            t.warp_weights_in_smem = 1;
            FusedMlp mlp(cfg, t);
            ASSERT_EQ(mlp.inference_plan().warp_variant.flavor, f) << mlp.describe();
            mlp.set_params(params.data());
            d_out.poison();
            mlp.inference(d_in_off.ptr() + 1, d_out.ptr() + 1, batch, nullptr);
            FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
            const std::vector<float> y_off = d_out.download();
            const std::vector<float> y(y_off.begin() + 1, y_off.end());
            ASSERT_TRUE(all_finite(y)) << "W" << w << " flavour " << f;
            double num = 0, den = 0;
            for (size_t i = 0; i < y.size(); ++i) {
                num += ((double)y[i] - y0[i]) * ((double)y[i] - y0[i]);
                den += (double)y0[i] * y0[i];
            }
            EXPECT_LE(std::sqrt(num / den), 1e-3) << "W" << w << " flavour " << f;
        }
    }
}

// Which inference kernel the planner picks.
TEST(FusedMlp, InferenceKernelChoice) {
    SKIP_WITHOUT_GPU();
    auto warp_plan = [](uint32_t n_in, uint32_t w, FusedMlpTuning t = {}) {
        return FusedMlp(FusedMlpConfig{n_in, 16, w, 2, Activation::ReLU, Activation::None}, t).inference_plan().warp;
    };
    EXPECT_TRUE(warp_plan(32, 16));
    EXPECT_TRUE(warp_plan(32, 32));
    EXPECT_TRUE(warp_plan(64, 64));
    EXPECT_FALSE(warp_plan(32, 128));   // activations would not fit in registers
    EXPECT_FALSE(warp_plan(65, 64));    // input too wide to prefetch into registers
    EXPECT_FALSE(warp_plan(100, 16));
    FusedMlpTuning tile;
    tile.tile_inference = true;
    EXPECT_FALSE(warp_plan(32, 16, tile));
    // Automatic flavour: ReLU compiled in where the network is ReLU/None,
    // 16-byte I/O with weights in smem, no cp.async ring; weights in L1:
    // flavour 0.
    auto flavor = [](Activation hidden, FusedMlpTuning t = {}) {
        return FusedMlp(FusedMlpConfig{32, 16, 32, 2, hidden, Activation::None}, t).inference_plan().warp_variant.flavor;
    };
    EXPECT_EQ(flavor(Activation::ReLU), kWarpRelu | kWarpVec4);
    EXPECT_EQ(flavor(Activation::SiLU), kWarpVec4);
    FusedMlpTuning l1;
    l1.warp_weights_in_smem = 0;
    EXPECT_EQ(flavor(Activation::ReLU, l1), 0);
}

// ---- Warp training kernel against the block-tile kernel ------------------------------
//
// Training at W = 16/32/64 runs the warp training kernel from the crossover
// batch on (choose_warp_training) and the block-tile kernel below it, so the
// suites above test whichever the batch picks. Here both training kernels run
// on the same weights, inputs and dL/dout (or targets), the warp kernel forced
// (FusedMlpTuning::force_warp_training, for every batch) and, where a case
// names one, in a forced variant (per-warp or per-block weight-gradient sums,
// warps per block); the tile kernel forced by tile_training. Outputs are
// NaN-poisoned (with accumulate, dL/dW is prefilled instead), and each kernel
// is compared with the double reference and with the other. Reference rows
// near a ReLU kink get dL/dout = 0 (backward); the fused losses with kinked
// activations are only compared warp vs tile (both kernels compute identical
// fp16 pre-activations).

enum class TrainMode { Backward, L2, L1 };

struct TrainCase {
    Case c;
    TrainMode mode = TrainMode::Backward;
    bool din = true, accumulate = false;
};

std::string train_case_name(const TrainCase& t) {
    const char* m = t.mode == TrainMode::Backward ? "bwd_" : (t.mode == TrainMode::L2 ? "l2_" : "l1_");
    return std::string(m) + (t.din ? "din_" : "") + (t.accumulate ? "acc_" : "") + case_name(t.c);
}
void PrintTo(const TrainCase& t, std::ostream* os) { *os << train_case_name(t); }

void check_warp_train_against_tile(const TrainCase& t) {
    const Case& c = t.c;
    std::mt19937_64 rng(c.seed * 7907 + c.width * 17 + c.depth);
    const reference::MlpDims d = dims_of(c);
    const std::vector<double> params = random_params(d, rng);
    const Inputs inputs = random_inputs(d, params, c.batch, c.seed);
    const std::vector<double>& in = inputs.x;
    const bool fused = t.mode != TrainMode::Backward;
    std::vector<double> dout = random_values((size_t)c.batch * c.n_out, 1.0, false, rng);
    const std::vector<double> target = random_values((size_t)c.batch * c.n_out, 1.0, false, rng);
    if (!fused)
        for (uint32_t row = 0; row < c.batch; ++row)
            if (inputs.masked[row])
                for (uint32_t o = 0; o < c.n_out; ++o) dout[(size_t)row * c.n_out + o] = 0.0;
    const std::vector<double> prefill = random_values(d.n_params(), 1e-3, false, rng);

    FusedMlpConfig cfg{c.n_in, c.n_out, c.width, c.depth, c.hidden, c.output};
    FusedMlp warp(cfg, c.tuning);
    FusedMlpTuning tile_tuning = c.tuning;
    tile_tuning.tile_training = true;
    FusedMlp tile(cfg, tile_tuning);
    ASSERT_TRUE(warp.training_plan_for(c.batch).warp) << warp.describe();
    ASSERT_FALSE(tile.training_plan_for(c.batch).warp) << tile.describe();
    const WarpTrainVariant& variant = warp.training_plan_for(c.batch).warp_train;
    // The ReLU flavour exactly for hidden ReLU + output None networks (unless
    // flavour 0 is asked for): never for another network, even when forced.
    const bool relu_net = c.hidden == Activation::ReLU && c.output == Activation::None;
    EXPECT_EQ(variant.flavor, relu_net && c.tuning.warp_train_flavor != 0 ? (int)kWarpRelu : 0) << warp.describe();
    if (c.tuning.warp_train_dw_mode >= 0) {
        ASSERT_EQ((int)variant.dw_mode, c.tuning.warp_train_dw_mode) << warp.describe();
    }
    if (c.tuning.warp_train_warps > 0) {
        ASSERT_EQ(variant.warps, c.tuning.warp_train_warps) << warp.describe();
    }
    const std::vector<float> params_f = to_float(params);
    warp.set_params(params_f.data());
    tile.set_params(params_f.data());

    DeviceFloats d_in(to_float(in)), d_dout(to_float(dout)), d_target(to_float(target));
    struct Result {
        std::vector<float> out, din, dw;
    };
    auto run = [&](FusedMlp& mlp) {
        DeviceFloats d_out((size_t)c.batch * c.n_out), d_din((size_t)c.batch * c.n_in), d_dw(d.n_params());
        if (t.accumulate) FUSEDNGP_CUDA_CHECK(cudaMemcpy(d_dw.ptr(), to_float(prefill).data(),
                                                         d.n_params() * sizeof(float), cudaMemcpyHostToDevice));
        float* din = t.din ? d_din.ptr() : nullptr;
        if (fused)
            mlp.train_step(d_in.ptr(), d_target.ptr(), t.mode == TrainMode::L2 ? LossKind::L2 : LossKind::L1,
                           d_out.ptr(), din, d_dw.ptr(), c.batch, nullptr, t.accumulate);
        else
            mlp.backward(d_in.ptr(), d_dout.ptr(), din, d_dw.ptr(), c.batch, nullptr, t.accumulate);
        FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
        Result r;
        if (fused) r.out = d_out.download();
        if (t.din) r.din = d_din.download();
        r.dw = d_dw.download();
        if (t.accumulate)
            for (size_t i = 0; i < r.dw.size(); ++i) r.dw[i] -= (float)prefill[i];
        return r;
    };
    const Result rw = run(warp), rt = run(tile);
    for (const Result* r : {&rw, &rt}) {
        const char* who = r == &rw ? "warp" : "tile";
        EXPECT_TRUE(all_finite(r->out)) << who << ": unwritten or non-finite output";
        EXPECT_TRUE(all_finite(r->din)) << who << ": unwritten or non-finite dL/dinput";
        EXPECT_TRUE(all_finite(r->dw)) << who << ": unwritten or non-finite dL/dW";
    }

    const double norm = 1.0 / ((double)c.batch * c.n_out);
    const bool reference_ok = !fused || (!has_kink(c.hidden) && !has_kink(c.output));
    double e_w[3] = {0, 0, 0}, e_t[3] = {0, 0, 0}, e_ab[3] = {0, 0, 0};
    std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    if (reference_ok) {
        // L1: the sign of the kernels' own (identical) y - target, so that a
        // y within rounding of its target does not flip a whole gradient term.
        const ReferenceResult ref = reference_pass(d, params, in, c.batch, [&](uint32_t row, const double* y, double* dy) {
            for (uint32_t o = 0; o < c.n_out; ++o) {
                const size_t i = (size_t)row * c.n_out + o;
                switch (t.mode) {
                case TrainMode::Backward: dy[o] = dout[i]; break;
                case TrainMode::L2: dy[o] = 2.0 * (y[o] - target[i]) * norm; break;
                case TrainMode::L1: {
                    const double diff = (double)rw.out[i] - target[i];
                    dy[o] = (diff > 0 ? 1.0 : (diff < 0 ? -1.0 : 0.0)) * norm;
                    break;
                }
                }
            }
        });
        for (const Result* r : {&rw, &rt}) {
            double* e = r == &rw ? e_w : e_t;
            if (fused) e[0] = relative_error(r->out, ref.out, c.n_out, rows);
            if (t.din) e[1] = relative_error(r->din, ref.din, c.n_in, rows);
            e[2] = relative_error(r->dw, ref.dparams, 0, {});
        }
    }
    auto to_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
    if (fused) e_ab[0] = relative_error(rw.out, to_double(rt.out), c.n_out, rows);
    if (t.din) e_ab[1] = relative_error(rw.din, to_double(rt.din), c.n_in, rows);
    e_ab[2] = relative_error(rw.dw, to_double(rt.dw), 0, {});
    const double tol[3] = {c.fwd_tol, c.grad_tol, c.grad_tol};
    const char* what[3] = {"out", "dL/din", "dL/dW"};
    for (int k = 0; k < 3; ++k) {
        EXPECT_LE(e_w[k], tol[k]) << what[k] << " warp vs reference " << train_case_name(t) << " " << warp.describe();
        EXPECT_LE(e_t[k], tol[k]) << what[k] << " tile vs reference " << train_case_name(t);
        EXPECT_LE(e_ab[k], tol[k]) << what[k] << " warp vs tile " << train_case_name(t) << " " << warp.describe();
    }
    double dw_norm = 0;
    for (float v : rw.dw) dw_norm += (double)v * v;
    EXPECT_GT(dw_norm, 0.0);
    std::printf("[ errors ] %-60s warp out %.1e din %.1e dW %.1e | tile dW %.1e | warp-tile out %.1e din %.1e dW %.1e%s\n",
                train_case_name(t).c_str(), e_w[0], e_w[1], e_w[2], e_t[2], e_ab[0], e_ab[1], e_ab[2],
                reference_ok ? "" : " (no reference: kinks)");
}

std::vector<TrainCase> warp_train_cases() {
    std::vector<TrainCase> cases;
    // mode: -1 the default variant, else the WarpDwMode forced (with `warps`
    // per block for the shared modes). flavor: -1 automatic (the ReLU
    // flavour for ReLU / None networks), else FusedMlpTuning::warp_train_flavor.
    auto add = [&](uint32_t w, uint32_t depth, uint32_t batch, uint32_t n_in, uint32_t n_out, Activation hidden,
                   Activation output, TrainMode mode, bool din, bool acc, int dw_mode = -1, int warps = 0,
                   int flavor = -1) {
        TrainCase t;
        Case& c = t.c;
        c.width = w;
        c.depth = depth;
        c.batch = batch;
        c.n_in = n_in;
        c.n_out = n_out;
        c.hidden = hidden;
        c.output = output;
        c.seed = 700 + cases.size();
        c.tuning.force_warp_training = true;
        c.tuning.warp_train_dw_mode = dw_mode;
        c.tuning.warp_train_warps = warps;
        c.tuning.warp_train_flavor = flavor;
        if (dw_mode >= 0) {
            static const char* const kModes[] = {"pw", "sh", "s128x"};
            c.label = std::string(kModes[dw_mode]) + (dw_mode > 0 ? std::to_string(warps) : "") + "_";
        }
        if (flavor >= 0) c.label = (flavor == kWarpRelu ? "relu_" : "f" + std::to_string(flavor) + "_") + c.label;
        if (depth > 4) {  // fp16 rounding of many stacked layers (as DeepWide)
            c.fwd_tol = 3e-3;
            c.grad_tol = 2e-2;
        }
        t.mode = mode;
        t.din = din;
        t.accumulate = acc;
        cases.push_back(t);
    };
    const Activation relu = Activation::ReLU, none = Activation::None;
    const TrainMode bwd = TrainMode::Backward, l2 = TrainMode::L2, l1 = TrainMode::L1;
    for (uint32_t w : {16u, 32u, 64u}) {
        // The brief's batches: one partial slab, 127, several slabs per warp.
        for (uint32_t batch : {1u, 127u, 200003u, 1000003u}) add(w, 2, batch, 32, 16, relu, none, bwd, true, false);
        add(w, 2, w == 64 ? 200003 : 1000003, 32, 16, Activation::SiLU, none, l2, false, false);
        add(w, 1, 200003, 3, 1, Activation::SiLU, none, l2, true, false);
        add(w, 4, 200003, 17, 16, Activation::Tanh, Activation::Sigmoid, bwd, false, true);
        add(w, 4, 127, 40, 70, Activation::LeakyReLU, none, l1, true, false);
        add(w, 2, 127, 64, 70, Activation::Softplus, Activation::Tanh, l2, false, true);
        add(w, 2, 1001, 64, 1, Activation::Sine, none, bwd, true, true);
        add(w, 1, 5000, 17, 1, Activation::Sigmoid, Activation::Squareplus, l1, false, false);
        add(w, 2, 200003, 40, 16, Activation::Squareplus, Activation::SiLU, l2, true, false);
        add(w, 3, 1000, 3, 70, none, none, bwd, true, false);
        add(w, 4, 1, 64, 1, relu, Activation::LeakyReLU, bwd, true, true);
        // Every variant the planner may pick, several rounds of slabs per
        // warp (the shared modes' turn order), odd batches.
        const int pw = (int)WarpDwMode::PerWarp, sh = (int)WarpDwMode::Shared, s128 = (int)WarpDwMode::Shared128;
        add(w, w == 64 ? 1 : 2, 300007, 32, 16, Activation::Tanh, none, bwd, true, true, pw);
        for (int warps : {4, 6, 8, 12}) add(w, 2, 300007, 32, 16, Activation::SiLU, none, bwd, true, false, sh, warps);
        add(w, 2, 1001, 17, 70, relu, none, l2, true, true, sh, 12);
        add(w, 3, 100003, 64, 5, Activation::Sine, Activation::Tanh, bwd, true, false, sh, 8);
        if (w == 64)
            for (int warps : {4, 8}) {
                add(w, 2, 300007, 32, 16, Activation::Softplus, none, bwd, true, false, s128, warps);
                add(w, 3, 4097, 40, 3, relu, Activation::Sigmoid, l1, false, true, s128, warps);
            }
        // The ReLU flavour (kWarpRelu) forced (the ReLU / None cases above
        // run it too, picked automatically): odd batches, dL/dinput on and
        // off, the fused losses, accumulate, every weight-gradient mode, every
        // kt_in; then flavour 0 on a ReLU network (the runtime switch still
        // runs when asked), and kWarpRelu asked for on networks with other
        // activations, which must run flavour 0 (the reference catches a
        // ReLU compiled in where it does not belong).
        const int rl = kWarpRelu;
        for (uint32_t batch : {1u, 127u, 4099u, 200003u})
            add(w, 2, batch, 32, 16, relu, none, bwd, true, false, -1, 0, rl);
        add(w, 2, 127, 32, 16, relu, none, bwd, false, false, -1, 0, rl);
        add(w, 2, 300007, 32, 16, relu, none, bwd, false, true, -1, 0, rl);
        add(w, 2, 1000003, 32, 16, relu, none, l2, false, false, -1, 0, rl);  // the benchmark's step
        add(w, 2, 200003, 17, 3, relu, none, l2, true, true, -1, 0, rl);
        add(w, 3, 5001, 64, 70, relu, none, l1, true, false, -1, 0, rl);
        add(w, 1, 20001, 3, 1, relu, none, bwd, true, false, -1, 0, rl);
        add(w, w == 64 ? 1 : 2, 300007, 32, 16, relu, none, bwd, true, true, pw, 0, rl);
        add(w, 2, 300007, 32, 16, relu, none, bwd, true, false, sh, 8, rl);
        add(w, 2, 1001, 17, 70, relu, none, l2, false, true, sh, 12, rl);
        if (w == 64)
            for (int warps : {4, 8}) add(w, 2, 300007, 32, 16, relu, none, bwd, true, false, s128, warps, rl);
        add(w, 2, 200003, 32, 16, relu, none, bwd, true, false, -1, 0, 0);
        add(w, 2, 200003, 32, 16, relu, none, l2, false, false, -1, 0, 0);
        add(w, 2, 20001, 32, 16, Activation::Tanh, none, bwd, true, false, -1, 0, rl);
        add(w, 2, 20001, 32, 16, relu, Activation::Sigmoid, bwd, true, false, -1, 0, rl);
        add(w, 2, 20001, 32, 16, Activation::LeakyReLU, none, l2, true, false, -1, 0, rl);
        add(w, 2, 20001, 32, 16, Activation::Softplus, Activation::ReLU, bwd, false, false, sh, 8, rl);
    }
    // Deep networks (forced: the weight-gradient sums leave room for few
    // warps per SM). W = 64 fits up to D = 6 (two weight copies and the sum
    // are 8P bytes; P = 23552 at D = 6).
    add(16, 16, 1000, 32, 16, Activation::Tanh, none, bwd, true, false);
    add(16, 16, 20000, 3, 1, relu, none, l2, true, true);
    add(16, 16, 3000, 32, 16, Activation::SiLU, none, bwd, true, false, (int)WarpDwMode::PerWarp);
    add(32, 8, 1000, 32, 16, Activation::SiLU, none, l2, true, false);
    add(32, 16, 1000, 32, 16, Activation::Tanh, none, bwd, true, true);
    add(64, 5, 3000, 32, 16, Activation::SiLU, none, bwd, true, false);
    add(64, 6, 1000, 32, 16, Activation::Tanh, none, l2, true, true);
    return cases;
}

class FusedMlpWarpTrainVsTile : public ::testing::TestWithParam<TrainCase> {};

TEST_P(FusedMlpWarpTrainVsTile, SameGradients) {
    SKIP_WITHOUT_GPU();
    check_warp_train_against_tile(GetParam());
}

INSTANTIATE_TEST_SUITE_P(WarpTraining, FusedMlpWarpTrainVsTile, ::testing::ValuesIn(warp_train_cases()),
                         [](const ::testing::TestParamInfo<TrainCase>& param_info) {
                             return train_case_name(param_info.param);
                         });

// Which training kernel the planner plans, and which one a call runs: the
// warp and tile kernels, with the wgmma kernel off (tests/gpu/test_wgmma_train.cpp
// covers its choice; at W = 64 and 128 it is the default on a cc 9.0 device).
TEST(FusedMlp, TrainingKernelChoice) {
    SKIP_WITHOUT_GPU();
    test::ScopedEnv no_wgmma("FUSEDNGP_WGMMA_TRAIN", "0");
    auto make = [](uint32_t n_in, uint32_t w, uint32_t depth, FusedMlpTuning t = {}) {
        return FusedMlp(FusedMlpConfig{n_in, 16, w, depth, Activation::ReLU, Activation::None}, t);
    };
    auto warp_plan = [&](uint32_t n_in, uint32_t w, uint32_t depth, FusedMlpTuning t = {}) {
        return make(n_in, w, depth, t).training_plan().warp;
    };
    EXPECT_TRUE(warp_plan(32, 16, 2));
    EXPECT_TRUE(warp_plan(32, 32, 2));
    EXPECT_TRUE(warp_plan(64, 16, 4));
    EXPECT_TRUE(warp_plan(32, 64, 2));    // shared weight-gradient sums
    EXPECT_FALSE(warp_plan(32, 128, 2));  // only W = 16, 32, 64
    EXPECT_FALSE(warp_plan(65, 16, 2));   // input too wide for the register slab
    FusedMlpTuning force;
    force.force_warp_training = true;
    EXPECT_TRUE(warp_plan(32, 16, 16, force));
    EXPECT_TRUE(warp_plan(32, 32, 16, force));   // per-block sums (per-warp ones do not fit)
    EXPECT_TRUE(warp_plan(32, 64, 6, force));
    EXPECT_FALSE(warp_plan(32, 64, 7, force));   // 8P bytes > 227 KB
    EXPECT_FALSE(warp_plan(32, 32, 16));         // too few warps per SM for the default plan
    FusedMlpTuning tile;
    tile.tile_training = true;
    EXPECT_FALSE(warp_plan(32, 16, 2, tile));
    EXPECT_FALSE(warp_plan(32, 64, 2, tile));
    FusedMlpTuning per_warp;
    per_warp.warp_train_dw_mode = (int)WarpDwMode::PerWarp;
    EXPECT_FALSE(warp_plan(32, 64, 2, per_warp));  // one 164 KB block of 4 warps per SM

    // Per call: the tile kernel below the crossover, the warp kernel from it on.
    const FusedMlp m = make(32, 16, 2);
    const uint32_t min_batch = m.warp_training_min_batch();
    ASSERT_GT(min_batch, 1u);
    ASSERT_LT(min_batch, 1u << 22);
    EXPECT_FALSE(m.training_plan_for(1).warp);
    EXPECT_FALSE(m.training_plan_for(min_batch - 1).warp);
    EXPECT_TRUE(m.training_plan_for(min_batch).warp);
    EXPECT_TRUE(m.training_plan_for(1u << 22).warp);
    EXPECT_TRUE(make(32, 16, 2, force).training_plan_for(1).warp);
    EXPECT_FALSE(make(32, 16, 2, tile).training_plan_for(1u << 22).warp);
    FusedMlpTuning low;
    low.warp_training_min_batch = 1000;
    EXPECT_FALSE(make(32, 32, 2, low).training_plan_for(999).warp);
    EXPECT_TRUE(make(32, 32, 2, low).training_plan_for(1000).warp);
    // No warp plan: the tile kernel at every batch.
    EXPECT_FALSE(make(32, 128, 2).training_plan_for(1u << 22).warp);
}

// The per-call choice and the shared-memory sizes are host code: checked here
// without a device (this test runs on the CPU-only CI machine too).
TEST(FusedMlpHost, TrainingKernelChoiceByBatch) {
    FusedMlpTuning def;
    const uint32_t m = warp_training_min_batch_for(16, def);
    EXPECT_GT(m, 1u << 16);   // measured: the tile kernel wins at 2^16 rows ...
    EXPECT_LE(m, 1u << 17);   // ... the warp kernel from ~2^17 (W16/W32) ...
    EXPECT_GT(warp_training_min_batch_for(64, def), 1u << 17);  // ... and 1.5 x 2^17 (W64)
    EXPECT_LE(warp_training_min_batch_for(64, def), 1u << 18);
    EXPECT_FALSE(choose_warp_training(true, def, m, 1));
    EXPECT_FALSE(choose_warp_training(true, def, m, 1u << 16));
    EXPECT_FALSE(choose_warp_training(true, def, m, m - 1));
    EXPECT_TRUE(choose_warp_training(true, def, m, m));
    EXPECT_TRUE(choose_warp_training(true, def, m, 1u << 20));
    EXPECT_TRUE(choose_warp_training(true, def, m, 0xFFFFFFFFu));
    EXPECT_FALSE(choose_warp_training(false, def, m, 1u << 20));  // no warp plan
    for (uint32_t w : {16u, 32u, 64u}) {
        const uint32_t c = warp_training_min_batch_for(w, def);
        EXPECT_FALSE(choose_warp_training(true, def, c, 1u << 16)) << "W" << w;
        EXPECT_TRUE(choose_warp_training(true, def, c, 1u << 18)) << "W" << w;
    }

    FusedMlpTuning force;
    force.force_warp_training = true;
    EXPECT_EQ(warp_training_min_batch_for(64, force), 0u);
    EXPECT_TRUE(choose_warp_training(true, force, 0, 1));
    EXPECT_FALSE(choose_warp_training(false, force, 0, 1));

    FusedMlpTuning tile;
    tile.tile_training = true;
    EXPECT_FALSE(choose_warp_training(true, tile, m, 1u << 22));
    tile.force_warp_training = true;  // tile_training wins over force_warp_training
    EXPECT_FALSE(choose_warp_training(true, tile, 0, 1u << 22));

    FusedMlpTuning fixed;
    fixed.warp_training_min_batch = 5000;
    EXPECT_EQ(warp_training_min_batch_for(32, fixed), 5000u);
    EXPECT_FALSE(choose_warp_training(true, fixed, 5000, 4999));
    EXPECT_TRUE(choose_warp_training(true, fixed, 5000, 5000));
}

// The warp training variant the planner picks from the resident warps the
// occupancy API gives each candidate; the cases are the H200 occupancies of
// the A/B run (32 -> W x D -> 16), where the pick was the fastest variant.
TEST(FusedMlpHost, WarpTrainingVariantChoice) {
    const WarpDwMode pw = WarpDwMode::PerWarp, sh = WarpDwMode::Shared, s128 = WarpDwMode::Shared128;
    auto pick = [](std::vector<WarpTrainCandidate> c, int min_warps = 8) {
        const int i = choose_warp_train_variant(c, min_warps);
        return i < 0 ? std::string("none")
                     : std::string(c[(size_t)i].variant.dw_mode == WarpDwMode::PerWarp
                                       ? "pw"
                                       : (c[(size_t)i].variant.dw_mode == WarpDwMode::Shared ? "sh" : "s128x")) +
                           (c[(size_t)i].variant.dw_mode == WarpDwMode::PerWarp ? ""
                                                                               : std::to_string(c[(size_t)i].variant.warps));
    };
    // W16 D2: per-warp sums keep 20 warps (8.50 G/s), the shared ones 24 (7.87-8.52).
    EXPECT_EQ(pick({{{2, pw, 4}, 20}, {{2, sh, 12}, 24}, {{2, sh, 8}, 24}, {{2, sh, 6}, 24}, {{2, sh, 4}, 24}}), "pw");
    // W32 D1: 16 and 16 (7.64 vs 7.58).
    EXPECT_EQ(pick({{{2, pw, 4}, 16}, {{2, sh, 12}, 12}, {{2, sh, 8}, 16}, {{2, sh, 4}, 16}}), "pw");
    // W32 D2: per-warp 12 warps (5.06), 2 x 8 shared (5.63), 4 x 4 (5.41).
    EXPECT_EQ(pick({{{2, pw, 4}, 12}, {{2, sh, 12}, 12}, {{2, sh, 8}, 16}, {{2, sh, 6}, 12}, {{2, sh, 4}, 16}}), "sh8");
    // W32 D2, ReLU flavour (89 / 96 registers, 05fa695): 2 x 8 shared (6.24) over
    // 3 x 6 (6.10), 5 x 4 (5.99, the most warps), per-warp 12 (5.90) and 1 x 12 (5.74):
    // warps count up to 16, then larger blocks win.
    EXPECT_EQ(pick({{{2, pw, 4}, 12}, {{2, sh, 12}, 12}, {{2, sh, 8}, 16}, {{2, sh, 6}, 18}, {{2, sh, 4}, 20}}), "sh8");
    // W16 D2, ReLU flavour: per-warp sums keep 24 warps (9.76); 2 x 12 shared 9.89, 3 x 8 9.60.
    EXPECT_EQ(pick({{{2, pw, 4}, 24}, {{2, sh, 12}, 24}, {{2, sh, 8}, 24}, {{2, sh, 6}, 24}, {{2, sh, 4}, 24}}), "pw");
    // Deeper: no per-warp candidate, fewer than 16 warps: the most warps still win.
    EXPECT_EQ(pick({{{2, sh, 12}, 12}, {{2, sh, 8}, 8}, {{2, sh, 4}, 14}}), "sh4");
    // W64 D2: 2 x 8 warps at 128 registers (2.89) over 12 (2.72) and per-warp 4 (1.41).
    EXPECT_EQ(pick({{{2, pw, 4}, 4},
                    {{2, sh, 12}, 12},
                    {{2, sh, 8}, 8},
                    {{2, sh, 6}, 12},
                    {{2, sh, 4}, 8},
                    {{2, s128, 8}, 16},
                    {{2, s128, 4}, 8}}),
              "s128x8");
    // W64 D4: 8 and 8 (1.295 vs 1.301): the kernel without the register cap.
    EXPECT_EQ(pick({{{2, sh, 8}, 8}, {{2, sh, 6}, 6}, {{2, sh, 4}, 4}, {{2, s128, 8}, 8}, {{2, s128, 4}, 4}}), "sh8");
    // W64 D5: 4 warps at most: the tile kernel, unless forced.
    EXPECT_EQ(pick({{{2, sh, 4}, 4}, {{2, sh, 2}, 2}, {{2, s128, 4}, 4}}), "none");
    EXPECT_EQ(pick({{{2, sh, 4}, 4}, {{2, sh, 2}, 2}, {{2, s128, 4}, 4}}, 1), "sh4");
    // Only per-warp sums (forced): taken if they fit.
    EXPECT_EQ(pick({{{2, pw, 4}, 4}}, 1), "pw");
    EXPECT_EQ(pick({{{2, pw, 4}, 4}}), "none");
    EXPECT_EQ(pick({{{2, pw, 4}, 0}, {{2, sh, 4}, 0}}, 1), "none");  // nothing fits
    EXPECT_EQ(pick({}), "none");
}

// Shared-memory sizes behind the W = 64 design (docs/FUSED_MLP_DESIGN.md).
TEST(FusedMlpHost, WarpTrainingSharedMemory) {
    MlpShape s;
    s.n_in = 32;
    s.n_in_pad = 32;
    s.width = 64;
    s.n_hidden = 2;
    s.n_out = 16;
    s.n_out_pad = 16;
    ASSERT_EQ(n_params_padded(s), 7168u);
    const WarpTrainVariant per_warp{2, WarpDwMode::PerWarp, 4};
    // 2 x 2P fp16 weights + 4 x 4P fp32 sums + 4 warps x 10 activation slots x 512 B.
    EXPECT_EQ(warp_train_smem_bytes(s, per_warp), 7168u * 4 + 4 * 7168u * 4 + 4 * 10 * 512);
    const WarpTrainVariant shared{2, WarpDwMode::Shared, 6};
    EXPECT_EQ(warp_train_turns(s), 9u);
    // One sum per block, 9 stripes (8 hidden + 1 output chunk) x 6 warps turn
    // mbarriers of 8 B and per warp 2 KB of input staging.
    EXPECT_EQ(warp_train_smem_bytes(s, shared), 7168u * 4 + 7168u * 4 + 9 * 6 * 8 + 6 * (10 * 512 + 2048));
    // The planned W = 64 D2 variant, 2 blocks of 8 warps, still fits an SM.
    const WarpTrainVariant s128{2, WarpDwMode::Shared128, 8};
    EXPECT_LE(2 * (warp_train_smem_bytes(s, s128) + 1024), 228u * 1024);
    // An H200 SM has 228 KB of shared memory, 1 KB of it reserved per block:
    // two 6-warp blocks with shared sums fit, two 4-warp blocks with per-warp sums do not.
    EXPECT_LE(2 * (warp_train_smem_bytes(s, shared) + 1024), 228u * 1024);
    EXPECT_GT(2 * (warp_train_smem_bytes(s, per_warp) + 1024), 228u * 1024);
    EXPECT_TRUE(warp_train_variant_compiled(64, {2, WarpDwMode::Shared128, 8}));
    EXPECT_FALSE(warp_train_variant_compiled(32, {2, WarpDwMode::Shared128, 8}));
    EXPECT_FALSE(warp_train_variant_compiled(64, {2, WarpDwMode::Shared128, 12}));
    EXPECT_FALSE(warp_train_variant_compiled(64, {2, WarpDwMode::PerWarp, 8}));
    EXPECT_TRUE(warp_train_variant_compiled(16, {1, WarpDwMode::Shared, 12}));
    EXPECT_FALSE(warp_train_variant_compiled(128, {2, WarpDwMode::Shared, 4}));
    // Flavours: 0 and the ReLU one (kWarpRelu), for every mode and kt_in.
    for (int kt : {1, 2, 4}) {
        EXPECT_TRUE(warp_train_variant_compiled(16, {kt, WarpDwMode::PerWarp, 4, kWarpRelu}));
        EXPECT_TRUE(warp_train_variant_compiled(32, {kt, WarpDwMode::Shared, 8, kWarpRelu}));
        EXPECT_TRUE(warp_train_variant_compiled(64, {kt, WarpDwMode::Shared128, 8, kWarpRelu}));
    }
    EXPECT_FALSE(warp_train_variant_compiled(16, {2, WarpDwMode::PerWarp, 4, kWarpVec4}));
    EXPECT_FALSE(warp_train_variant_compiled(16, {2, WarpDwMode::PerWarp, 4, kWarpRelu | kWarpVec4}));
}

TEST(FusedMlp, RejectsUnsupportedConfigs) {
    FusedMlpConfig cfg{32, 16, 48, 2, Activation::ReLU, Activation::None};
    EXPECT_THROW(FusedMlp{cfg}, std::invalid_argument);
    cfg.width = 64;
    cfg.n_hidden_layers = 17;
    EXPECT_THROW(FusedMlp{cfg}, std::invalid_argument);
    cfg.n_hidden_layers = 0;
    EXPECT_THROW(FusedMlp{cfg}, std::invalid_argument);
}

} // namespace
} // namespace fusedngp::gpu
