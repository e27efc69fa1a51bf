// CublasMlp (the unfused cuBLASLt MLP) against the double-precision
// reference, and against FusedMlp on identical inputs and weights; the
// kernel choice helpers (gpu_mlp_factory.h). Every output buffer is
// poisoned with NaN before the GPU writes it.
#include "gpu/cublas_mlp.h"
#include "gpu/fused_mlp.h"
#include "gpu/gpu_mlp_factory.h"
#include "mlp_reference.h"
#include "mlp_test_util.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

namespace fusedngp::gpu {
namespace {

using namespace mlp_test;

struct Case {
    uint32_t width = 64, depth = 2, batch = 127, n_in = 32, n_out = 16;
    Activation hidden = Activation::ReLU, output = Activation::None;
    uint64_t seed = 1;
    double dout_scale = 1.0;
    std::string label;
};

std::string case_name(const Case& c) {
    return c.label + "W" + std::to_string(c.width) + "_D" + std::to_string(c.depth) + "_B" + std::to_string(c.batch) +
           "_in" + std::to_string(c.n_in) + "_out" + std::to_string(c.n_out) + "_act" + std::to_string((int)c.hidden) +
           "_" + std::to_string((int)c.output);
}

// gtest prints parameters through this (ctest lists them): the case name
// instead of the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

reference::MlpDims dims_of(const Case& c) { return {c.n_in, c.width, c.depth, c.n_out, c.hidden, c.output}; }
GpuMlpConfig config_of(const Case& c) { return {c.n_in, c.n_out, c.width, c.depth, c.hidden, c.output}; }

// Random fp16-grid weights, inputs away from ReLU kinks, random dL/dout
// (zero on rows that stay near a kink).
struct Problem {
    reference::MlpDims dims;
    std::vector<double> params, in, dout;
    size_t masked = 0;
};

Problem make_problem(const Case& c) {
    Problem p;
    std::mt19937_64 rng(c.seed * 7919 + c.width * 31 + c.depth);
    p.dims = dims_of(c);
    p.params = random_params(p.dims, rng);
    const Inputs inputs = random_inputs(p.dims, p.params, c.batch, c.seed);
    p.in = inputs.x;
    p.dout = random_values((size_t)c.batch * c.n_out, c.dout_scale, false, rng);
    for (uint32_t row = 0; row < c.batch; ++row) {
        if (!inputs.masked[row]) continue;
        ++p.masked;
        for (uint32_t o = 0; o < c.n_out; ++o) p.dout[(size_t)row * c.n_out + o] = 0.0;
    }
    return p;
}

struct GpuResult {
    std::vector<float> out, train_out, din, dw;
};

// inference, forward and backward of `mlp` on the problem, into poisoned buffers.
GpuResult run_gpu(GpuMlp& mlp, const Problem& p, uint32_t batch) {
    mlp.reserve(batch);
    const std::vector<float> params_f = to_float(p.params);
    mlp.set_params(params_f.data());
    DeviceFloats d_in(to_float(p.in)), d_dout(to_float(p.dout));
    DeviceFloats d_out((size_t)batch * p.dims.n_out), d_train_out((size_t)batch * p.dims.n_out);
    DeviceFloats d_din((size_t)batch * p.dims.n_in), d_dw(p.dims.n_params());
    mlp.forward(d_in.ptr(), d_train_out.ptr(), batch, nullptr);
    // inference between forward and backward must not disturb what forward stored
    mlp.inference(d_in.ptr(), d_out.ptr(), batch, nullptr);
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
    return {d_out.download(), d_train_out.download(), d_din.download(), d_dw.download()};
}

void check_against_reference(const Case& c) {
    const Problem p = make_problem(c);
    ASSERT_LT(p.masked, c.batch) << "every row is near a ReLU kink";
    CublasMlp mlp(config_of(c));
    ASSERT_EQ(mlp.n_params(), p.dims.n_params());
    const GpuResult g = run_gpu(mlp, p, c.batch);

    const ReferenceResult ref = reference_pass(p.dims, p.params, p.in, c.batch,
                                               [&](uint32_t row, const double*, double* dy) {
        for (uint32_t o = 0; o < c.n_out; ++o) dy[o] = p.dout[(size_t)row * c.n_out + o];
    });
    EXPECT_TRUE(all_finite(g.out)) << "unwritten or non-finite output";
    EXPECT_TRUE(all_finite(g.train_out)) << "unwritten or non-finite training output";
    EXPECT_TRUE(all_finite(g.din)) << "unwritten or non-finite dL/dinput";
    EXPECT_TRUE(all_finite(g.dw)) << "unwritten or non-finite dL/dW";
    EXPECT_EQ(0, std::memcmp(g.out.data(), g.train_out.data(), g.out.size() * sizeof(float)))
        << "inference and training forward differ";

    std::mt19937_64 rng(c.seed);
    const std::vector<uint32_t> rows = rows_to_check(c.batch, rng);
    const double e_out = relative_error(g.out, ref.out, c.n_out, rows);
    const double e_din = relative_error(g.din, ref.din, c.n_in, rows);
    const double e_dw = relative_error(g.dw, ref.dparams, 0, {});
    EXPECT_LE(e_out, 1e-3) << case_name(c) << " " << mlp.describe();
    EXPECT_LE(e_din, 1e-2) << case_name(c) << " " << mlp.describe();
    EXPECT_LE(e_dw, 1e-2) << case_name(c) << " " << mlp.describe();
    double dw_norm = 0;
    for (float v : g.dw) dw_norm += (double)v * v;
    EXPECT_GT(dw_norm, 0.0);
    std::printf("[ errors ] %-40s out %.2e  din %.2e  dW %.2e  (rows masked at kinks: %zu)\n", case_name(c).c_str(),
                e_out, e_din, e_dw, p.masked);
}

// ---- CublasMlp against the double reference -------------------------------------------

const Activation kHidden[] = {Activation::ReLU, Activation::Tanh,    Activation::SiLU,      Activation::LeakyReLU,
                              Activation::None, Activation::Sigmoid, Activation::Softplus,  Activation::Sine};
const Activation kOutput[] = {Activation::None, Activation::Sigmoid, Activation::Tanh, Activation::Softplus,
                              Activation::SiLU, Activation::Squareplus, Activation::LeakyReLU};

std::vector<Case> grid_cases() {
    std::vector<Case> cases;
    int i = 0;
    // The fused widths, and widths only CublasMlp runs (48; 512; 50, which
    // is not a multiple of 8 and exercises the hidden padding).
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u, 48u, 512u, 50u})
        for (uint32_t depth : {1u, 3u})
            for (uint32_t batch : {1u, 127u}) {
                Case c;
                c.width = w;
                c.depth = depth;
                c.batch = batch;
                c.hidden = kHidden[i % 8];
                c.output = kOutput[(i * 3 + 1) % 7];
                c.n_in = (i % 3 == 0) ? 3 : 32;
                c.n_out = (i % 4 == 1) ? 1 : 16;
                c.seed = 300 + i;
                cases.push_back(c);
                ++i;
            }
    return cases;
}

class CublasMlpGrid : public ::testing::TestWithParam<Case> {};

TEST_P(CublasMlpGrid, MatchesDoubleReference) {
    SKIP_WITHOUT_GPU();
    check_against_reference(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Widths, CublasMlpGrid, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return case_name(param_info.param); });

TEST(CublasMlp, EveryActivation) {
    SKIP_WITHOUT_GPU();
    for (Activation a : {Activation::ReLU, Activation::LeakyReLU, Activation::Sine, Activation::Sigmoid,
                         Activation::Softplus, Activation::Tanh, Activation::SiLU, Activation::None,
                         Activation::Squareplus, Activation::Exponential}) {
        Case hidden;
        hidden.width = 48;
        hidden.hidden = a;
        hidden.seed = 7 + (int)a;
        hidden.label = "hidden_";
        check_against_reference(hidden);
        Case output = hidden;
        output.hidden = Activation::ReLU;
        output.output = a;
        output.seed = 50 + (int)a;
        output.label = "output_";
        check_against_reference(output);
    }
}

TEST(CublasMlp, HugeOddBatch) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 48;
    c.depth = 2;
    c.batch = 1000003;
    check_against_reference(c);
}

// dL/dout ~ 1e-6 is below fp16's normal range: the loss scale keeps it.
TEST(CublasMlp, TinyLossGradients) {
    SKIP_WITHOUT_GPU();
    Case c;
    c.width = 64;
    c.batch = 500;
    c.dout_scale = 2e-6;
    check_against_reference(c);
}

TEST(CublasMlp, DeterministicGraphCapturableAndAccumulates) {
    SKIP_WITHOUT_GPU();
    const uint32_t batch = 100000, n_in = 32, n_out = 16;
    CublasMlp mlp({n_in, n_out, 96, 2, Activation::ReLU, Activation::None}, batch);
    std::mt19937_64 rng(5);
    const reference::MlpDims d{n_in, 96, 2, n_out, Activation::ReLU, Activation::None};
    const auto params = to_float(random_params(d, rng));
    mlp.set_params(params.data());
    DeviceFloats d_in(to_float(random_values((size_t)batch * n_in, 1.0, true, rng)));
    DeviceFloats d_dout(to_float(random_values((size_t)batch * n_out, 1.0, false, rng)));
    DeviceFloats d_out((size_t)batch * n_out), d_din((size_t)batch * n_in), d_dw(d.n_params());

    cudaStream_t stream;
    FUSEDNGP_CUDA_CHECK(cudaStreamCreate(&stream));
    mlp.forward(d_in.ptr(), d_out.ptr(), batch, stream);
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, stream);
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto dw1 = d_dw.download(), din1 = d_din.download(), out1 = d_out.download();

    d_dw.poison();
    d_din.poison();
    d_out.poison();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    FUSEDNGP_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    mlp.forward(d_in.ptr(), d_out.ptr(), batch, stream);
    mlp.backward(d_in.ptr(), d_dout.ptr(), d_din.ptr(), d_dw.ptr(), batch, stream);
    FUSEDNGP_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    FUSEDNGP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    FUSEDNGP_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(0, std::memcmp(dw1.data(), d_dw.download().data(), dw1.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(din1.data(), d_din.download().data(), din1.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(out1.data(), d_out.download().data(), out1.size() * sizeof(float)));

    mlp.backward(d_in.ptr(), d_dout.ptr(), nullptr, d_dw.ptr(), batch, stream, true);
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto dw3 = d_dw.download();
    for (size_t i = 0; i < dw3.size(); ++i) ASSERT_EQ(dw3[i], dw1[i] + dw1[i]) << i;

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

TEST(CublasMlp, BatchBeyondReserveIsAnErrorNotAnAllocation) {
    SKIP_WITHOUT_GPU();
    CublasMlp mlp({32, 16, 64, 2, Activation::ReLU, Activation::None}, 100);
    DeviceFloats in(101 * 32), out(101 * 16);
    EXPECT_THROW(mlp.forward(in.ptr(), out.ptr(), 101, nullptr), std::invalid_argument);
    EXPECT_THROW(mlp.inference(in.ptr(), out.ptr(), 101, nullptr), std::invalid_argument);
    mlp.reserve(101);
    EXPECT_EQ(mlp.max_batch(), 101u);
    mlp.forward(in.ptr(), out.ptr(), 101, nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(CublasMlp, OutOfMemoryNamesTheSize) {
    SKIP_WITHOUT_GPU();
    // 4e9 rows: far beyond any device.
    try {
        CublasMlp mlp({32, 16, 4096, 2, Activation::ReLU, Activation::None}, 4000000000u);
        FAIL() << "expected GpuOutOfMemory";
    } catch (const GpuOutOfMemory& e) {
        // The first buffer that fails is at least the smallest per-sample
        // one: 4e9 rows x 8 halves.
        EXPECT_GE(e.requested_bytes(), (size_t)4000000000u * 16);
        EXPECT_NE(std::string(e.what()).find(std::to_string(e.requested_bytes())), std::string::npos) << e.what();
    }
}

// ---- FusedMlp and CublasMlp agree -------------------------------------------------------

// Same weights and inputs: outputs and gradients agree to fp16 rounding at
// every fused width and odd batches.
void check_fused_matches_cublas(const Case& c) {
    const Problem p = make_problem(c);
    FusedMlp fused(config_of(c));
    CublasMlp cublas(config_of(c));
    ASSERT_EQ(fused.n_params(), cublas.n_params());
    const GpuResult f = run_gpu(fused, p, c.batch);
    const GpuResult b = run_gpu(cublas, p, c.batch);
    auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
    for (const auto* v : {&f.out, &f.din, &f.dw, &b.out, &b.din, &b.dw}) EXPECT_TRUE(all_finite(*v));
    const double e_out = relative_error(b.out, as_double(f.out), 0, {});
    const double e_din = relative_error(b.din, as_double(f.din), 0, {});
    const double e_dw = relative_error(b.dw, as_double(f.dw), 0, {});
    EXPECT_LE(e_out, 1e-3) << case_name(c);
    EXPECT_LE(e_din, 1e-2) << case_name(c);
    EXPECT_LE(e_dw, 1e-2) << case_name(c);
    std::printf("[ fused vs cublas ] %-40s out %.2e  din %.2e  dW %.2e\n", case_name(c).c_str(), e_out, e_din, e_dw);
}

std::vector<Case> agreement_cases() {
    std::vector<Case> cases;
    int i = 0;
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u})
        for (uint32_t batch : {1u, 127u, 1000003u}) {
            Case c;
            c.width = w;
            c.batch = batch;
            // The huge batch uses a smooth activation: no kink search over a
            // million rows (the small ones cover ReLU).
            c.hidden = batch > 1000 ? Activation::SiLU : Activation::ReLU;
            c.output = i % 2 ? Activation::Sigmoid : Activation::None;
            c.n_in = i % 3 == 0 ? 3 : 32;
            c.seed = 900 + i++;
            cases.push_back(c);
        }
    return cases;
}

class FusedVsCublas : public ::testing::TestWithParam<Case> {};

TEST_P(FusedVsCublas, OutputsAndGradientsMatch) {
    SKIP_WITHOUT_GPU();
    check_fused_matches_cublas(GetParam());
}

INSTANTIATE_TEST_SUITE_P(FusedWidths, FusedVsCublas, ::testing::ValuesIn(agreement_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return case_name(param_info.param); });

// ---- Kernel choice ------------------------------------------------------------------------

TEST(GpuMlpFactory, FusedSupportAndCreation) {
    SKIP_WITHOUT_GPU();
    EXPECT_EQ(fused_unsupported_reason({32, 16, 64, 2, Activation::ReLU, Activation::None}), "");
    EXPECT_NE(fused_unsupported_reason({32, 16, 48, 2, Activation::ReLU, Activation::None}).find("48"),
              std::string::npos);
    EXPECT_NE(fused_unsupported_reason({32, 16, 64, 17, Activation::ReLU, Activation::None}), "");
    EXPECT_STREQ(create_gpu_mlp({32, 16, 64, 2}, MlpKernel::FullyFused)->kernel_name(), "FullyFusedMLP");
    EXPECT_STREQ(create_gpu_mlp({32, 16, 48, 2}, MlpKernel::Cublas)->kernel_name(), "CublasMLP");
    EXPECT_THROW(create_gpu_mlp({32, 16, 48, 2}, MlpKernel::FullyFused), std::invalid_argument);
    EXPECT_THROW(create_gpu_mlp({32, 16, 64, 2}, MlpKernel::Auto), std::invalid_argument);
}

TEST(GpuMlpFactory, TimingMeasuresBoth) {
    SKIP_WITHOUT_GPU();
    const KernelTiming t = time_mlp_kernels({32, 16, 64, 2, Activation::ReLU, Activation::None}, 1u << 16, nullptr, 3);
    EXPECT_GT(t.fused_ms, 0.0);
    EXPECT_GT(t.cublas_ms, 0.0);
    EXPECT_EQ(t.faster, t.cublas_ms < t.fused_ms ? MlpKernel::Cublas : MlpKernel::FullyFused);
    std::printf("%s\n", t.summary().c_str());
}

} // namespace
} // namespace fusedngp::gpu
