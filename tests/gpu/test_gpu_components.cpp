// GPU components against the CPU reference engine (the ground truth):
// encodings, losses and optimizers built from the same JSON configs, run on
// the same random data, compared element by element or norm-wise.
//
// Every GPU output buffer is poisoned with NaN (all bytes 0xFF) before the
// launch, so an element a kernel forgot to write shows up as "NaN: not
// written". Tests that need a device skip themselves when cudaGetDeviceCount
// finds none; the config-error tests run everywhere.

#include "core/env.h"
#include "core/rng.h"
#include "encodings/encoding.h"
#include "encodings/grid.h"
#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_composite_encoding.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/components/gpu_grid_encoding.h"
#include "gpu/components/gpu_loss.h"
#include "gpu/components/gpu_optimizer.h"
#include "device_test_util.h"
#include "io/sample_positions.h"
#include "launch_grid.h"
#include "losses/factory.h"
#include "optimizers/factory.h"
#include "same_bits.h"
#include "scoped_env.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace fusedngp::gpu {
namespace {

// The tolerances (norm-wise relative error).
constexpr double kForwardTolerance = 1e-3;
constexpr double kGradientTolerance = 1e-2;
// Optimizers and loss gradients do the CPU's float arithmetic exactly
// (compiled without FMA contraction); 1e-5 leaves room for the double-precision
// pow() of the bias corrections differing by an ulp between libraries.
constexpr double kElementwiseTolerance = 1e-5;

// A large test batch, or 10007 rows under compute-sanitizer (scripts/gpu-check
// sets FUSEDNGP_TEST_UNDER_SANITIZER=1 for its sanitizer runs): the same
// kernels and paths, several blocks, partial warps and chunks, at a size
// racecheck gets through. At 10^5-10^6 rows the grid gradient's shared-memory
// atomics on a few dozen rows took minutes per case under it, and the whole
// component binary did not fit a 10-minute device call.
uint32_t large_batch(uint32_t rows) {
    static const bool under_sanitizer = env_flag_set("FUSEDNGP_TEST_UNDER_SANITIZER");
    return under_sanitizer ? std::min(rows, 10007u) : rows;
}

// Owns a stream; skips the test without a device; after the test, surfaces
// any asynchronous kernel fault.
using GpuTest = test::DeviceStreamTest;

// ---- host <-> device helpers -------------------------------------------------

std::vector<float> random_vector(size_t n, uint64_t seed, float lo, float hi) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = rng.uniform<float>(lo, hi);
    return v;
}

Matrix<float> random_matrix(int64_t rows, int64_t cols, uint64_t seed, float lo, float hi) {
    Rng rng(seed);
    Matrix<float> m(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = rng.uniform<float>(lo, hi);
    return m;
}

DeviceBuffer<float> upload(const float* data, size_t n) {
    DeviceBuffer<float> buffer(n);
    if (n) FUSEDNGP_GPU_CHECK(cudaMemcpy(buffer.data(), data, n * sizeof(float), cudaMemcpyHostToDevice));
    return buffer;
}
DeviceBuffer<float> upload(const std::vector<float>& v) { return upload(v.data(), v.size()); }
DeviceBuffer<float> upload(const Matrix<float>& m) { return upload(m.data(), (size_t)m.size()); }

std::vector<float> download(const float* d, size_t n) {
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    std::vector<float> host(n);
    if (n) FUSEDNGP_GPU_CHECK(cudaMemcpy(host.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
}

// n floats, every one NaN (0xFFFFFFFF), so unwritten outputs are detected.
DeviceBuffer<float> poisoned(size_t n, cudaStream_t stream) {
    DeviceBuffer<float> buffer(n);
    buffer.fill_bytes(0xFF, stream);
    return buffer;
}

// What the fp16 table copy holds: each value rounded to half and back.
std::vector<float> rounded_to_half(const std::vector<float>& v) {
    std::vector<float> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = __half2float(__float2half_rn(v[i]));
    return r;
}

// ---- comparisons ---------------------------------------------------------------

// ||gpu - ref|| / ||ref|| <= tol. A reference of all zeros requires an exact
// zero result. Explains NaNs (unwritten elements) and the worst element.
::testing::AssertionResult close_normwise(const std::vector<float>& gpu, const float* ref, size_t n, double tol) {
    if (gpu.size() != n) return ::testing::AssertionFailure() << "size " << gpu.size() << " != " << n;
    size_t non_finite = 0, first_non_finite = 0, worst = 0;
    double diff2 = 0, ref2 = 0, worst_diff = -1;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(gpu[i])) {
            if (non_finite++ == 0) first_non_finite = i;
            continue;
        }
        const double d = (double)gpu[i] - (double)ref[i];
        diff2 += d * d;
        ref2 += (double)ref[i] * ref[i];
        if (std::abs(d) > worst_diff) {
            worst_diff = std::abs(d);
            worst = i;
        }
    }
    if (non_finite) {
        return ::testing::AssertionFailure()
               << non_finite << " of " << n << " elements are NaN/inf, first at index " << first_non_finite
               << " (reference " << ref[first_non_finite]
               << "): the kernel did not write them (outputs are NaN-poisoned) or overflowed";
    }
    const double error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    if (!(error <= tol)) {
        return ::testing::AssertionFailure()
               << "norm-wise relative error " << error << " > " << tol << "; largest difference " << worst_diff
               << " at index " << worst << " (gpu " << gpu[worst] << ", cpu " << ref[worst] << ")";
    }
    return ::testing::AssertionSuccess() << "norm-wise relative error " << error;
}

// |gpu_i - ref_i| <= tol * |ref_i| for every i.
::testing::AssertionResult close_elementwise(const std::vector<float>& gpu, const float* ref, size_t n, double tol) {
    if (gpu.size() != n) return ::testing::AssertionFailure() << "size " << gpu.size() << " != " << n;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = std::abs((double)gpu[i] - (double)ref[i]);
        if (!(d <= tol * std::abs((double)ref[i]))) {
            if (bad++ == 0) first = i;
        }
    }
    if (bad) {
        return ::testing::AssertionFailure() << bad << " of " << n << " elements differ by more than " << tol
                                             << " relative; first at index " << first << ": gpu " << gpu[first]
                                             << ", cpu " << ref[first];
    }
    return ::testing::AssertionSuccess();
}

bool all_zero(const float* v, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (v[i] != 0.f) return false;
    }
    return true;
}

// ---- encodings -------------------------------------------------------------------

// Runs forward and backward of the GPU encoding (its params already bound)
// and of the CPU encoding with `cpu_params`, on the inputs `in` (batch rows)
// and random dL/dy, and compares outputs, dL/dparams and dL/din.
void expect_encoding_matches_cpu_on(const Encoding<float>& cpu, const GpuEncoding& gpu,
                                    const std::vector<float>& cpu_params, const Matrix<float>& in, uint64_t seed,
                                    cudaStream_t stream) {
    const uint32_t batch = (uint32_t)in.rows();
    SCOPED_TRACE(cpu.describe() + ", batch " + std::to_string(batch));
    const uint32_t n_in = cpu.n_input_dims(), n_out = cpu.n_output_dims();
    const size_t n_params = cpu.n_params();
    ASSERT_EQ(gpu.n_input_dims(), n_in);
    ASSERT_EQ(gpu.n_output_dims(), n_out);
    ASSERT_EQ(gpu.n_params(), n_params);
    ASSERT_EQ((uint32_t)in.cols(), n_in);
    const float* params = n_params ? cpu_params.data() : nullptr;

    const DeviceBuffer<float> d_in = upload(in);
    DeviceBuffer<float> d_out = poisoned((size_t)batch * n_out, stream);
    gpu.forward(const_rows(d_in.data(), n_in), rows(d_out.data(), n_out), batch, stream);
    Matrix<float> out;
    cpu.forward(params, in, out);
    ASSERT_FALSE(all_zero(out.data(), out.size())) << "degenerate test: the CPU output is all zero";
    EXPECT_TRUE(close_normwise(download(d_out.data(), d_out.size()), out.data(), out.size(), kForwardTolerance))
        << "forward";

    const Matrix<float> dout = random_matrix(batch, n_out, seed + 1, -1.f, 1.f);
    const DeviceBuffer<float> d_dout = upload(dout);
    DeviceBuffer<float> d_dparams = poisoned(n_params, stream);
    DeviceBuffer<float> d_din = poisoned((size_t)batch * n_in, stream);
    gpu.backward(const_rows(d_in.data(), n_in), const_rows(d_dout.data(), n_out), n_params ? d_dparams.data() : nullptr,
                 rows(d_din.data(), n_in), batch, stream);
    std::vector<float> dparams(n_params, 0.f);
    Matrix<float> din;
    cpu.backward(params, in, dout, n_params ? dparams.data() : nullptr, &din);
    if (n_params) {
        ASSERT_FALSE(all_zero(dparams.data(), n_params)) << "degenerate test: the CPU param gradient is all zero";
        EXPECT_TRUE(close_normwise(download(d_dparams.data(), n_params), dparams.data(), n_params, kGradientTolerance))
            << "dL/dparams (the NaN-poisoned buffer must be overwritten: accumulate = false)";
    }
    EXPECT_TRUE(close_normwise(download(d_din.data(), d_din.size()), din.data(), din.size(), kGradientTolerance))
        << "dL/dinput";
}

// The same on fresh random inputs in [lo, hi).
void expect_encoding_matches_cpu(const Encoding<float>& cpu, const GpuEncoding& gpu, const std::vector<float>& cpu_params,
                                 uint32_t batch, uint64_t seed, float lo, float hi, cudaStream_t stream) {
    expect_encoding_matches_cpu_on(cpu, gpu, cpu_params, random_matrix(batch, cpu.n_input_dims(), seed, lo, hi), seed,
                                   stream);
}

json small_grid_config(const std::string& type, const std::string& interpolation, uint32_t features) {
    // 6 levels, resolutions 5..77: coarse levels dense, the finest hashed into
    // 2^12 rows (2D: the last one; 3D: from level 3 on).
    return {{"otype", "Grid"},
            {"type", type},
            {"n_levels", 6},
            {"n_features_per_level", features},
            {"log2_hashmap_size", 12},
            {"base_resolution", 4},
            {"per_level_scale", 1.8},
            {"interpolation", interpolation}};
}

using GridParam = std::tuple<const char*, const char*, int, int>;  // type, interpolation, dims, features

class GpuGridEncodingTest : public GpuTest, public ::testing::WithParamInterface<GridParam> {};

// fp16 tables (the default): the CPU reads the same fp16-rounded parameters,
// so any difference is the kernels' own. Inputs include values outside
// [0, 1] (clamped). Batch 100003 for the Linear cases keeps the run short.
TEST_P(GpuGridEncodingTest, MatchesCpuWithHalfTables) {
    const auto [type, interpolation, dims, features] = GetParam();
    GpuEncodingPair enc = create_gpu_encoding(dims, small_grid_config(type, interpolation, features));
    // Order-1 parameters (not the 1e-4 init) make every error visible.
    const std::vector<float> params = random_vector(enc.cpu->n_params(), 11, -1.f, 1.f);
    const DeviceBuffer<float> d_params = upload(params);
    enc.gpu->set_params(d_params.data(), stream_);
    std::vector<uint32_t> batches = {1, 127};
    if (std::string(interpolation) == "Linear") batches.push_back(large_batch(100003));
    for (uint32_t batch : batches) {
        expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), batch, 100 + batch, -0.05f, 1.05f,
                                    stream_);
    }
}

INSTANTIATE_TEST_SUITE_P(AllShapes, GpuGridEncodingTest,
                         ::testing::Combine(::testing::Values("Hash", "Dense", "Tiled"),
                                            ::testing::Values("Linear", "Nearest", "Smoothstep"),
                                            ::testing::Values(2, 3), ::testing::Values(1, 2, 4, 8)),
                         [](const ::testing::TestParamInfo<GridParam>& p) {
                             return std::string(std::get<0>(p.param)) + std::get<1>(p.param) +
                                    std::to_string(std::get<2>(p.param)) + "DF" +
                                    std::to_string(std::get<3>(p.param));
                         });

// The check of the precision choice: fp16 tables against the CPU on
// the unrounded fp32 parameters, within the forward tolerance.
TEST_F(GpuTest, GridHalfTablesMatchFullPrecisionCpu) {
    for (const auto& [type, interpolation, dims, features] :
         std::vector<GridParam>{{"Hash", "Linear", 3, 2}, {"Dense", "Smoothstep", 2, 4}, {"Tiled", "Linear", 3, 8}}) {
        GpuEncodingPair enc = create_gpu_encoding(dims, small_grid_config(type, interpolation, features));
        const std::vector<float> params = random_vector(enc.cpu->n_params(), 12, -1.f, 1.f);
        const DeviceBuffer<float> d_params = upload(params);
        enc.gpu->set_params(d_params.data(), stream_);
        expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, params, 4099, 5, 0.f, 1.f, stream_);
    }
}

// fp32 tables read straight from the master, including the real init (1e-4).
TEST_F(GpuTest, GridFloatTablesMatchCpu) {
    const GpuEncodingOptions fp32{GridParamPrecision::Float, {}};
    for (const auto& [type, interpolation, dims, features] :
         std::vector<GridParam>{{"Hash", "Linear", 3, 2}, {"Dense", "Nearest", 2, 1}, {"Tiled", "Smoothstep", 3, 4}}) {
        GpuEncodingPair enc = create_gpu_encoding(dims, small_grid_config(type, interpolation, features), "encoding", fp32);
        std::vector<float> params(enc.cpu->n_params());
        enc.cpu->init_params(params.data(), 7);
        const DeviceBuffer<float> d_params = upload(params);
        enc.gpu->set_params(d_params.data(), stream_);
        expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, params, 1000, 6, -0.05f, 1.05f, stream_);
    }
}

// The default instant-ngp-size grid (16 levels, 2^19 rows, dense + hashed
// levels) at a training-size batch.
TEST_F(GpuTest, DefaultHashGridMatchesCpu) {
    GpuEncodingPair enc = create_gpu_encoding(3, {{"otype", "HashGrid"}});
    const std::vector<float> params = random_vector(enc.cpu->n_params(), 13, -1.f, 1.f);
    const DeviceBuffer<float> d_params = upload(params);
    enc.gpu->set_params(d_params.data(), stream_);
    expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), large_batch(100003), 8, 0.f, 1.f, stream_);
}

// set_params refreshes the fp16 copy (as after an optimizer step), and
// accumulate = true adds to the gradient instead of overwriting it.
TEST_F(GpuTest, GridRefreshesHalfCopyAndAccumulatesGradients) {
    GpuEncodingPair enc = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    const size_t n_params = enc.cpu->n_params();
    const uint32_t batch = 333, n_out = enc.cpu->n_output_dims();
    DeviceBuffer<float> d_params = upload(random_vector(n_params, 1, -1.f, 1.f));
    enc.gpu->set_params(d_params.data(), stream_);
    const std::vector<float> updated = random_vector(n_params, 2, -1.f, 1.f);
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(d_params.data(), updated.data(), n_params * sizeof(float),
                                       cudaMemcpyHostToDevice, stream_));
    sync();
    enc.gpu->set_params(d_params.data(), stream_);
    expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(updated), batch, 3, 0.f, 1.f, stream_);

    const Matrix<float> in = random_matrix(batch, 2, 4, 0.f, 1.f);
    const Matrix<float> dout = random_matrix(batch, n_out, 5, -1.f, 1.f);
    const DeviceBuffer<float> d_in = upload(in), d_dout = upload(dout);
    DeviceBuffer<float> d_dparams = upload(std::vector<float>(n_params, 1.f));
    enc.gpu->backward(const_rows(d_in.data(), 2), const_rows(d_dout.data(), n_out), d_dparams.data(), DeviceRows{},
                      batch, stream_, /*accumulate=*/true);
    std::vector<float> expected(n_params, 1.f);
    enc.cpu->backward(updated.data(), in, dout, expected.data(), nullptr);
    EXPECT_TRUE(close_normwise(download(d_dparams.data(), n_params), expected.data(), n_params, kGradientTolerance))
        << "accumulate = true must add to the existing gradient (1 + dL/dparams)";
}

TEST_F(GpuTest, GridForwardWithoutParamsThrows) {
    GpuEncodingPair enc = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    DeviceBuffer<float> d_in(2), d_out(enc.cpu->n_output_dims());
    EXPECT_THROW(enc.gpu->forward(const_rows(d_in.data(), 2), rows(d_out.data(), enc.cpu->n_output_dims()), 1, stream_),
                 std::logic_error);
}

// ---- grid kernel paths ------------------------------------------------------------
// GridKernelOptions choose how the kernels split the work; every choice must
// compute the same function (forward bit for bit, gradients within fp32
// summation order). These run each path against the CPU.

struct GridKernelCase {
    const char* name;
    GridKernelOptions options;
};

// The warp-aggregated gradient path (gradient_warp_aggregate_shared: the
// shared-memory levels), with the kernel layouts around it. (There is no
// global-level aggregation: the key gradient_warp_aggregate is rejected.)
std::vector<GridKernelCase> warp_aggregate_cases() {
    // The shared levels aggregated, the rest as by default.
    GridKernelOptions shared;
    shared.gradient_warp_aggregate_shared = true;
    // The same with the global levels level-major (one level per block
    // range) and no corner pairs (the plain shared flush, row by row).
    GridKernelOptions level_major;
    level_major.gradient_warp_aggregate_shared = true;
    level_major.gradient_interleave_levels = false;
    level_major.gradient_pair_corners = false;
    // Every level in shared memory, aggregated, 512-sample chunks.
    GridKernelOptions all_shared;
    all_shared.gradient_warp_aggregate_shared = true;
    all_shared.gradient_smem_bytes = 1u << 30;
    all_shared.gradient_flush_ratio = 1;
    all_shared.gradient_max_samples_per_thread = 1;
    return {{"WarpAggregateShared", shared},
            {"WarpAggregateSharedLevelMajorNoPairs", level_major},
            {"WarpAggregateAllShared", all_shared}};
}

// Sample runs of the global levels (gradient_sample_run): runs that end
// inside a block and at the batch's end, with and without the shared levels.
std::vector<GridKernelCase> sample_run_cases() {
    // The default shared levels; the global ones in runs of 8.
    GridKernelOptions runs;
    runs.gradient_sample_run = 8;
    // Every level global, runs of 3 (blocks of 1536 samples), no corner pairs.
    GridKernelOptions odd_runs;
    odd_runs.gradient_sample_run = 3;
    odd_runs.gradient_smem_bytes = 0;
    odd_runs.gradient_pair_corners = false;
    // The NeRF density grid's choices with the longest runs.
    GridKernelOptions long_runs;
    long_runs.gradient_sample_run = 64;
    long_runs.gradient_warp_aggregate_shared = true;
    long_runs.forward_chunk_loads = false;
    return {{"SampleRuns", runs}, {"OddSampleRunsAllGlobalNoPairs", odd_runs}, {"LongSampleRunsAggregated", long_runs}};
}

std::vector<GridKernelCase> grid_kernel_cases() {
    // The kernels before shared-memory aggregation: one level per block,
    // global atomics for every level.
    GridKernelOptions level_major;
    level_major.forward_level_group = 1;
    level_major.gradient_smem_bytes = 0;
    level_major.gradient_interleave_levels = false;
    level_major.gradient_pair_corners = false;
    level_major.forward_chunk_loads = false;
    // The default without row-pair atomics.
    GridKernelOptions no_pairs;
    no_pairs.gradient_pair_corners = false;
    // Global atomics for every level, levels interleaved; whole-row forward.
    GridKernelOptions interleaved;
    interleaved.forward_level_group = 64;
    interleaved.gradient_smem_bytes = 0;
    // Every level (hashed ones too) in shared memory, one 512-sample chunk per
    // block: many blocks flush into the same rows.
    GridKernelOptions all_shared;
    all_shared.forward_level_group = 2;
    all_shared.gradient_smem_bytes = 1u << 30;  // clamped to the device's per-block maximum
    all_shared.gradient_flush_ratio = 1;
    all_shared.gradient_max_samples_per_thread = 1;
    // Shared levels with long chunks (up to 64 samples per thread).
    GridKernelOptions long_chunks;
    long_chunks.gradient_flush_ratio = 4096;
    long_chunks.gradient_max_samples_per_thread = 64;
    // Shared levels, then one level-major block range per global level.
    GridKernelOptions level_major_shared;
    level_major_shared.forward_level_group = 8;
    level_major_shared.gradient_interleave_levels = false;
    std::vector<GridKernelCase> cases = {{"Default", {}},
                                         {"LevelMajorGlobal", level_major},
                                         {"NoCornerPairs", no_pairs},
                                         {"InterleavedGlobal", interleaved},
                                         {"AllShared", all_shared},
                                         {"LongSharedChunks", long_chunks},
                                         {"LevelMajorWithShared", level_major_shared}};
    for (const GridKernelCase& c : warp_aggregate_cases()) cases.push_back(c);
    for (const GridKernelCase& c : sample_run_cases()) cases.push_back(c);
    return cases;
}

GpuEncodingOptions with_grid_kernels(const GridKernelOptions& kernels,
                                     GridParamPrecision precision = GridParamPrecision::Half) {
    GpuEncodingOptions options;
    options.grid_precision = precision;
    options.grid_kernels = kernels;
    return options;
}

const GpuGridEncoding& as_grid(const GpuEncoding& gpu) { return dynamic_cast<const GpuGridEncoding&>(gpu); }

// Bytes of level l's fp32 gradient table.
size_t level_table_bytes(const Encoding<float>& cpu, size_t l) {
    const auto& grid = dynamic_cast<const GridEncoding<float>&>(cpu);
    return (size_t)grid.levels()[l].rows * grid.options().n_features_per_level * sizeof(float);
}

using GridKernelParam = std::tuple<GridKernelCase, const char*, const char*, int, int>;  // case, type, interpolation, dims, F

class GpuGridKernelPathTest : public GpuTest, public ::testing::WithParamInterface<GridKernelParam> {
protected:
    // The small grid of the test's parameters on its kernel path, with random
    // parameters bound.
    void bind_grid(uint64_t seed) {
        const auto& [kernel_case, type, interpolation, dims, features] = GetParam();
        enc_ = create_gpu_encoding(dims, small_grid_config(type, interpolation, features), "encoding",
                                   with_grid_kernels(kernel_case.options));
        params_ = random_vector(enc_.cpu->n_params(), seed, -1.f, 1.f);
        d_params_ = upload(params_);
        enc_.gpu->set_params(d_params_.data(), stream_);
        params_ = rounded_to_half(params_);  // what the GPU reads, for the CPU
    }

    GpuEncodingPair enc_;
    DeviceBuffer<float> d_params_;
    std::vector<float> params_;
};

std::string grid_path_test_name(const ::testing::TestParamInfo<GridKernelParam>& p) {
    return std::string(std::get<0>(p.param).name) + "_" + std::get<1>(p.param) + std::get<2>(p.param) +
           std::to_string(std::get<3>(p.param)) + "DF" + std::to_string(std::get<4>(p.param));
}

TEST_P(GpuGridKernelPathTest, MatchesCpu) {
    bind_grid(31);
    for (uint32_t batch : {1u, 127u, 4099u}) {
        expect_encoding_matches_cpu(*enc_.cpu, *enc_.gpu, params_, batch, 400 + batch, -0.05f, 1.05f, stream_);
    }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, GpuGridKernelPathTest,
                         ::testing::Combine(::testing::ValuesIn(grid_kernel_cases()), ::testing::Values("Hash", "Tiled"),
                                            ::testing::Values("Linear", "Nearest", "Smoothstep"),
                                            ::testing::Values(2, 3), ::testing::Values(1, 2, 4, 8)),
                         grid_path_test_name);

// The image-fit grid of issue #4 (configs/examples/image_fit_tcnn.json: 2D,
// 16 levels x 2, 2^15 rows, levels 0-5 dense): by default its coarse dense
// levels take the shared-memory gradient path and the hashed ones do not.
// Batches 1, 127 and 1000003 (several chunks per shared level, a partial
// last chunk), each kernel path.
TEST_F(GpuTest, GridImageFitShapeMatchesCpuOnEveryPath) {
    const json config = {{"otype", "HashGrid"},         {"n_levels", 16},          {"n_features_per_level", 2},
                         {"log2_hashmap_size", 15},     {"base_resolution", 16},   {"per_level_scale", 1.5}};
    for (const GridKernelCase& kernel_case : grid_kernel_cases()) {
        SCOPED_TRACE(kernel_case.name);
        GpuEncodingPair enc = create_gpu_encoding(2, config, "encoding", with_grid_kernels(kernel_case.options));
        if (std::string(kernel_case.name) == "Default") {
            const auto& grid = dynamic_cast<const GridEncoding<float>&>(*enc.cpu);
            const uint32_t smem = as_grid(*enc.gpu).gradient_smem_bytes();
            EXPECT_LE(level_table_bytes(*enc.cpu, 0), smem) << "level 0 must take the shared-memory path";
            EXPECT_LE(level_table_bytes(*enc.cpu, 3), smem) << "level 3 (3136 rows) must take the shared-memory path";
            for (size_t l = 0; l < grid.levels().size(); ++l) {
                if (grid.levels()[l].hashed()) {
                    EXPECT_GT(level_table_bytes(*enc.cpu, l), smem) << "hashed level " << l;
                }
            }
        }
        const std::vector<float> params = random_vector(enc.cpu->n_params(), 41, -1.f, 1.f);
        const DeviceBuffer<float> d_params = upload(params);
        enc.gpu->set_params(d_params.data(), stream_);
        const std::vector<uint32_t> batches =
            std::string(kernel_case.name) == "Default" || std::string(kernel_case.name) == "LevelMajorGlobal"
                ? std::vector<uint32_t>{1, 127, large_batch(1000003)}
                : std::vector<uint32_t>{1, 127, large_batch(100003)};
        for (uint32_t batch : batches) {
            expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), batch, 500 + batch, 0.f, 1.f,
                                        stream_);
        }
    }
}

// Inputs where a warp's lanes share rows, for the warp-aggregated paths.
enum class Coherence { OnePoint, TiledStrata, Clusters, Rays };

// OnePoint: every sample at one point (all lanes add to the same rows: the
// worst case for the reduction). TiledStrata: the image sampler's tiled order
// (stratum_at, side = strata_side(batch), jittered, snapped to the pixel
// centres of a 1024 x 1024 image; 3D: z constant per warp). Clusters: each
// warp's 32 samples in a box of side 1e-3..1e-1 around a random centre (the
// last warp partial), some outside [0, 1] (clamped). Rays: NeRF's order, rays
// of 1..96 samples 1/512 apart in a random direction from a random start.
Matrix<float> coherent_inputs(uint32_t batch, uint32_t dims, Coherence kind, uint64_t seed) {
    Rng rng(seed);
    Matrix<float> in(batch, dims);
    const StrataOrder order = make_strata_order(strata_side(batch), SampleOrder::Tiled);
    float centre[3] = {}, size = 0;
    float ray_point[3] = {}, ray_step[3] = {};
    uint32_t ray_left = 0;
    for (uint32_t i = 0; i < batch; ++i) {
        if (kind == Coherence::Rays && ray_left == 0) {
            ray_left = 1 + (uint32_t)rng.uniform<float>(0.f, 95.99f);
            float norm = 0;
            for (uint32_t d = 0; d < 3; ++d) {
                ray_point[d] = rng.uniform<float>(0.f, 1.f);
                ray_step[d] = rng.uniform<float>(-1.f, 1.f);
                norm += ray_step[d] * ray_step[d];
            }
            for (float& v : ray_step) v /= std::sqrt(std::max(norm, 1e-12f)) * 512.f;
        }
        if (i % 32 == 0) {
            for (float& c : centre) c = rng.uniform<float>(-0.02f, 1.02f);
            size = std::pow(10.f, rng.uniform<float>(-3.f, -1.f));
        }
        for (uint32_t d = 0; d < dims; ++d) {
            switch (kind) {
                case Coherence::OnePoint: in(i, d) = 0.3712f + 0.1f * (float)d; break;
                case Coherence::Rays: in(i, d) = ray_point[d]; break;
                case Coherence::Clusters: in(i, d) = centre[d] + size * rng.uniform<float>(0.f, 1.f); break;
                case Coherence::TiledStrata: {
                    const uint32_t side = order.side;
                    if (d == 2 || i >= side * side) {
                        in(i, d) = d == 2 ? centre[2] : rng.uniform<float>(0.f, 1.f);
                        break;
                    }
                    const uint32_t cell = stratum_at(order, i);
                    const float u = jitter_in_cell<float>(rng.uniform<float>(0.f, 1.f), d == 0 ? cell % side : cell / side,
                                                          side);
                    in(i, d) = pixel_centre<float>(pixel_of<float>(u, 1024), 1024);
                    break;
                }
            }
        }
        if (kind == Coherence::Rays) {
            for (uint32_t d = 0; d < 3; ++d) ray_point[d] += ray_step[d];
            --ray_left;
        }
    }
    return in;
}

// The same grids and paths on coherent inputs (its own fixture: not part of AllPaths).
class GpuGridCoherentInputTest : public GpuGridKernelPathTest {};

// Every warp-aggregated and sample-run path against the CPU on coherent inputs, batches 1,
// 127 and 100003 (partial warps, many groups), within the usual tolerance.
TEST_P(GpuGridCoherentInputTest, MatchesCpu) {
    bind_grid(33);
    const uint32_t dims = (uint32_t)std::get<3>(GetParam());
    for (Coherence kind : {Coherence::OnePoint, Coherence::TiledStrata, Coherence::Clusters, Coherence::Rays}) {
        SCOPED_TRACE("coherence " + std::to_string((int)kind));
        for (uint32_t batch : {1u, 127u, large_batch(100003u)}) {
            expect_encoding_matches_cpu_on(*enc_.cpu, *enc_.gpu, params_, coherent_inputs(batch, dims, kind, 700 + batch),
                                           800 + batch, stream_);
        }
    }
}

std::vector<GridKernelCase> coherent_cases() {
    std::vector<GridKernelCase> cases = {{"Default", {}}};
    for (const GridKernelCase& c : warp_aggregate_cases()) cases.push_back(c);
    for (const GridKernelCase& c : sample_run_cases()) cases.push_back(c);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(CoherentPaths, GpuGridCoherentInputTest,
                         ::testing::Combine(::testing::ValuesIn(coherent_cases()),
                                            ::testing::Values("Hash", "Tiled"),
                                            ::testing::Values("Linear", "Nearest"), ::testing::Values(2, 3),
                                            ::testing::Values(1, 2, 4, 8)),
                         grid_path_test_name);

// A dense level with an odd row count (5^2, 5^3) whose last row is the last
// float pair of the gradient buffer: the shared level's row-pair flush has no
// upper row there and must add that row alone, as writing a pair would land
// past the end (memcheck runs this one). Samples near the far corner, where
// that row is hit.
TEST_F(GpuTest, GridWarpAggregationAtTheEndOfAnOddDenseTable) {
    for (uint32_t dims : {2u, 3u}) {
        for (uint32_t features : {1u, 2u}) {
            const json config = {{"otype", "DenseGrid"}, {"n_levels", 1}, {"n_features_per_level", features},
                                 {"base_resolution", 4}};
            for (const GridKernelCase& kernel_case : warp_aggregate_cases()) {
                SCOPED_TRACE(std::string(kernel_case.name) + " " + std::to_string(dims) + "D F=" +
                             std::to_string(features));
                GpuEncodingPair enc = create_gpu_encoding(dims, config, "encoding", with_grid_kernels(kernel_case.options));
                ASSERT_EQ(enc.cpu->n_params() / features % 2, 1u) << "the test needs an odd row count";
                const std::vector<float> params = random_vector(enc.cpu->n_params(), 54, -1.f, 1.f);
                const DeviceBuffer<float> d_params = upload(params);
                enc.gpu->set_params(d_params.data(), stream_);
                for (uint32_t batch : {1u, 127u, 4099u}) {
                    expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), batch, 900 + batch, 0.8f,
                                                1.02f, stream_);
                }
            }
        }
    }
}

// The image-fit grid on the image sampler's tiled order at batch 2^18 (side
// 512: every warp one 8 x 4 tile of 2 x 2-pixel strata), the shape the
// aggregation is for, every warp-aggregated path and the default.
TEST_F(GpuTest, GridImageFitTiledSamplesMatchCpuWithWarpAggregation) {
    const json config = {{"otype", "HashGrid"},         {"n_levels", 16},          {"n_features_per_level", 2},
                         {"log2_hashmap_size", 15},     {"base_resolution", 16},   {"per_level_scale", 1.5}};
    const Matrix<float> in = coherent_inputs(large_batch(1u << 18), 2, Coherence::TiledStrata, 51);
    for (const GridKernelCase& kernel_case : coherent_cases()) {
        SCOPED_TRACE(kernel_case.name);
        GpuEncodingPair enc = create_gpu_encoding(2, config, "encoding", with_grid_kernels(kernel_case.options));
        const std::vector<float> params = random_vector(enc.cpu->n_params(), 52, -1.f, 1.f);
        const DeviceBuffer<float> d_params = upload(params);
        enc.gpu->set_params(d_params.data(), stream_);
        expect_encoding_matches_cpu_on(*enc.cpu, *enc.gpu, rounded_to_half(params), in, 53, stream_);
    }
}

// A 3D grid with dense (shared) and hashed levels at a large batch.
TEST_F(GpuTest, Grid3DLargeBatchMatchesCpu) {
    const json config = {{"otype", "HashGrid"},       {"n_levels", 8},         {"n_features_per_level", 4},
                         {"log2_hashmap_size", 14},   {"base_resolution", 8},  {"per_level_scale", 1.6}};
    GpuEncodingPair enc = create_gpu_encoding(3, config);
    const std::vector<float> params = random_vector(enc.cpu->n_params(), 42, -1.f, 1.f);
    const DeviceBuffer<float> d_params = upload(params);
    enc.gpu->set_params(d_params.data(), stream_);
    EXPECT_LE(level_table_bytes(*enc.cpu, 0), as_grid(*enc.gpu).gradient_smem_bytes());
    expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), large_batch(1000003), 9, -0.05f, 1.05f,
                                stream_);
}

// Every forward thread mapping writes the same bits, with and without the
// 16-byte chunk loads of corner pairs: dense, tiled and hashed levels, 2D and
// 3D, F = 1, 2, 4 (the chunk path's three row widths) and 8 (no chunk path),
// against the plainest mapping (one level per block, one load per corner).
TEST_F(GpuTest, GridForwardIsBitIdenticalForEveryMapping) {
    struct Mapping {
        uint32_t group;
        bool chunks;
    };
    const Mapping mappings[] = {{1, false}, {1, true}, {2, true}, {4, true}, {4, false}, {8, true}, {64, true}};
    for (const char* type : {"Hash", "Dense", "Tiled"}) {
        for (uint32_t dims : {2u, 3u}) {
            for (uint32_t features : {1u, 2u, 4u, 8u}) {
                SCOPED_TRACE(std::string(type) + " " + std::to_string(dims) + "D F=" + std::to_string(features));
                const json config = small_grid_config(type, "Smoothstep", features);
                GpuEncodingPair enc = create_gpu_encoding(dims, config);
                const std::vector<float> params = random_vector(enc.cpu->n_params(), 43, -1.f, 1.f);
                const DeviceBuffer<float> d_params = upload(params);
                const uint32_t batch = 10007, n_out = enc.cpu->n_output_dims();
                const DeviceBuffer<float> d_in = upload(random_matrix(batch, dims, 44, -0.05f, 1.05f));
                std::vector<float> reference;
                for (const Mapping& m : mappings) {
                    GridKernelOptions options;
                    options.forward_level_group = m.group;
                    options.forward_chunk_loads = m.chunks;
                    auto& grid = dynamic_cast<GpuGridEncoding&>(*enc.gpu);
                    grid.set_kernel_options(options);
                    grid.set_params(d_params.data(), stream_);
                    DeviceBuffer<float> d_out = poisoned((size_t)batch * n_out, stream_);
                    grid.forward(const_rows(d_in.data(), dims), rows(d_out.data(), n_out), batch, stream_);
                    const std::vector<float> out = download(d_out.data(), d_out.size());
                    if (reference.empty()) {
                        // The reference mapping itself against the CPU (fp16-rounded tables).
                        expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, rounded_to_half(params), 1000, 45, -0.05f,
                                                    1.05f, stream_);
                        reference = out;
                    } else {
                        EXPECT_EQ(std::memcmp(out.data(), reference.data(), out.size() * sizeof(float)), 0)
                            << "forward_level_group " << m.group << (m.chunks ? " with" : " without")
                            << " chunk loads differs from group 1 without";
                    }
                }
            }
        }
    }
}

// A grid inside a Composite whose parameters and output columns start at an
// odd float: vector atomics and stores must fall back to scalars there.
TEST_F(GpuTest, GridsAtOddFloatOffsetsInCompositeMatchCpu) {
    const json odd_dense = {{"otype", "DenseGrid"},      {"n_dims_to_encode", 2}, {"n_levels", 1},
                            {"n_features_per_level", 1}, {"base_resolution", 4}};  // 5 x 5 = 25 params, 1 output
    const json config = {
        {"otype", "Composite"},
        {"nested",
         {odd_dense,
          {{"otype", "HashGrid"}, {"n_dims_to_encode", 2}, {"n_levels", 8}, {"n_features_per_level", 2},
           {"log2_hashmap_size", 12}, {"base_resolution", 8}, {"per_level_scale", 1.5}},
          {{"otype", "HashGrid"}, {"n_dims_to_encode", 3}, {"n_levels", 4}, {"n_features_per_level", 4},
           {"log2_hashmap_size", 10}}}}};
    ASSERT_EQ(create_gpu_encoding(2, odd_dense).cpu->n_params() % 2, 1u) << "the test needs an odd offset";
    for (const GridKernelCase& kernel_case : grid_kernel_cases()) {
        for (GridParamPrecision precision : {GridParamPrecision::Half, GridParamPrecision::Float}) {
            SCOPED_TRACE(std::string(kernel_case.name) + (precision == GridParamPrecision::Half ? ", fp16" : ", fp32"));
            GpuEncodingPair enc = create_gpu_encoding(7, config, "encoding", with_grid_kernels(kernel_case.options, precision));
            std::vector<float> params = random_vector(enc.cpu->n_params(), 45, -1.f, 1.f);
            const DeviceBuffer<float> d_params = upload(params);
            enc.gpu->set_params(d_params.data(), stream_);
            if (precision == GridParamPrecision::Half) params = rounded_to_half(params);
            for (uint32_t batch : {1u, 127u, large_batch(100003u)}) {
                expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, params, batch, 600 + batch, 0.f, 1.f, stream_);
            }
        }
    }
}

TEST_F(GpuTest, GridKernelOptionsAreValidated) {
    GridKernelOptions bad_group;
    bad_group.forward_level_group = 3;
    EXPECT_THROW(create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2), "encoding", with_grid_kernels(bad_group)),
                 std::invalid_argument);
    GridKernelOptions bad_ratio;
    bad_ratio.gradient_flush_ratio = 0;
    EXPECT_THROW(create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2), "encoding", with_grid_kernels(bad_ratio)),
                 std::invalid_argument);
    for (uint32_t run : {0u, 65u}) {
        GridKernelOptions bad_run;
        bad_run.gradient_sample_run = run;
        EXPECT_THROW(create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2), "encoding", with_grid_kernels(bad_run)),
                     std::invalid_argument)
            << "gradient_sample_run " << run;
    }
}

// FUSEDNGP_GRID_KERNELS overrides the options (a benchmarking knob).
TEST_F(GpuTest, GridKernelOptionsFromEnvironment) {
    test::ScopedEnv env("FUSEDNGP_GRID_KERNELS", nullptr);
    ASSERT_TRUE(env.set("gradient_smem_bytes=0,forward_level_group=2"));
    GpuEncodingPair enc = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    EXPECT_EQ(as_grid(*enc.gpu).gradient_smem_bytes(), 0u);
    ASSERT_TRUE(env.set("gradient_warp_aggregate_shared=1"));
    GpuEncodingPair aggregated = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    EXPECT_TRUE(as_grid(*aggregated.gpu).shape().config.gradient_warp_aggregate_shared);
    ASSERT_TRUE(env.set("gradient_sample_run=16"));
    GpuEncodingPair runs = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    EXPECT_EQ(as_grid(*runs.gpu).shape().config.gradient_sample_run, 16u);
    // The global-level aggregation's key does not exist: unknown.
    ASSERT_TRUE(env.set("gradient_warp_aggregate=1"));
    EXPECT_THROW(create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2)), std::invalid_argument);
    ASSERT_TRUE(env.set("no_such_knob=1"));
    EXPECT_THROW(create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2)), std::invalid_argument);
    ASSERT_TRUE(env.set(nullptr));
    GpuEncodingPair defaults = create_gpu_encoding(2, small_grid_config("Hash", "Linear", 2));
    EXPECT_GT(as_grid(*defaults.gpu).gradient_smem_bytes(), 0u);
}

struct EncodingCase {
    std::string name;
    json config;
    uint32_t n_input_dims;
    float lo, hi;  // input range
};

std::vector<EncodingCase> parameter_free_cases() {
    std::vector<EncodingCase> cases = {
        {"Identity", {{"otype", "Identity"}, {"scale", 0.7}, {"offset", -0.2}}, 5, -2.f, 2.f},
        {"Frequency", {{"otype", "Frequency"}, {"n_frequencies", 8}}, 3, 0.f, 1.f},
        {"TriangleWave", {{"otype", "TriangleWave"}, {"n_frequencies", 10}}, 2, -0.5f, 1.5f},
        {"OneBlob", {{"otype", "OneBlob"}, {"n_bins", 16}}, 3, 0.f, 1.f},
        {"OneBlobFewBins", {{"otype", "OneBlob"}, {"n_bins", 3}}, 1, -0.2f, 1.2f},
    };
    for (int degree = 1; degree <= 8; ++degree) {
        cases.push_back({"SphericalHarmonicsDegree" + std::to_string(degree),
                         {{"otype", "SphericalHarmonics"}, {"degree", degree}}, 3, 0.f, 1.f});
    }
    return cases;
}

class GpuParameterFreeEncodingTest : public GpuTest, public ::testing::WithParamInterface<EncodingCase> {};

TEST_P(GpuParameterFreeEncodingTest, MatchesCpu) {
    const EncodingCase& c = GetParam();
    GpuEncodingPair enc = create_gpu_encoding(c.n_input_dims, c.config);
    for (uint32_t batch : {1u, 127u, large_batch(100003u)}) {
        expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, {}, batch, 200 + batch, c.lo, c.hi, stream_);
    }
}

INSTANTIATE_TEST_SUITE_P(All, GpuParameterFreeEncodingTest, ::testing::ValuesIn(parameter_free_cases()),
                         [](const ::testing::TestParamInfo<EncodingCase>& p) { return p.param.name; });

// Composites: nested encodings read and write column slices through strides,
// and each parameterised one gets its own slice of the parameter block.
TEST_F(GpuTest, CompositeMatchesCpu) {
    const json grid_then_others = {
        {"otype", "Composite"},
        {"nested",
         {{{"otype", "HashGrid"}, {"n_dims_to_encode", 3}, {"n_levels", 4}, {"log2_hashmap_size", 10}},
          {{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 3}, {"degree", 4}},
          {{"otype", "Identity"}}}}};
    const json two_grids = {
        {"otype", "Composite"},
        {"nested",
         {{{"otype", "Frequency"}, {"n_dims_to_encode", 1}, {"n_frequencies", 4}},
          {{"otype", "DenseGrid"}, {"n_dims_to_encode", 2}, {"n_levels", 3}, {"n_features_per_level", 4},
           {"base_resolution", 4}},
          {{"otype", "HashGrid"}, {"n_dims_to_encode", 3}, {"n_levels", 5}, {"n_features_per_level", 1},
           {"log2_hashmap_size", 11}, {"interpolation", "Smoothstep"}},
          {{"otype", "OneBlob"}, {"n_bins", 5}}}}};
    for (const auto& [config, n_in] : std::vector<std::pair<json, uint32_t>>{{grid_then_others, 8}, {two_grids, 7}}) {
        for (GridParamPrecision precision : {GridParamPrecision::Half, GridParamPrecision::Float}) {
            GpuEncodingPair enc = create_gpu_encoding(n_in, config, "encoding", GpuEncodingOptions{precision, {}});
            std::vector<float> params = random_vector(enc.cpu->n_params(), 21, -1.f, 1.f);
            const DeviceBuffer<float> d_params = upload(params);
            enc.gpu->set_params(d_params.data(), stream_);
            if (precision == GridParamPrecision::Half) params = rounded_to_half(params);
            for (uint32_t batch : {1u, 127u, large_batch(100003u)}) {
                expect_encoding_matches_cpu(*enc.cpu, *enc.gpu, params, batch, 300 + batch, 0.f, 1.f, stream_);
            }
        }
    }
}

// NeRF's colour encoding, [SH of the direction (3), identity of 16 features]:
// with skip_input_gradient_below(3) the direction's dL/din is not written and
// the features' is the full backward's exactly; a boundary inside a
// nested encoding's columns (1) still writes every column of it.
TEST_F(GpuTest, CompositeSkipsInputGradientOfLeadingColumns) {
    const json config = {{"otype", "Composite"},
                         {"nested",
                          {{{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 3}, {"degree", 4}},
                           {{"otype", "Identity"}}}}};
    const uint32_t n_in = 19, batch = 1000;
    GpuEncodingPair enc = create_gpu_encoding(n_in, config);
    auto* composite = dynamic_cast<GpuCompositeEncoding*>(enc.gpu.get());
    ASSERT_NE(composite, nullptr);
    const uint32_t n_out = enc.gpu->n_output_dims();
    const DeviceBuffer<float> in = upload(random_vector((size_t)batch * n_in, 5, 0.f, 1.f));
    const DeviceBuffer<float> dout = upload(random_vector((size_t)batch * n_out, 6, -1.f, 1.f));
    auto input_gradient = [&](uint32_t skip_below) {
        composite->skip_input_gradient_below(skip_below);
        DeviceBuffer<float> din = poisoned((size_t)batch * n_in, stream_);
        enc.gpu->backward(const_rows(in.data(), n_in), const_rows(dout.data(), n_out), nullptr, rows(din.data(), n_in),
                          batch, stream_);
        return download(din.data(), din.size());
    };
    const std::vector<float> full = input_gradient(0), skipped = input_gradient(3), inside = input_gradient(1);
    for (uint32_t i = 0; i < batch; ++i) {
        for (uint32_t c = 0; c < n_in; ++c) {
            const size_t k = (size_t)i * n_in + c;
            ASSERT_TRUE(std::isfinite(full[k])) << "row " << i << " column " << c;
            if (c < 3) EXPECT_TRUE(std::isnan(skipped[k])) << "row " << i << " column " << c << " was written";
            else EXPECT_EQ(skipped[k], full[k]) << "row " << i << " column " << c;
            EXPECT_EQ(inside[k], full[k]) << "row " << i << " column " << c;
        }
    }
}

// NeRF's colour encoding again: its Identity part copies the density
// features unchanged, so a caller may write those encoded columns itself.
// forward_except_copy writes every other column as forward() does and
// leaves those alone; only a whole unit-scale Identity part qualifies.
TEST_F(GpuTest, CompositeLeavesCopiedColumnsToCaller) {
    auto composite_of = [](const json& identity) {
        return json{{"otype", "Composite"},
                    {"nested", {{{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 3}, {"degree", 4}}, identity}}};
    };
    const uint32_t n_in = 19, batch = 1000;
    GpuEncodingPair enc = create_gpu_encoding(n_in, composite_of({{"otype", "Identity"}}));
    const auto* composite = dynamic_cast<const GpuCompositeEncoding*>(enc.gpu.get());
    ASSERT_NE(composite, nullptr);
    EXPECT_EQ(composite->copied_output_column(3, 16), 16);
    EXPECT_EQ(composite->copied_output_column(3, 15), -1);
    EXPECT_EQ(composite->copied_output_column(4, 15), -1);
    EXPECT_EQ(composite->copied_output_column(0, 3), -1);  // SH does not copy
    GpuEncodingPair scaled = create_gpu_encoding(n_in, composite_of({{"otype", "Identity"}, {"scale", 2.0}}));
    EXPECT_EQ(dynamic_cast<const GpuCompositeEncoding*>(scaled.gpu.get())->copied_output_column(3, 16), -1);
    GpuEncodingPair shifted = create_gpu_encoding(n_in, composite_of({{"otype", "Identity"}, {"offset", 0.5}}));
    EXPECT_EQ(dynamic_cast<const GpuCompositeEncoding*>(shifted.gpu.get())->copied_output_column(3, 16), -1);

    const uint32_t n_out = enc.gpu->n_output_dims();
    const DeviceBuffer<float> in = upload(random_vector((size_t)batch * n_in, 7, 0.f, 1.f));
    DeviceBuffer<float> full = poisoned((size_t)batch * n_out, stream_), partial = poisoned(full.size(), stream_);
    enc.gpu->forward(const_rows(in.data(), n_in), rows(full.data(), n_out), batch, stream_);
    composite->forward_except_copy(const_rows(in.data(), n_in), rows(partial.data(), n_out), batch, 3, 16, stream_);
    const std::vector<float> a = download(full.data(), full.size()), b = download(partial.data(), partial.size());
    const std::vector<float> x = download(in.data(), in.size());
    for (uint32_t i = 0; i < batch; ++i) {
        for (uint32_t c = 0; c < n_out; ++c) {
            const size_t k = (size_t)i * n_out + c;
            if (c < 16) {
                EXPECT_EQ(b[k], a[k]) << "row " << i << " column " << c;
            } else {
                EXPECT_EQ(a[k], x[(size_t)i * n_in + 3 + (c - 16)]) << "row " << i << " column " << c;
                EXPECT_TRUE(std::isnan(b[k])) << "row " << i << " column " << c << " was written";
            }
        }
    }
}

// Bad configs fail in the CPU factory, before any device work, with its errors.
TEST(GpuComponentConfigTest, EncodingErrorsAreTheCpuConfigErrors) {
    try {
        create_gpu_encoding(3, {{"otype", "HashGrid"}, {"n_features_per_level", 3}});
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "encoding.n_features_per_level");
    }
    EXPECT_THROW(create_gpu_encoding(2, {{"otype", "SphericalHarmonics"}}), ConfigError);
}

// ---- losses ----------------------------------------------------------------------

using LossParam = std::tuple<const char*, int>;  // otype, n_dims

class GpuLossTest : public GpuTest, public ::testing::WithParamInterface<LossParam> {};

// Predictions in (0.05, 1.5) keep CrossEntropy in its domain; every 10th
// target is exactly 0 (CrossEntropy's 0 log 0 branch); Huber's delta 0.3
// puts elements on both sides of the kink.
TEST_P(GpuLossTest, MatchesCpu) {
    const auto [otype, n_dims] = GetParam();
    const json config = {{"otype", otype}, {"huber_delta", 0.3}};
    const auto cpu = create_loss<float>(config);
    const auto gpu = create_gpu_loss(config);
    EXPECT_EQ(gpu->otype(), cpu->otype());
    for (uint32_t batch : {1u, 127u, large_batch(100003u)}) {
        SCOPED_TRACE(std::string(otype) + ", " + std::to_string(n_dims) + " dims, batch " + std::to_string(batch));
        const Matrix<float> pred = random_matrix(batch, n_dims, batch, 0.05f, 1.5f);
        Matrix<float> target = random_matrix(batch, n_dims, batch + 1, 0.f, 1.5f);
        for (int64_t i = 0; i < target.size(); i += 10) target.data()[i] = 0.f;
        Matrix<float> dpred;
        const float loss = cpu->evaluate(pred, target, &dpred);

        const DeviceBuffer<float> d_pred = upload(pred), d_target = upload(target);
        DeviceBuffer<float> d_dpred = poisoned(dpred.size(), stream_), d_loss = poisoned(1, stream_);
        gpu->evaluate(d_pred.data(), d_target.data(), batch, n_dims, 1.f, d_dpred.data(), d_loss.data(), stream_);
        EXPECT_TRUE(close_elementwise(download(d_dpred.data(), dpred.size()), dpred.data(), dpred.size(),
                                      kElementwiseTolerance))
            << "dL/dpred";
        EXPECT_TRUE(close_elementwise(download(d_loss.data(), 1), &loss, 1, kElementwiseTolerance)) << "mean loss";

        // Loss scale multiplies the gradient only; either output may be skipped.
        DeviceBuffer<float> d_scaled = poisoned(dpred.size(), stream_);
        gpu->evaluate(d_pred.data(), d_target.data(), batch, n_dims, 128.f, d_scaled.data(), nullptr, stream_);
        const Matrix<float> scaled = dpred * 128.f;
        EXPECT_TRUE(close_elementwise(download(d_scaled.data(), dpred.size()), scaled.data(), scaled.size(),
                                      kElementwiseTolerance))
            << "dL/dpred with loss scale 128";
        DeviceBuffer<float> d_loss_only = poisoned(1, stream_);
        gpu->evaluate(d_pred.data(), d_target.data(), batch, n_dims, 128.f, nullptr, d_loss_only.data(), stream_);
        const std::vector<float> first = download(d_loss.data(), 1), second = download(d_loss_only.data(), 1);
        EXPECT_EQ(std::memcmp(first.data(), second.data(), sizeof(float)), 0)
            << "the mean loss must be deterministic and unscaled: " << first[0] << " vs " << second[0];
    }
}

INSTANTIATE_TEST_SUITE_P(All, GpuLossTest,
                         ::testing::Combine(::testing::Values("L2", "L1", "RelativeL2", "RelativeL1",
                                                              "RelativeL2Luminance", "MAPE", "SMAPE", "Huber",
                                                              "CrossEntropy"),
                                            ::testing::Values(1, 3, 4)),
                         [](const ::testing::TestParamInfo<LossParam>& p) {
                             return std::string(std::get<0>(p.param)) + std::to_string(std::get<1>(p.param)) +
                                    "Dims";
                         });

TEST(GpuComponentConfigTest, LossErrorsAreTheCpuConfigErrors) {
    try {
        create_gpu_loss({{"otype", "Huber"}, {"huber_delta", -1.0}});
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "loss.huber_delta");
    }
    EXPECT_THROW(create_gpu_loss({{"otype", "L3"}}), ConfigError);
}

// ---- optimizers ----------------------------------------------------------------------

// An "encoding" group of 2-element rows (odd row count) and a "network" group
// of single elements, as Model::param_groups() builds them.
const std::vector<ParamGroup> kGroups = {{"encoding", 0, 4002, 2}, {"network", 4002, 999, 1}};
constexpr size_t kExtent = 5001;

// Rows 0, 3, 6, ... of the encoding group have a zero gradient at every step
// (never touched by a sample); about half of the other rows are zero at a
// given step; some network elements are exactly zero too.
std::vector<float> sparse_gradient(uint64_t seed) {
    std::vector<float> g = random_vector(kExtent, seed, -1.f, 1.f);
    Rng rng(seed ^ 0x5bd1e995);
    for (size_t row = 0; row < 2001; ++row) {
        if (row % 3 == 0 || rng.next_float() < 0.5f) g[2 * row] = g[2 * row + 1] = 0.f;
    }
    for (size_t i = 4002; i < kExtent; i += 7) g[i] = 0.f;
    return g;
}

// Runs the CPU and GPU optimizers from the same config side by side and
// compares everything they expose after each call.
class OptimizerPair {
public:
    OptimizerPair(const json& config, cudaStream_t stream)
        : cpu_(create_optimizer<float>(config)), gpu_(create_gpu_optimizer(config)), stream_(stream) {
        EXPECT_EQ(gpu_->otype(), cpu_->otype());
        cpu_->allocate(kGroups);
        gpu_->allocate(kGroups, stream_);
        cpu_params_ = random_vector(kExtent, 99, -1.f, 1.f);
        initial_params_ = cpu_params_;
        d_params_ = upload(cpu_params_);
        d_grads_ = DeviceBuffer<float>(kExtent);
    }

    // One step on both, with gradient `seed`.
    void step(uint64_t seed) {
        const std::vector<float> grads = sparse_gradient(seed);
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(d_grads_.data(), grads.data(), kExtent * sizeof(float),
                                           cudaMemcpyHostToDevice, stream_));
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));  // `grads` dies here
        cpu_->step(cpu_params_.data(), grads.data());
        gpu_->step(d_params_.data(), d_grads_.data(), stream_);
    }

    void expect_equal_state(const std::string& when) {
        SCOPED_TRACE(when);
        EXPECT_EQ(gpu_->step_count(stream_), cpu_->step_count()) << "step count";
        EXPECT_EQ(gpu_->learning_rate(), cpu_->learning_rate()) << "learning rate";
        EXPECT_TRUE(close_elementwise(download(d_params_.data(), kExtent), cpu_params_.data(), kExtent,
                                      kElementwiseTolerance))
            << "params";
        const float* cpu_inference = cpu_->inference_params(cpu_params_.data());
        EXPECT_TRUE(close_elementwise(download(gpu_->inference_params(d_params_.data()), kExtent), cpu_inference,
                                      kExtent, kElementwiseTolerance))
            << "inference params";
        const std::vector<StateBuffer<float>> cpu_state = cpu_->state();
        const std::vector<GpuStateBuffer> gpu_state = gpu_->state();
        ASSERT_EQ(gpu_state.size(), cpu_state.size()) << "number of state buffers";
        for (size_t i = 0; i < cpu_state.size(); ++i) {
            EXPECT_EQ(gpu_state[i].name, cpu_state[i].name);
            ASSERT_EQ(gpu_state[i].size, cpu_state[i].data->size()) << cpu_state[i].name;
            EXPECT_TRUE(close_elementwise(download(gpu_state[i].data, gpu_state[i].size), cpu_state[i].data->data(),
                                          gpu_state[i].size, kElementwiseTolerance))
                << "state buffer " << cpu_state[i].name;
        }
    }

    Optimizer<float>& cpu() { return *cpu_; }
    GpuOptimizer& gpu() { return *gpu_; }
    float* d_params() { return d_params_.data(); }
    const float* d_grads() const { return d_grads_.data(); }
    const std::vector<float>& cpu_params() const { return cpu_params_; }
    const std::vector<float>& initial_params() const { return initial_params_; }

private:
    std::unique_ptr<Optimizer<float>> cpu_;
    std::unique_ptr<GpuOptimizer> gpu_;
    cudaStream_t stream_;
    std::vector<float> cpu_params_, initial_params_;
    DeviceBuffer<float> d_params_, d_grads_;
};

struct OptimizerCase {
    std::string name;
    json config;
};

std::vector<OptimizerCase> optimizer_cases() {
    const json adam = {{"otype", "Adam"}, {"learning_rate", 1e-2}};
    return {
        {"AdamDefaults", {{"otype", "Adam"}}},
        {"AdamSkipAllRowsL2", {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"l2_reg", 1e-3}, {"skip_zero_gradient_rows", true}}},
        {"AdamNoRowSkip", {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"skip_zero_gradient_rows", false}}},
        {"AdamGlobalBiasCorrection",
         {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"per_row_bias_correction", false}}},
        {"Sgd", {{"otype", "SGD"}, {"learning_rate", 0.1}, {"l2_reg", 1e-2}}},
        {"EmaOverAdam", {{"otype", "EMA"}, {"decay", 0.9}, {"nested", adam}}},
        {"EmaWindowOverAdam", {{"otype", "EMA"}, {"decay", 0.6}, {"window_fraction", 0.5}, {"nested", adam}}},
        {"EmaEveryOverAdam", {{"otype", "EMA"}, {"decay", 0.9}, {"update_every", 2}, {"nested", adam}}},
        {"EmaWindowEveryOverAdam",
         {{"otype", "EMA"}, {"decay", 0.9}, {"window_fraction", 0.5}, {"update_every", 3}, {"nested", adam}}},
        {"DecayOverAdam",
         {{"otype", "ExponentialDecay"}, {"decay_start", 1}, {"decay_interval", 2}, {"decay_base", 0.5}, {"nested", adam}}},
        {"DecayOverSgd",
         {{"otype", "ExponentialDecay"}, {"decay_start", 0}, {"decay_interval", 1}, {"decay_base", 0.7},
          {"nested", {{"otype", "SGD"}, {"learning_rate", 0.1}}}}},
        // The shipped configs' stack (configs/image.json), with a schedule that acts within 6 steps.
        {"EmaOverDecayOverAdam",
         {{"otype", "Ema"},
          {"decay", 0.95},
          {"nested",
           {{"otype", "ExponentialDecay"}, {"decay_start", 2}, {"decay_interval", 1}, {"decay_end", 4},
            {"decay_base", 0.33},
            {"nested", {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"epsilon", 1e-15},
                        {"l2_reg", 1e-6}}}}}}},
        // Composite by group: the image instability's fix (network lr 1e-3), an
        // EMA on one group only, learning_rate_scale, under a shared schedule.
        {"CompositeByGroups",
         {{"otype", "Composite"},
          {"learning_rate_scale", 0.5},
          {"groups",
           {{"encoding", {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"epsilon", 1e-15}}},
            {"network", {{"otype", "Adam"}, {"learning_rate", 1e-3}, {"l2_reg", 1e-6}}}}}}},
        {"CompositeEmaOnOneGroup",
         {{"otype", "Composite"},
          {"groups",
           {{"encoding", adam},
            {"network", {{"otype", "EMA"}, {"decay", 0.9}, {"nested", {{"otype", "SGD"}, {"learning_rate", 0.1}}}}}}}}},
        {"DecayOverComposite",
         {{"otype", "ExponentialDecay"}, {"decay_start", 1}, {"decay_interval", 2}, {"decay_base", 0.5},
          {"nested",
           {{"otype", "Composite"},
            {"groups", {{"encoding", adam}, {"network", {{"otype", "Adam"}, {"learning_rate", 1e-3}}}}}}}}},
        // tiny-cuda-nn's slice form: a slice ending inside the encoding group.
        {"CompositeBySlice",
         {{"otype", "Composite"},
          {"nested", {{{"otype", "Adam"}, {"learning_rate", 1e-2}, {"n_params_to_optimize", 3000}},
                      {{"otype", "SGD"}, {"learning_rate", 0.1}}}}}},
    };
}

class GpuOptimizerTest : public GpuTest, public ::testing::WithParamInterface<OptimizerCase> {};

TEST_P(GpuOptimizerTest, StepsMatchCpu) {
    OptimizerPair pair(GetParam().config, stream_);
    pair.expect_equal_state("after allocate");
    for (uint64_t s = 1; s <= 6; ++s) {
        pair.step(s);
        pair.expect_equal_state("after step " + std::to_string(s));
    }
    // The test is not vacuous: the parameters moved.
    EXPECT_FALSE(close_elementwise(pair.cpu_params(), pair.initial_params().data(), kExtent, 1e-7));
}

INSTANTIATE_TEST_SUITE_P(All, GpuOptimizerTest, ::testing::ValuesIn(optimizer_cases()),
                         [](const ::testing::TestParamInfo<OptimizerCase>& p) { return p.param.name; });

// Rows whose gradient is always zero stay exactly as they were when Adam
// skips them (Auto: the 2-element encoding rows), even with l2_reg.
TEST_F(GpuTest, AdamLeavesZeroGradientRowsUntouched) {
    OptimizerPair pair({{"otype", "Adam"}, {"learning_rate", 1e-2}, {"l2_reg", 1e-2}}, stream_);
    for (uint64_t s = 1; s <= 3; ++s) pair.step(s);
    const std::vector<float> params = download(pair.d_params(), kExtent);
    for (size_t row = 0; row < 2001; row += 3) {
        ASSERT_EQ(params[2 * row], pair.initial_params()[2 * row]) << "skipped row " << row << " moved";
        ASSERT_EQ(params[2 * row + 1], pair.initial_params()[2 * row + 1]) << "skipped row " << row << " moved";
    }
    pair.expect_equal_state("after 3 steps");
}

// The sparse path (GpuOptimizer::set_sparse_group): the same update as the
// dense one, the updated rows' gradient cleared and their fp16 copy written,
// rows never touched left alone in the mirror; the network block untouched.
TEST_F(GpuTest, SparseGroupUpdatesClearGradientsAndWriteTheHalfMirror) {
    const json adam = {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"epsilon", 1e-15}};
    const json decay = {{"otype", "ExponentialDecay"}, {"decay_start", 1}, {"decay_interval", 1}, {"decay_base", 0.5},
                        {"nested", adam}};
    const json ema = {{"otype", "Ema"}, {"decay", 0.9}, {"nested", decay}};
    for (const json& config : std::vector<json>{adam, ema}) {
        SCOPED_TRACE(config.dump());
        OptimizerPair pair(config, stream_);
        const __half sentinel = __float2half_rn(123.f);
        std::vector<__half> mirror_init(4002, sentinel);
        DeviceBuffer<__half> mirror(4002);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(mirror.data(), mirror_init.data(), 4002 * sizeof(__half), cudaMemcpyHostToDevice));
        EXPECT_FALSE(pair.gpu().set_sparse_group("network", mirror.data()));  // no row skipping there
        EXPECT_FALSE(pair.gpu().set_sparse_group("nonexistent", mirror.data()));
        ASSERT_TRUE(pair.gpu().set_sparse_group("encoding", mirror.data()));
        std::vector<bool> touched(2001, false);
        for (uint64_t s = 1; s <= 4; ++s) {
            const std::vector<float> grads = sparse_gradient(s);
            pair.step(s);
            pair.expect_equal_state("after step " + std::to_string(s));
            const std::vector<float> g = download(pair.d_grads(), kExtent);
            for (size_t i = 0; i < 4002; ++i) ASSERT_EQ(g[i], 0.f) << "encoding gradient not cleared at " << i;
            for (size_t i = 4002; i < kExtent; ++i) ASSERT_EQ(g[i], grads[i]) << "network gradient changed at " << i;
            for (size_t row = 0; row < 2001; ++row) touched[row] = touched[row] || grads[2 * row] != 0.f || grads[2 * row + 1] != 0.f;
        }
        std::vector<__half> m(4002);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(m.data(), mirror.data(), 4002 * sizeof(__half), cudaMemcpyDeviceToHost));
        const std::vector<float> params = download(pair.d_params(), kExtent);
        size_t n_touched = 0;
        for (size_t i = 0; i < 4002; ++i) {
            const __half expected = touched[i / 2] ? __float2half_rn(params[i]) : sentinel;
            n_touched += touched[i / 2];
            ASSERT_EQ(std::memcmp(&m[i], &expected, sizeof(__half)), 0) << "mirror element " << i;
        }
        EXPECT_GT(n_touched, 1000u);
        EXPECT_TRUE(pair.gpu().set_sparse_group("encoding", nullptr));  // off again
    }
    // SGD has no sparse path.
    OptimizerPair sgd({{"otype", "SGD"}, {"learning_rate", 0.1}}, stream_);
    DeviceBuffer<__half> mirror(4002);
    EXPECT_FALSE(sgd.gpu().set_sparse_group("encoding", mirror.data()));
}

// Resuming: the step count (bias corrections, decay schedule) and the
// learning rate are set on the device and used by the next steps.
TEST_F(GpuTest, OptimizerResumesFromStepCountAndLearningRate) {
    OptimizerPair pair({{"otype", "ExponentialDecay"}, {"decay_start", 10}, {"decay_interval", 3}, {"decay_base", 0.5},
                        {"nested", {{"otype", "Adam"}, {"learning_rate", 1e-2}}}},
                       stream_);
    pair.cpu().set_step_count(11);
    pair.gpu().set_step_count(11, stream_);
    pair.cpu().set_learning_rate(3e-2);
    pair.gpu().set_learning_rate(3e-2, stream_);
    pair.expect_equal_state("after set_step_count(11)");
    for (uint64_t s = 1; s <= 4; ++s) pair.step(s);
    pair.expect_equal_state("after 4 more steps");
}

// A step captured once in a CUDA graph and replayed equals stepping on the
// CPU each time: nothing per-step is baked into the graph. A learning rate
// set between replays reaches the captured kernels.
TEST_F(GpuTest, OptimizerStepReplaysFromCudaGraph) {
    const OptimizerCase stack = optimizer_cases().back();  // EMA over ExponentialDecay over Adam
    OptimizerPair pair(stack.config, stream_);
    const std::vector<float> grads = sparse_gradient(42);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(const_cast<float*>(pair.d_grads()), grads.data(), kExtent * sizeof(float),
                                  cudaMemcpyHostToDevice));

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    FUSEDNGP_GPU_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    pair.gpu().step(pair.d_params(), pair.d_grads(), stream_);
    FUSEDNGP_GPU_CHECK(cudaStreamEndCapture(stream_, &graph));
    FUSEDNGP_GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));

    std::vector<float> cpu_params = pair.cpu_params();
    for (int replay = 1; replay <= 5; ++replay) {
        if (replay == 4) {
            pair.gpu().set_learning_rate(5e-3, stream_);
            pair.cpu().set_learning_rate(5e-3);
        }
        FUSEDNGP_GPU_CHECK(cudaGraphLaunch(exec, stream_));
        pair.cpu().step(cpu_params.data(), grads.data());
    }
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    EXPECT_EQ(pair.gpu().step_count(stream_), 5u);
    EXPECT_TRUE(close_elementwise(download(pair.d_params(), kExtent), cpu_params.data(), kExtent,
                                  kElementwiseTolerance))
        << "params after 5 replays";
    EXPECT_TRUE(close_elementwise(download(pair.gpu().inference_params(pair.d_params()), kExtent),
                                  pair.cpu().inference_params(cpu_params.data()), kExtent, kElementwiseTolerance))
        << "EMA average after 5 replays";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

// ---- the fused Adam update against the per-group launches -------------------------
// (GpuOptimizer::set_fused_update; docs/GPU_COMPONENTS.md, "Fused Adam update")

using test::same_bits;

OptimizerCounters download_counters(const GpuOptimizer& opt) {
    OptimizerCounters c;
    FUSEDNGP_GPU_CHECK(cudaMemcpy(&c, opt.device_counters(), sizeof(c), cudaMemcpyDeviceToHost));
    return c;
}

std::vector<__half> download_halves(const __half* d, size_t n) {
    std::vector<__half> h(n);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(h.data(), d, n * sizeof(__half), cudaMemcpyDeviceToHost));
    return h;
}

// One GPU optimizer of a config on its own copy of the parameters, gradients
// and (where it takes one) a sparse fp16 mirror of the encoding group.
struct UpdatePathRun {
    UpdatePathRun(const json& config, bool fused, const std::vector<ParamGroup>& groups, size_t extent,
                  cudaStream_t stream)
        : opt(create_gpu_optimizer(config)), params(extent), grads(extent), mirror(groups.front().size) {
        opt->set_fused_update(fused);
        opt->allocate(groups, stream);
        const std::vector<float> p = random_vector(extent, 99, -1.f, 1.f);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(params.data(), p.data(), extent * sizeof(float), cudaMemcpyHostToDevice));
        FUSEDNGP_GPU_CHECK(cudaMemset(mirror.data(), 0, mirror.size() * sizeof(__half)));
        sparse = opt->set_sparse_group(groups.front().name, mirror.data());
    }
    std::unique_ptr<GpuOptimizer> opt;
    DeviceBuffer<float> params, grads;
    DeviceBuffer<__half> mirror;
    bool sparse = false;
};

// Everything both runs expose, bit for bit.
void expect_same_update_state(UpdatePathRun& fused, UpdatePathRun& per_group, size_t extent, cudaStream_t stream,
                              const std::string& when) {
    SCOPED_TRACE(when);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(fused.opt->step_count(stream), per_group.opt->step_count(stream));
    const OptimizerCounters a = download_counters(*fused.opt), b = download_counters(*per_group.opt);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(std::memcmp(&a.step_size, &b.step_size, sizeof(float)), 0) << a.step_size << " vs " << b.step_size;
    EXPECT_EQ(a.learning_rate, b.learning_rate);
    EXPECT_EQ(a.blocks_done, 0u) << "the fused update's block count was not reset";
    EXPECT_TRUE(same_bits(download(fused.params.data(), extent), download(per_group.params.data(), extent)))
        << "params";
    EXPECT_TRUE(same_bits(download(fused.grads.data(), extent), download(per_group.grads.data(), extent)))
        << "gradients (sparse rows cleared)";
    EXPECT_TRUE(same_bits(download(fused.opt->inference_params(fused.params.data()), extent),
                          download(per_group.opt->inference_params(per_group.params.data()), extent)))
        << "inference params";
    EXPECT_TRUE(same_bits(download_halves(fused.mirror.data(), fused.mirror.size()),
                          download_halves(per_group.mirror.data(), per_group.mirror.size())))
        << "fp16 mirror";
    const std::vector<GpuStateBuffer> sa = fused.opt->state(), sb = per_group.opt->state();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
        EXPECT_TRUE(same_bits(download(sa[i].data, sa[i].size), download(sb[i].data, sb[i].size))) << sa[i].name;
    }
}

// Every optimizer config of StepsMatchCpu, with the sparse path where it
// exists: the fused update gives the per-group launches' bits after each of
// 8 steps, also across a learning-rate change and a set_step_count (resume).
TEST_P(GpuOptimizerTest, FusedUpdateEqualsPerGroupLaunches) {
    UpdatePathRun fused(GetParam().config, true, kGroups, kExtent, stream_);
    UpdatePathRun per_group(GetParam().config, false, kGroups, kExtent, stream_);
    EXPECT_EQ(fused.sparse, per_group.sparse);
    for (uint64_t s = 1; s <= 8; ++s) {
        const std::vector<float> g = sparse_gradient(s);
        for (UpdatePathRun* run : {&fused, &per_group}) {
            FUSEDNGP_GPU_CHECK(cudaMemcpy(run->grads.data(), g.data(), kExtent * sizeof(float), cudaMemcpyHostToDevice));
            if (s == 4) run->opt->set_learning_rate(run->opt->learning_rate() * 0.5, stream_);
            if (s == 6) run->opt->set_step_count(20, stream_);
            run->opt->step(run->params.data(), run->grads.data(), stream_);
        }
        expect_same_update_state(fused, per_group, kExtent, stream_, "after step " + std::to_string(s));
    }
}

// The step counter over many steps and ~1190 virtual blocks (more than one
// wave of real ones: 792 on the H200, so some blocks take two; the
// grid-stride loop): the fused update advances it exactly once per launch
// and computes the same
// step size sequence (learning rate under a schedule, bias corrections) as
// the one-thread begin-step kernel, also when captured once and replayed.
TEST_F(GpuTest, FusedUpdateStepSizeSequence) {
    const std::vector<ParamGroup> groups = {{"encoding", 0, 600002, 2}, {"network", 600002, 5000, 1}};
    const size_t extent = 605002;
    const json config = {{"otype", "ExponentialDecay"}, {"decay_start", 3}, {"decay_interval", 2},
                         {"decay_base", 0.7}, {"nested", {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}}}};
    UpdatePathRun fused(config, true, groups, extent, stream_), per_group(config, false, groups, extent, stream_);
    UpdatePathRun replayed(config, true, groups, extent, stream_);
    const std::vector<float> g = random_vector(extent, 5, -1.f, 1.f);
    for (UpdatePathRun* run : {&fused, &per_group, &replayed}) {
        FUSEDNGP_GPU_CHECK(cudaMemcpy(run->grads.data(), g.data(), extent * sizeof(float), cudaMemcpyHostToDevice));
        run->opt->set_sparse_group("encoding", nullptr);  // the same gradient every step
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    FUSEDNGP_GPU_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    replayed.opt->step(replayed.params.data(), replayed.grads.data(), stream_);
    FUSEDNGP_GPU_CHECK(cudaStreamEndCapture(stream_, &graph));
    FUSEDNGP_GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (uint64_t s = 1; s <= 12; ++s) {
        fused.opt->step(fused.params.data(), fused.grads.data(), stream_);
        per_group.opt->step(per_group.params.data(), per_group.grads.data(), stream_);
        FUSEDNGP_GPU_CHECK(cudaGraphLaunch(exec, stream_));
        sync();
        const OptimizerCounters a = download_counters(*fused.opt), b = download_counters(*per_group.opt);
        const OptimizerCounters r = download_counters(*replayed.opt);
        ASSERT_EQ(a.step, s);
        ASSERT_EQ(b.step, s);
        ASSERT_EQ(r.step, s);
        EXPECT_EQ(std::memcmp(&a.step_size, &b.step_size, sizeof(float)), 0) << "step " << s;
        EXPECT_EQ(std::memcmp(&r.step_size, &b.step_size, sizeof(float)), 0) << "step " << s << " (replayed)";
        EXPECT_EQ(a.blocks_done, 0u);
        EXPECT_EQ(r.blocks_done, 0u);
    }
    expect_same_update_state(fused, per_group, extent, stream_, "after 12 steps");
    expect_same_update_state(replayed, per_group, extent, stream_, "after 12 replays");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
}

// set_fragment_outputs: the fused update writes each updated network weight
// to the MLP's fp32 master and its two fp16 fragment slots (what FusedMlp's
// set_params_device would write for it); padding slots stay as they were.
TEST_F(GpuTest, FusedUpdateWritesMlpFragments) {
    const MlpShape shape{5, 16, 16, 2, 3, 16};  // 384 weights
    const size_t n_net = n_params(shape), padded = n_params_padded(shape);
    ASSERT_EQ(n_net, 384u);
    const std::vector<ParamGroup> groups = {{"encoding", 0, 4002, 2}, {"network", 4002, n_net, 1}};
    const size_t extent = 4002 + n_net;
    const json adam = {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"l2_reg", 1e-3}};
    const json stack = {{"otype", "Ema"}, {"decay", 0.9},
                        {"nested", {{"otype", "ExponentialDecay"}, {"decay_start", 1}, {"decay_interval", 1},
                                    {"decay_base", 0.5}, {"nested", adam}}}};
    const json composite = {{"otype", "Composite"},
                            {"groups", {{"encoding", adam}, {"network", {{"otype", "Adam"}, {"learning_rate", 1e-3}}}}}};
    for (const json& config : {adam, stack, composite}) {
        SCOPED_TRACE(config.dump());
        UpdatePathRun fused(config, true, groups, extent, stream_), per_group(config, false, groups, extent, stream_);
        DeviceBuffer<float> master(n_net);
        DeviceBuffer<uint16_t> w_fwd(padded), w_bwd(padded);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(master.data(), fused.params.data() + 4002, n_net * sizeof(float),
                                      cudaMemcpyDeviceToDevice));
        // Stand-in for the conversion: every slot 0x7777 first, so a slot the
        // update should write and did not fails.
        FUSEDNGP_GPU_CHECK(cudaMemset(w_fwd.data(), 0x77, padded * sizeof(uint16_t)));
        FUSEDNGP_GPU_CHECK(cudaMemset(w_bwd.data(), 0x77, padded * sizeof(uint16_t)));
        MlpFragmentTargets targets{master.data(), w_fwd.data(), w_bwd.data(), shape};
        MlpFragmentTargets wrong = targets;
        wrong.shape.n_out = 4;
        EXPECT_FALSE(fused.opt->set_fragment_outputs("network", &wrong)) << "size mismatch";
        EXPECT_FALSE(fused.opt->set_fragment_outputs("nonexistent", &targets));
        EXPECT_FALSE(per_group.opt->set_fragment_outputs("network", &targets)) << "per-group path";
        ASSERT_TRUE(fused.opt->set_fragment_outputs("network", &targets));
        for (uint64_t s = 1; s <= 4; ++s) {
            std::vector<float> g = random_vector(extent, s, -1.f, 1.f);
            for (size_t row = 0; row < 2001; row += 3) g[2 * row] = g[2 * row + 1] = 0.f;
            for (UpdatePathRun* run : {&fused, &per_group}) {
                FUSEDNGP_GPU_CHECK(cudaMemcpy(run->grads.data(), g.data(), extent * sizeof(float), cudaMemcpyHostToDevice));
                run->opt->step(run->params.data(), run->grads.data(), stream_);
            }
            expect_same_update_state(fused, per_group, extent, stream_, "after step " + std::to_string(s));
        }
        const std::vector<float> params = download(fused.params.data(), extent);
        const std::vector<float> net(params.begin() + 4002, params.end());
        EXPECT_TRUE(same_bits(download(master.data(), n_net), net)) << "master";
        std::vector<uint16_t> fwd(padded), bwd(padded);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(fwd.data(), w_fwd.data(), padded * sizeof(uint16_t), cudaMemcpyDeviceToHost));
        FUSEDNGP_GPU_CHECK(cudaMemcpy(bwd.data(), w_bwd.data(), padded * sizeof(uint16_t), cudaMemcpyDeviceToHost));
        std::vector<bool> written_fwd(padded, false), written_bwd(padded, false);
        for (size_t p = 0; p < n_net; ++p) {
            const __half h = __float2half_rn(net[p]);
            uint16_t bits = 0;
            std::memcpy(&bits, &h, sizeof(bits));
            const MlpFragmentSlots slots = mlp_fragment_slots(shape, p);
            ASSERT_EQ(fwd[slots.fwd], bits) << "w_fwd, weight " << p;
            ASSERT_EQ(bwd[slots.bwd], bits) << "w_bwd, weight " << p;
            written_fwd[slots.fwd] = written_bwd[slots.bwd] = true;
        }
        for (size_t i = 0; i < padded; ++i) {
            if (!written_fwd[i]) {
                ASSERT_EQ(fwd[i], 0x7777) << "w_fwd padding " << i;
            }
            if (!written_bwd[i]) {
                ASSERT_EQ(bwd[i], 0x7777) << "w_bwd padding " << i;
            }
        }
        EXPECT_TRUE(fused.opt->set_fragment_outputs("network", nullptr));
        fused.opt->set_fused_update(false);
        EXPECT_FALSE(fused.opt->set_fragment_outputs("network", &targets)) << "per-group path after switching";
    }
    // SGD has no fused update; Composite by slice declines.
    UpdatePathRun sgd({{"otype", "SGD"}, {"learning_rate", 0.1}}, true, groups, extent, stream_);
    DeviceBuffer<float> master(n_net);
    DeviceBuffer<uint16_t> w(padded);
    MlpFragmentTargets targets{master.data(), w.data(), w.data(), shape};
    EXPECT_FALSE(sgd.opt->set_fragment_outputs("network", &targets));
}

TEST(GpuComponentConfigTest, OptimizerErrors) {
    auto expect_config_error = [](const json& config, const std::string& path) {
        try {
            create_gpu_optimizer(config);
            ADD_FAILURE() << "expected a ConfigError at " << path << " for " << config.dump();
        } catch (const ConfigError& e) {
            EXPECT_EQ(e.path(), path) << e.what();
        }
    };
    // The CPU's validation, with its paths.
    expect_config_error({{"otype", "Adam"}, {"beta1", 1.0}}, "optimizer.beta1");
    expect_config_error({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}, {"epsilon", 0}}}}, "optimizer.nested.epsilon");
    // Valid on the CPU, not implemented on the GPU.
    expect_config_error({{"otype", "ExponentialDecay"},
                         {"nested", {{"otype", "EMA"}, {"nested", {{"otype", "ExponentialDecay"}, {"nested", {{"otype", "Adam"}}}}}}}},
                        "optimizer.nested.nested.otype");
}

} // namespace
} // namespace fusedngp::gpu
