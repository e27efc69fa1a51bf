// CudaBackend against the CPU reference backend on the same config and seed.
// Every test that needs a device skips itself without one.
#include "backends/cpu_backend.h"
#include "config/config.h"
#include "core/env.h"
#include "core/errors.h"
#include "engine/cuda_backend.h"
#include "engine/cuda_backend_kernels.h"
#include "gpu/fused_mlp.h"
#include "io/sampling.h"
#include "io/image.h"
#include "model/param_transfer.h"
#include "model/trainer.h"
#include "modes/image_mode.h"
#include "modes/mode.h"

#include "../cli_runner.h"
#include "same_bits.h"
#include "scoped_env.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace fusedngp {
namespace {

#define REQUIRE_DEVICE() \
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device"

double relative_error(const float* a, const float* b, size_t n) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
        diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        norm += (double)b[i] * b[i];
    }
    return std::sqrt(diff / std::max(norm, 1e-300));
}

bool all_finite(const std::vector<float>& v) {
    for (float x : v) {
        if (!std::isfinite(x)) return false;
    }
    return true;
}

json image_config() { return load_mode_config("image", ""); }

// A centre crop of the shipped test image (keeps the CPU side quick).
Image astronaut_crop(int size) {
    Image full = load_image(std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png");
    Image crop;
    crop.width = crop.height = std::min({size, full.width, full.height});
    crop.channels = full.channels;
    crop.color_space = full.color_space;
    const int x0 = (full.width - crop.width) / 2, y0 = (full.height - crop.height) / 2;
    crop.pixels.resize((size_t)crop.width * crop.height * crop.channels);
    for (int y = 0; y < crop.height; ++y)
        for (int x = 0; x < crop.width; ++x)
            for (int c = 0; c < crop.channels; ++c) crop.at(x, y, c) = full.at(x0 + x, y0 + y, c);
    return crop;
}

void random_batch(uint32_t n, uint32_t n_out, uint64_t seed, Matrix<float>& in, Matrix<float>& target) {
    Rng rng(seed);
    in.resize(n, 2);
    target.resize(n, n_out);
    for (uint32_t i = 0; i < n; ++i) {
        // Away from the domain's edges, where the grid clamps.
        in(i, 0) = 0.02f + 0.96f * rng.next_float();
        in(i, 1) = 0.02f + 0.96f * rng.next_float();
        for (uint32_t c = 0; c < n_out; ++c) target(i, c) = rng.next_float();
    }
}

double psnr_of(Backend& backend, const Image& reference, Image* render = nullptr) {
    InferenceFn infer = [&](const Matrix<float>& in, Matrix<float>& out) { backend.inference(in, out); };
    return evaluate_image(infer, reference, false, render).psnr;
}

// The sampling kernel against io/sampling.cpp's semantics (the CPU twin):
// stratified cells, pixel-centre snapping and targets, bilinear targets.
void sample_on_gpu(const Image& image, const ImageSampling& sampling, uint32_t batch, std::vector<float>& coords,
                   std::vector<float>& targets) {
    float *d_pixels = nullptr, *d_coords = nullptr, *d_targets = nullptr;
    ASSERT_EQ(cudaMalloc(&d_pixels, image.pixels.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_coords, (size_t)batch * 2 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_targets, (size_t)batch * image.channels * sizeof(float)), cudaSuccess);
    cudaMemcpy(d_pixels, image.pixels.data(), image.pixels.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(d_coords, 0xff, (size_t)batch * 2 * sizeof(float));  // poison: NaN where unwritten
    cudaMemset(d_targets, 0xff, (size_t)batch * image.channels * sizeof(float));
    gpu::DeviceImage d_image{d_pixels, image.width, image.height, image.channels};
    gpu::launch_sample_image(d_image, sampling, 9, 4, batch, d_coords, d_targets, nullptr);
    coords.resize((size_t)batch * 2);
    targets.resize((size_t)batch * image.channels);
    cudaMemcpy(coords.data(), d_coords, coords.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(targets.data(), d_targets, targets.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_pixels);
    cudaFree(d_coords);
    cudaFree(d_targets);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaBackend, SamplingKernelStratifiesAndSnapsLikeTheCpu) {
    REQUIRE_DEVICE();
    Image image = astronaut_crop(16);
    const uint32_t batch = 70;  // side 8: 64 stratified samples, one per 2 x 2 pixel cell, and 6 uniform
    std::vector<float> coords, targets;
    sample_on_gpu(image, ImageSampling{SamplePositions::Stratified, SampleTargets::PixelCentres}, batch, coords,
                  targets);
    std::vector<int> hits(64, 0);
    for (uint32_t i = 0; i < batch; ++i) {
        const float u = coords[2 * i], v = coords[2 * i + 1];
        const int px = (int)std::lround(u * 16 - 0.5f), py = (int)std::lround(v * 16 - 0.5f);
        ASSERT_NEAR(u * 16 - 0.5f, (float)px, 1e-5f) << i;
        ASSERT_NEAR(v * 16 - 0.5f, (float)py, 1e-5f) << i;
        ASSERT_TRUE(px >= 0 && px < 16 && py >= 0 && py < 16) << i;
        for (int c = 0; c < image.channels; ++c) ASSERT_EQ(targets[(size_t)i * image.channels + c], image.at(px, py, c));
        if (i < 64) ++hits[(py / 2) * 8 + px / 2];
    }
    for (int cell = 0; cell < 64; ++cell) EXPECT_EQ(hits[cell], 1) << cell;

    sample_on_gpu(image, ImageSampling{SamplePositions::Uniform, SampleTargets::Bilinear}, batch, coords, targets);
    for (uint32_t i = 0; i < batch; ++i) {
        float expected[4];
        sample_bilinear<float>(image, coords[2 * i], coords[2 * i + 1], expected);
        for (int c = 0; c < image.channels; ++c)
            EXPECT_NEAR(targets[(size_t)i * image.channels + c], expected[c], 1e-6f) << i;
    }
}

// The sampling kernel's draw for sample i, replayed on the host: the same key
// (launch_sample_image's, for sample_on_gpu's seed 9 and step 4), splitmix64
// counters, jitter and pixel snapping in float, and the CPU's stratum_of (a
// plain 64-bit %) for the spread order, the CPU's stratum_at for the tiled one.
uint64_t host_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void expected_stratified_pixel(uint32_t i, uint32_t side, SampleOrder order, int width, int height, int& px,
                               int& py) {
    const uint64_t key = 9ull * 0xD1B54A32D192ED03ull ^ (4ull + 1) * 0x9E3779B97F4A7C15ull;
    auto uniform = [&](uint64_t counter) {
        return (float)(host_mix64(key + counter * 0x9E3779B97F4A7C15ull) >> 40) * (1.f / 16777216.f);
    };
    const uint32_t cell = order == SampleOrder::Spread ? stratum_of(i, side, strata_multiplier(side))
                                                       : stratum_at(make_strata_order(side, order), i);
    const float u = jitter_in_cell<float>(uniform(2ull * i), cell % side, side);
    const float v = jitter_in_cell<float>(uniform(2ull * i + 1), cell / side, side);
    px = pixel_of<float>(u, width);
    py = pixel_of<float>(v, height);
}

// RGBA (the float4 path) at large batches (i * multiplier near 2^36, where a
// wrong modular reduction would show): every stratified sample's pixel and
// four-channel target as replayed on the host, in both sample orders (side 37
// has partial tiles at the right and bottom edges).
TEST(CudaBackend, SamplingKernelRgbaMatchesHostReplayOfStrata) {
    REQUIRE_DEVICE();
    for (auto [side, order] : {std::pair{512u, SampleOrder::Spread}, std::pair{37u, SampleOrder::Spread},
                               std::pair{512u, SampleOrder::Tiled}, std::pair{37u, SampleOrder::Tiled}}) {
        SCOPED_TRACE("side " + std::to_string(side) + (order == SampleOrder::Tiled ? " tiled" : " spread"));
        Image image;
        image.width = (int)side + 3;
        image.height = (int)side - 2;
        image.channels = 4;
        image.pixels.resize(image.pixel_count() * 4);
        for (size_t k = 0; k < image.pixels.size(); ++k) image.pixels[k] = (float)(k % 9973) / 9973.f;
        const uint32_t batch = side * side + 5;  // 5 uniform samples past the strata
        std::vector<float> coords, targets;
        sample_on_gpu(image, ImageSampling{SamplePositions::Stratified, SampleTargets::PixelCentres, order}, batch,
                      coords, targets);
        uint32_t mismatches = 0;
        for (uint32_t i = 0; i < batch; ++i) {
            const int px = (int)std::lround(coords[2 * i] * image.width - 0.5f);
            const int py = (int)std::lround(coords[2 * i + 1] * image.height - 0.5f);
            ASSERT_TRUE(px >= 0 && px < image.width && py >= 0 && py < image.height) << i;
            if (i < side * side) {
                int ex = -1, ey = -1;
                expected_stratified_pixel(i, side, order, image.width, image.height, ex, ey);
                if (px != ex || py != ey) ++mismatches;
            }
            for (int c = 0; c < 4; ++c) ASSERT_EQ(targets[(size_t)i * 4 + c], image.at(px, py, c)) << i;
        }
        EXPECT_EQ(mismatches, 0u);
    }
}

TEST(CudaBackend, StartsFromTheCpuInitialisation) {
    REQUIRE_DEVICE();
    const json config = image_config();
    ImageTrainingData data(astronaut_crop(64));
    CudaBackend gpu(config, data, 7);
    CpuBackend cpu(config, data, 7);
    EXPECT_EQ(gpu.params(), cpu.save_state().params);
    EXPECT_EQ(gpu.n_encoding_params(), cpu.n_encoding_params());
    EXPECT_EQ(gpu.named_tensors().size(), cpu.named_tensors().size());
}

TEST(CudaBackend, OneStepLossAndGradientsMatchCpu) {
    REQUIRE_DEVICE();
    const json config = image_config();
    ImageTrainingData data(astronaut_crop(64));
    Matrix<float> in, target;
    random_batch(1u << 14, 3, 11, in, target);

    Trainer<float> cpu(2, 3, config, 5);
    const float cpu_loss = cpu.step(in, target);
    CudaBackend gpu(config, data, 5);
    gpu.set_sparse_encoding_updates(false);  // keep the encoding's gradient readable after the step
    const float gpu_loss = gpu.train_step_on(in, target);
    EXPECT_NEAR(gpu_loss, cpu_loss, 5e-3 * std::abs(cpu_loss)) << "cpu " << cpu_loss << " gpu " << gpu_loss;

    const std::vector<float> g = gpu.gradients();
    const std::vector<float>& c = cpu.gradients();
    ASSERT_EQ(g.size(), c.size());
    const size_t n_enc = gpu.n_encoding_params();
    const double enc_err = relative_error(g.data(), c.data(), n_enc);
    const double net_err = relative_error(g.data() + n_enc, c.data() + n_enc, c.size() - n_enc);
    std::printf("one step: loss cpu %.6g gpu %.6g; grad rel err encoding %.3g network %.3g\n", cpu_loss, gpu_loss,
                enc_err, net_err);
    EXPECT_LE(net_err, 1e-2);
    // The grid gradient sums fp16-rounded dL/dencoded over thousands of
    // samples per coarse-level row; with random targets those sums cancel,
    // which magnifies the relative error (measured 1.53e-2 on the H200, with
    // the network block at 8.7e-4 and the losses equal to 6 digits).
    EXPECT_LE(enc_err, 2.5e-2);
    double norm = 0;
    for (float x : g) norm += (double)x * x;
    EXPECT_GT(norm, 0);
    EXPECT_EQ(gpu.skipped_steps(), 0u);
}

TEST(CudaBackend, ImageModePsnrMatchesCpu) {
    REQUIRE_DEVICE();
    const json config = image_config();
    const Image image = astronaut_crop(256);
    ImageTrainingData data(image);
    const uint32_t steps = 300, batch = 1u << 14;
    CudaBackend gpu(config, data, 1);
    CpuBackend cpu(config, data, 1);
    for (uint32_t i = 0; i < steps; ++i) {
        gpu.train_step(batch);
        cpu.train_step(batch);
    }
    gpu.synchronize();
    EXPECT_EQ(gpu.step(), cpu.step());
    const double gpu_psnr = psnr_of(gpu, image), cpu_psnr = psnr_of(cpu, image);
    std::printf("image mode, %u steps of %u on a %dx%d crop: PSNR cpu %.2f dB, gpu %.2f dB\n", steps, batch,
                image.width, image.height, cpu_psnr, gpu_psnr);
    EXPECT_GT(cpu_psnr, 20.0);  // both actually learned the image
    EXPECT_GE(gpu_psnr, cpu_psnr - 0.5);
}

TEST(CudaBackend, SnapshotFromGpuRendersTheSameOnCpu) {
    REQUIRE_DEVICE();
    const json config = image_config();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend gpu(config, data, 3);
    for (int i = 0; i < 100; ++i) gpu.train_step(1u << 14);
    const TrainingState state = gpu.save_state();
    CpuBackend cpu(config, data, 99);
    cpu.load_state(state);
    EXPECT_EQ(cpu.step(), gpu.step());
    Image gpu_render, cpu_render;
    psnr_of(gpu, image, &gpu_render);
    psnr_of(cpu, image, &cpu_render);
    ASSERT_EQ(gpu_render.pixels.size(), cpu_render.pixels.size());
    double max_diff = 0, sum_diff = 0;
    for (size_t i = 0; i < gpu_render.pixels.size(); ++i) {
        const double d = std::abs((double)gpu_render.pixels[i] - cpu_render.pixels[i]);
        max_diff = std::max(max_diff, d);
        sum_diff += d;
    }
    const double mean_diff = sum_diff / (double)gpu_render.pixels.size();
    std::printf("snapshot gpu -> cpu: render diff mean %.3g max %.3g\n", mean_diff, max_diff);
    EXPECT_LT(mean_diff, 2e-3);
    EXPECT_LT(max_diff, 5e-2);

    // And back: the CPU's snapshot loads on the GPU.
    CudaBackend gpu2(config, data, 42);
    gpu2.load_state(cpu.save_state());
    EXPECT_EQ(gpu2.params(), state.params);
}

TEST(CudaBackend, OverflowingStepIsSkippedAndScaleHalved) {
    REQUIRE_DEVICE();
    const json config = image_config();
    ImageTrainingData data(astronaut_crop(64));
    Matrix<float> in, target;
    random_batch(4096, 3, 2, in, target);
    CudaBackend gpu(config, data, 4);
    gpu.train_step_on(in, target);  // a clean step first: moments are non-zero
    const TrainingState before = gpu.save_state();

    gpu.set_loss_scale(1e30f);  // dL/dout * scale overflows fp16
    gpu.train_step_on(in, target);
    const std::vector<float> after = gpu.params();
    EXPECT_TRUE(all_finite(after));
    EXPECT_EQ(gpu.skipped_steps(), 1u);
    EXPECT_EQ(gpu.loss_scale(), 0.5e30f);
    // Sparse encoding updates (on for this config): the skipped step's
    // gradient was not consumed by the optimizer, so the backend cleared it.
    EXPECT_TRUE(gpu.sparse_encoding_updates());
    const std::vector<float> g = gpu.gradients();
    for (size_t i = 0; i < gpu.n_encoding_params(); ++i) ASSERT_EQ(g[i], 0.f) << i;
    if (gpu.exact_skip()) {
        const TrainingState s = gpu.save_state();
        EXPECT_EQ(after, before.params);
        ASSERT_EQ(s.optimizer_buffers.size(), before.optimizer_buffers.size());
        for (size_t i = 0; i < s.optimizer_buffers.size(); ++i)
            EXPECT_EQ(s.optimizer_buffers[i].second, before.optimizer_buffers[i].second) << s.optimizer_buffers[i].first;
    } else {
        std::printf("note: no conditional graph on this device; overflow step ran with zero gradients\n");
    }

    gpu.set_loss_scale(128.f);
    gpu.train_step_on(in, target);
    const std::vector<float> next = gpu.params();
    EXPECT_TRUE(all_finite(next));
    EXPECT_NE(next, after);
    EXPECT_EQ(gpu.skipped_steps(), 1u);
}

// The overflow check finds one NaN or infinity wherever it sits: in the
// 16-byte-load bulk, in the scalar tail, at either end, and in a buffer that
// starts off the 16-byte boundary (all scalar loads); a clean buffer never
// sets the flag.
TEST(CudaBackend, NonFiniteFlagFindsEveryPosition) {
    REQUIRE_DEVICE();
    const size_t n = 10007;  // 2501 float4s and a tail of 3
    float* data = nullptr;
    unsigned int* flag = nullptr;
    ASSERT_EQ(cudaMalloc(&data, (n + 1) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&flag, sizeof(unsigned int)), cudaSuccess);
    auto flagged = [&](size_t offset, size_t count, long bad_at, float bad) {
        std::vector<float> host(n + 1, 0.25f);
        if (bad_at >= 0) host[offset + (size_t)bad_at] = bad;
        EXPECT_EQ(cudaMemcpy(data, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        EXPECT_EQ(cudaMemset(flag, 0, sizeof(unsigned int)), cudaSuccess);
        gpu::launch_flag_non_finite(data + offset, count, flag, nullptr);
        unsigned int result = 7;
        EXPECT_EQ(cudaMemcpy(&result, flag, sizeof(result), cudaMemcpyDeviceToHost), cudaSuccess);
        return result;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (size_t offset : {0u, 1u}) {
        EXPECT_EQ(flagged(offset, n, -1, 0.f), 0u) << "clean, offset " << offset;
        for (long at : {0L, 1L, 4L, 5000L, (long)n - 4, (long)n - 3, (long)n - 1}) {
            EXPECT_EQ(flagged(offset, n, at, nan), 1u) << "NaN at " << at << ", offset " << offset;
            EXPECT_EQ(flagged(offset, n, at, -inf), 1u) << "-inf at " << at << ", offset " << offset;
        }
        // Past the end: not looked at.
        EXPECT_EQ(flagged(offset, n - 1, (long)n - 1, nan), 0u) << "offset " << offset;
    }
    cudaFree(data);
    cudaFree(flag);
}

// The CPU twin: NonFiniteSteps.PoisonedBatchIsSkippedAndTrainingGoesOn. A NaN
// target makes dL/dout NaN, which the overflow check catches like an fp16
// overflow: the step is skipped (exactly, with the conditional graph), the
// loss scale halves, and the next clean batch trains.
TEST(CudaBackend, PoisonedBatchIsSkippedAndTrainingGoesOn) {
    REQUIRE_DEVICE();
    const json config = image_config();
    ImageTrainingData data(astronaut_crop(64));
    Matrix<float> in, target;
    random_batch(4096, 3, 9, in, target);
    CudaBackend gpu(config, data, 6);
    gpu.train_step_on(in, target);
    const TrainingState before = gpu.save_state();
    const float scale = gpu.loss_scale();

    Matrix<float> poisoned = target;
    poisoned(17, 2) = std::numeric_limits<float>::quiet_NaN();
    gpu.train_step_on(in, poisoned);
    const std::vector<float> after = gpu.params();
    EXPECT_TRUE(all_finite(after));
    EXPECT_EQ(gpu.skipped_steps(), 1u);
    EXPECT_EQ(gpu.loss_scale(), scale / 2);
    if (gpu.exact_skip()) {
        EXPECT_EQ(after, before.params);
    }
    EXPECT_EQ(gpu.diagnostics().at("skipped_steps").get<uint64_t>(), 1u);

    gpu.train_step_on(in, target);
    EXPECT_TRUE(all_finite(gpu.params()));
    EXPECT_NE(gpu.params(), after);
    EXPECT_EQ(gpu.skipped_steps(), 1u);
}

// Sparse encoding updates (optimizer clears the touched gradient rows and
// writes their fp16 copies) train like the dense path (clear, full update,
// full conversion). The grid's atomics make any two runs differ slightly, and
// Adam (epsilon 1e-15) turns those differences into full steps where a
// gradient is near zero, so after 100 steps sparse vs dense must differ no
// more than dense vs dense does (measured 3.8e-2 norm-wise, PSNR within 0.01 dB).
TEST(CudaBackend, SparseEncodingUpdatesTrainLikeDenseOnes) {
    REQUIRE_DEVICE();
    const json config = image_config();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend sparse(config, data, 3), dense(config, data, 3), dense2(config, data, 3);
    ASSERT_TRUE(sparse.sparse_encoding_updates());
    EXPECT_FALSE(dense.set_sparse_encoding_updates(false));
    EXPECT_FALSE(dense2.set_sparse_encoding_updates(false));
    for (int i = 0; i < 100; ++i) {
        sparse.train_step(1u << 14);
        dense.train_step(1u << 14);
        dense2.train_step(1u << 14);
    }
    const std::vector<float> a = sparse.params(), b = dense.params(), c = dense2.params();
    const double err = relative_error(a.data(), b.data(), a.size());
    const double err_dense = relative_error(c.data(), b.data(), a.size());
    const double psnr_sparse = psnr_of(sparse, image), psnr_dense = psnr_of(dense, image);
    std::printf("100 steps: params rel err sparse vs dense %.3g, dense vs dense %.3g; PSNR %.2f / %.2f dB\n", err,
                err_dense, psnr_sparse, psnr_dense);
    EXPECT_LE(err, 2 * err_dense + 1e-3);
    EXPECT_NEAR(psnr_sparse, psnr_dense, 0.2);
    EXPECT_GT(psnr_dense, 20.0);
    const std::vector<float> g = sparse.gradients();
    for (size_t i = 0; i < sparse.n_encoding_params(); ++i) ASSERT_EQ(g[i], 0.f) << i;
    // Switching back and forth mid-run keeps training consistent.
    EXPECT_FALSE(sparse.set_sparse_encoding_updates(false));
    sparse.train_step(1u << 14);
    EXPECT_TRUE(sparse.set_sparse_encoding_updates(true));
    sparse.train_step(1u << 14);
    EXPECT_GE(psnr_of(sparse, image), psnr_sparse - 0.5);
}

TEST(CudaBackend, UnsupportedWidthNamesTheSupportedSet) {
    REQUIRE_DEVICE();
    json config = image_config();
    config["network"]["otype"] = "FullyFusedMLP";  // forced: no fallback
    config["network"]["n_neurons"] = 48;
    ImageTrainingData data(astronaut_crop(16));
    try {
        CudaBackend gpu(config, data, 0);
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("network.n_neurons"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("16, 32, 64, 128 or 256"), std::string::npos) << e.what();
    }
}

// ---- network.otype: CublasMLP, Auto, hot swap ------------------------------------

TEST(CudaBackend, CublasMlpTrainsImageModeLikeFused) {
    REQUIRE_DEVICE();
    json fused_config = image_config(), cublas_config = image_config();
    fused_config["network"]["otype"] = "FullyFusedMLP";
    cublas_config["network"]["otype"] = "CutlassMLP";  // the alias
    const Image image = astronaut_crop(256);
    ImageTrainingData data(image);
    CudaBackend fused(fused_config, data, 1), cublas(cublas_config, data, 1);
    EXPECT_EQ(fused.mlp_kernel(), "FullyFusedMLP");
    EXPECT_EQ(cublas.mlp_kernel(), "CublasMLP");
    for (int i = 0; i < 300; ++i) {
        fused.train_step(1u << 14);
        cublas.train_step(1u << 14);
    }
    const double fused_psnr = psnr_of(fused, image), cublas_psnr = psnr_of(cublas, image);
    std::printf("image mode, 300 steps: PSNR fused %.2f dB, cublas %.2f dB\n", fused_psnr, cublas_psnr);
    EXPECT_GT(fused_psnr, 20.0);
    EXPECT_NEAR(cublas_psnr, fused_psnr, 0.5);
    EXPECT_EQ(cublas.skipped_steps(), 0u);
}

TEST(CudaBackend, AutoFallsBackToCublasForOtherWidths) {
    REQUIRE_DEVICE();
    json config = image_config();
    config["network"]["otype"] = "Auto";
    config["network"]["n_neurons"] = 48;
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend gpu(config, data, 2);
    EXPECT_EQ(gpu.mlp_kernel(), "CublasMLP");
    const double before = psnr_of(gpu, image);
    for (int i = 0; i < 100; ++i) gpu.train_step(1u << 14);
    EXPECT_EQ(gpu.auto_timing().batch, 0u);  // nothing to choose between
    EXPECT_TRUE(all_finite(gpu.params()));
    EXPECT_GT(psnr_of(gpu, image), before + 3.0);
    EXPECT_THROW(gpu.set_mlp_kernel(gpu::MlpKernel::FullyFused), ConfigError);
}

TEST(CudaBackend, AutoTimesBothKernelsAtTheFirstBatch) {
    REQUIRE_DEVICE();
    json config = image_config();
    config["network"]["otype"] = "auto";  // otype is matched case-insensitively
    ImageTrainingData data(astronaut_crop(64));
    CudaBackend gpu(config, data, 3);
    gpu.train_step(1u << 14);
    const gpu::KernelTiming& t = gpu.auto_timing();
    EXPECT_EQ(t.batch, 1u << 14);
    EXPECT_GT(t.fused_ms, 0.0);
    EXPECT_GT(t.cublas_ms, 0.0);
    EXPECT_EQ(gpu.mlp_kernel(), gpu::mlp_kernel_name(t.faster));
    std::printf("Auto: %s\n", t.summary().c_str());
}

TEST(CudaBackend, HotSwapKeepsTheWeights) {
    REQUIRE_DEVICE();
    json config = image_config();
    config["network"]["otype"] = "FullyFusedMLP";
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend gpu(config, data, 4);
    for (int i = 0; i < 50; ++i) gpu.train_step(1u << 14);
    const std::vector<float> params = gpu.params();
    Image fused_render, cublas_render;
    const double fused_psnr = psnr_of(gpu, image, &fused_render);
    gpu.set_mlp_kernel(gpu::MlpKernel::Cublas);
    EXPECT_EQ(gpu.mlp_kernel(), "CublasMLP");
    EXPECT_EQ(gpu.params(), params);
    const double cublas_psnr = psnr_of(gpu, image, &cublas_render);
    EXPECT_LE(relative_error(cublas_render.pixels.data(), fused_render.pixels.data(), fused_render.pixels.size()), 2e-3);
    EXPECT_NEAR(cublas_psnr, fused_psnr, 0.05);
    for (int i = 0; i < 50; ++i) gpu.train_step(1u << 14);  // training continues on the other kernel
    EXPECT_GT(psnr_of(gpu, image), fused_psnr);
    gpu.set_mlp_kernel(gpu::MlpKernel::FullyFused);
    EXPECT_EQ(gpu.mlp_kernel(), "FullyFusedMLP");
    gpu.train_step(1u << 14);
    EXPECT_EQ(gpu.skipped_steps(), 0u);
}

// A depth change on the device (the GUI's live reshape): the new hidden layer
// starts as the identity (model/param_transfer.h), exact in fp16 too, so the
// deeper model's first loss is the old model's on the same batch (batches are
// keyed by seed and step).
TEST(CudaBackend, DeeperNetworkKeepsTheLoss) {
    REQUIRE_DEVICE();
    const json config = image_config();
    json deeper = config;
    deeper["network"]["n_hidden_layers"] = config["network"]["n_hidden_layers"].get<int>() + 1;
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend trained(config, data, 4);
    for (int i = 0; i < 50; ++i) trained.train_step(1u << 14);
    const std::vector<float> params = trained.params();
    const std::vector<NamedTensor> tensors = trained.named_tensors();
    CudaBackend same(config, data, 9), deep(deeper, data, 9);
    same.set_params(params);
    std::vector<float> carried = deep.params();
    const TransferReport report =
        transfer_params(ParamSource{config, tensors, params}, deeper, deep.named_tensors(), carried, NewInputs::Zero);
    ASSERT_TRUE(report.function_preserved) << report.why_not;
    EXPECT_EQ(report.layers_inserted, 1u);
    deep.set_params(carried);
    const float loss_same = same.train_step(1u << 14), loss_deep = deep.train_step(1u << 14);
    EXPECT_NEAR(loss_deep, loss_same, 1e-5 * loss_same);
}

// ---- the fused training step (FusedMlp::train_step in run_step) ----------------

json fused_step_config(const char* loss) {
    json c = image_config();
    c["network"]["otype"] = "FullyFusedMLP";
    c["loss"] = json{{"otype", loss}};
    return c;
}

TEST(CudaBackend, FusedStepWhereNetworkAndLossAllow) {
    REQUIRE_DEVICE();
    ImageTrainingData data(astronaut_crop(64));
    for (const char* loss : {"L2", "L1", "RelativeL2"}) {
        CudaBackend gpu(fused_step_config(loss), data, 1);
        EXPECT_TRUE(gpu.fused_step_active()) << loss;
        EXPECT_NE(gpu.describe().find("fused training step"), std::string::npos) << gpu.describe();
        gpu.set_fused_step(false);
        EXPECT_FALSE(gpu.fused_step_active()) << loss;
        EXPECT_EQ(gpu.describe().find("fused training step"), std::string::npos) << gpu.describe();
    }
    for (const char* loss : {"RelativeL1", "RelativeL2Luminance", "MAPE", "Huber"}) {
        CudaBackend gpu(fused_step_config(loss), data, 1);
        EXPECT_FALSE(gpu.fused_step_active()) << loss;
    }
    json cublas = fused_step_config("RelativeL2");
    cublas["network"]["otype"] = "CublasMLP";
    EXPECT_FALSE(CudaBackend(cublas, data, 1).fused_step_active());
    bool with_env = true;
    {
        test::ScopedEnv unfused("FUSEDNGP_UNFUSED_STEP", "1");
        with_env = CudaBackend(fused_step_config("L2"), data, 1).fused_step_active();
    }
    EXPECT_FALSE(with_env);
}

// The fused step computes what forward + GpuLoss + backward compute: the same
// loss (the training kernel's outputs instead of the inference kernel's: equal
// up to fp32 rounding) and gradients after one step, and after 50 steps
// parameters that differ from the unfused path's no more than two unfused
// runs differ from each other (the grid's atomics, magnified by Adam).
TEST(CudaBackend, FusedStepTrainsLikeTheUnfusedPath) {
    REQUIRE_DEVICE();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    Matrix<float> in, target;
    random_batch(1u << 14, 3, 21, in, target);
    for (const char* loss : {"L2", "L1", "RelativeL2"}) {
        const json config = fused_step_config(loss);
        CudaBackend fused(config, data, 5), unfused(config, data, 5), unfused2(config, data, 5);
        unfused.set_fused_step(false);
        unfused2.set_fused_step(false);
        ASSERT_TRUE(fused.fused_step_active());
        for (CudaBackend* b : {&fused, &unfused, &unfused2}) b->set_sparse_encoding_updates(false);
        const float lf = fused.train_step_on(in, target), lu = unfused.train_step_on(in, target);
        unfused2.train_step_on(in, target);
        EXPECT_NEAR(lf, lu, 1e-4 * std::abs(lu)) << loss;
        const std::vector<float> gf = fused.gradients(), gu = unfused.gradients(), gu2 = unfused2.gradients();
        const size_t n_enc = fused.n_encoding_params();
        const double net_err = relative_error(gf.data() + n_enc, gu.data() + n_enc, gf.size() - n_enc);
        const double enc_err = relative_error(gf.data(), gu.data(), n_enc);
        const double enc_err_uu = relative_error(gu2.data(), gu.data(), n_enc);
        std::printf("%s one step: loss fused %.7g unfused %.7g; grad rel err network %.3g encoding %.3g (unfused "
                    "vs unfused %.3g)\n", loss, lf, lu, net_err, enc_err, enc_err_uu);
        EXPECT_LE(net_err, 1e-3) << loss;
        EXPECT_LE(enc_err, 2 * enc_err_uu + 1e-3) << loss;

        // Under racecheck every launch grows the tool's host memory: 459 steps
        // went past 64 GB and the out-of-memory killer ended the run (H200,
        // c53b0d1), so scripts/gpu-check's sanitizer runs
        // (FUSEDNGP_TEST_UNDER_SANITIZER=1) take 10 steps per loss.
        const int steps = env_flag_set("FUSEDNGP_TEST_UNDER_SANITIZER") ? 10 : 50;
        for (int i = 0; i < steps; ++i) {
            fused.train_step(1u << 14);
            unfused.train_step(1u << 14);
            unfused2.train_step(1u << 14);
        }
        const float loss_f = fused.synchronize(), loss_u = unfused.synchronize(), loss_u2 = unfused2.synchronize();
        const std::vector<float> a = fused.params(), b = unfused.params(), c = unfused2.params();
        const double err = relative_error(a.data(), b.data(), a.size());
        const double err_uu = relative_error(c.data(), b.data(), a.size());
        const double psnr_f = psnr_of(fused, image), psnr_u = psnr_of(unfused, image);
        std::printf("%s %d steps: loss fused %.5g unfused %.5g / %.5g; params rel err fused vs unfused %.3g, "
                    "unfused vs unfused %.3g; PSNR %.2f / %.2f dB\n", loss, steps, loss_f, loss_u, loss_u2, err, err_uu,
                    psnr_f, psnr_u);
        // err_uu is one draw of the atomic-order noise that Adam magnifies.
        // With the tiled sample order it is bimodal on the H200 (L2: 0.0035
        // or 0.014 in 8 runs, for either pair; RelativeL2 fused vs unfused
        // 0.0077-0.0083, its loss formula rounding apart from GpuLoss's,
        // against 0.0026-0.0043), so a multiple of one draw fails on an
        // unlucky one (2x did: 0.00806 against 0.00304): 4x or a 0.02 floor.
        // A wrong fused gradient moves the parameters far more, and the
        // one-step gradient checks above hold the kernel to the math.
        EXPECT_LE(err, std::max(4 * err_uu, 0.02)) << loss;
        // The last batch's loss is one draw of a noisy number: with L1, two
        // runs of the same unfused path ended at 0.0056 and 0.0103 on the
        // H200 (the grid's atomic order alone), and a bound from that spread
        // failed when two unfused runs happened to agree (0.0112 / 0.0113,
        // fused 0.0084). It only shows that training went as far; the
        // parameters (above) and the PSNR (below) are the equivalence checks.
        EXPECT_LT(loss_f, 3 * loss_u) << loss;
        EXPECT_GT(loss_f, loss_u / 3) << loss;
        EXPECT_NEAR(psnr_f, psnr_u, 0.2) << loss;
        EXPECT_EQ(fused.skipped_steps(), 0u);
        EXPECT_EQ(unfused.skipped_steps(), 0u);
    }
}

// An overflowing step on the fused path (the flag raised by the training
// kernel itself for dL/dencoded) is skipped and the scale halved, as on the
// unfused path (OverflowingStepIsSkippedAndScaleHalved).
TEST(CudaBackend, FusedStepOverflowIsSkipped) {
    REQUIRE_DEVICE();
    ImageTrainingData data(astronaut_crop(64));
    Matrix<float> in, target;
    random_batch(4096, 3, 2, in, target);
    for (const char* loss : {"RelativeL2", "L1"}) {
        CudaBackend gpu(fused_step_config(loss), data, 4);
        ASSERT_TRUE(gpu.fused_step_active());
        const float clean_loss = gpu.train_step_on(in, target);
        EXPECT_TRUE(std::isfinite(clean_loss));
        const TrainingState before = gpu.save_state();
        gpu.set_loss_scale(1e30f);
        const float overflow_loss = gpu.train_step_on(in, target);
        EXPECT_TRUE(std::isfinite(overflow_loss)) << "the loss value does not depend on the scale";
        const std::vector<float> after = gpu.params();
        EXPECT_TRUE(all_finite(after));
        EXPECT_EQ(gpu.skipped_steps(), 1u) << loss;
        EXPECT_EQ(gpu.loss_scale(), 0.5e30f);
        if (gpu.exact_skip()) {
            EXPECT_EQ(after, before.params) << loss;
        }
        gpu.set_loss_scale(128.f);
        gpu.train_step_on(in, target);
        const std::vector<float> next = gpu.params();
        EXPECT_TRUE(all_finite(next));
        EXPECT_NE(next, after);
        EXPECT_EQ(gpu.skipped_steps(), 1u) << loss;
    }
}

TEST(CudaBackend, DefaultsToCudaWithADevice) {
    REQUIRE_DEVICE();
    EXPECT_EQ(available_backends().front(), "cuda");
    EXPECT_NE(cuda_device_description().find("sm_"), std::string::npos);
}

// Runs everywhere: with the device hidden, --backend cuda is a clear error (exit 2).
TEST(CudaBackend, NoDeviceMessage) {
    const auto dir = test::make_temp_dir("nodevice");
    const std::string log = (dir / "log.txt").string();
    const std::string cmd = "CUDA_VISIBLE_DEVICES= " + std::string(FUSEDNGP_BINARY) + " train --backend cuda --steps 1 --out " +
                            (dir / "run").string() + " >" + log + " 2>&1 </dev/null";
    const int status = std::system(cmd.c_str());
    test::CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = test::read_text(log);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("--backend cpu"), std::string::npos) << r.out << r.err;
}

// A batch whose activations cannot fit the device (2^30 samples: 128 GiB per
// 64-wide fp16 activation buffer) is a one-line error with exit 2 and no output.
TEST(CudaBackend, BatchTooLargeForTheDeviceIsOneLineAndExitTwo) {
    REQUIRE_DEVICE();
    const auto dir = test::make_temp_dir("device_oom");
    const test::CliResult r = test::run_cli("train --backend cuda --batch 1073741824 --steps 1 --eval-every 0 --out " +
                                            (dir / "run").string());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("out of GPU memory"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "run") && !std::filesystem::is_empty(dir / "run"));
}

// ---- the update graph: fused Adam update against the launches before it ----------
// (CudaBackend::set_fused_update; docs/CUDA_BACKEND.md, "Update graph")

json image_fit_config() { return load_config_file(std::string(FUSEDNGP_SOURCE_DIR) + "/configs/examples/image_fit_tcnn.json"); }

using test::same_bits;

// The FusedMlp's master and fp16 fragment buffers, downloaded.
struct MlpBuffers {
    std::vector<float> master;
    std::vector<uint16_t> w_fwd, w_bwd;
};

MlpBuffers mlp_buffers(CudaBackend& backend) {
    backend.synchronize();
    auto& fused = dynamic_cast<gpu::FusedMlp&>(backend.mlp());
    const gpu::MlpFragmentTargets t = fused.fragment_targets();
    const size_t padded = gpu::n_params_padded(t.shape);
    MlpBuffers b;
    b.master.resize(fused.n_params());
    b.w_fwd.resize(padded);
    b.w_bwd.resize(padded);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(b.master.data(), t.master, b.master.size() * sizeof(float), cudaMemcpyDeviceToHost));
    FUSEDNGP_GPU_CHECK(cudaMemcpy(b.w_fwd.data(), t.w_fwd, padded * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    FUSEDNGP_GPU_CHECK(cudaMemcpy(b.w_bwd.data(), t.w_bwd, padded * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    return b;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
}

size_t count_containing(const std::vector<std::string>& lines, const std::string& what) {
    size_t n = 0;
    for (const std::string& l : lines) n += l.find(what) != std::string::npos;
    return n;
}

// What the update runs, per path, for the image-fit config (and the shipped
// EMA stack): printed for the docs' node count, checked for the shape.
TEST(CudaBackend, UpdateGraphNodes) {
    REQUIRE_DEVICE();
    ImageTrainingData data(astronaut_crop(64));
    for (const bool ema : {false, true}) {
        json config = image_fit_config();
        if (ema) config["optimizer"] = image_config()["optimizer"];
        CudaBackend gpu(config, data, 1);
        ASSERT_TRUE(gpu.sparse_encoding_updates());
        if (!gpu.exact_skip()) GTEST_SKIP() << "no conditional graph on this device";
        gpu.set_fused_update(false);
        EXPECT_FALSE(gpu.mlp_refresh_in_update());
        const std::vector<std::string> before = gpu.update_graph_nodes();
        gpu.set_fused_update(true);
        EXPECT_TRUE(gpu.mlp_refresh_in_update());
        const std::vector<std::string> after = gpu.update_graph_nodes();
        std::printf("update graph, %s, per-group launches (%zu lines):\n%s", ema ? "EMA stack" : "image-fit Adam",
                    before.size(), joined(before).c_str());
        std::printf("update graph, %s, fused update (%zu lines):\n%s", ema ? "EMA stack" : "image-fit Adam",
                    after.size(), joined(after).c_str());
        // Outer: the condition kernel and the IF node; body; the skip's clear after.
        auto body_lines = [](const std::vector<std::string>& lines) {
            return (size_t)std::count_if(lines.begin(), lines.end(),
                                         [](const std::string& l) { return l.rfind("  ", 0) == 0; });
        };
        const size_t body_before = body_lines(before), body_after = body_lines(after);
        // begin_step, update per group (encoding, network), MLP copy, conversion (+ EMA's two).
        EXPECT_EQ(body_before, ema ? 7u : 5u) << joined(before);
        EXPECT_EQ(body_after, ema ? 3u : 1u) << joined(after);
        EXPECT_EQ(count_containing(after, "memcpy"), 0u) << joined(after);
        EXPECT_EQ(count_containing(before, "  memcpy"), 1u) << joined(before);
        EXPECT_EQ(count_containing(after, "conditional"), 1u) << joined(after);
        EXPECT_EQ(after.size(), body_after + 3) << "condition kernel, IF node, zero_if_flagged: " << joined(after);
        if (count_containing(after, "set_update_condition") == 1) {  // names known for captured nodes
            EXPECT_EQ(count_containing(after, "adam_fused_update"), 1u) << joined(after);
            EXPECT_EQ(count_containing(after, "convert_weights"), 0u) << joined(after);
            EXPECT_EQ(count_containing(before, "convert_weights"), 1u) << joined(before);
            EXPECT_EQ(count_containing(before, "adam_begin_step"), 1u) << joined(before);
        } else {
            std::printf("note: the runtime names no captured kernel; node counts only\n");
        }
    }
    // CublasMLP: the update cannot write its weights; the refresh stays.
    json cublas = image_fit_config();
    cublas["network"]["otype"] = "CublasMLP";
    CudaBackend gpu(cublas, data, 1);
    EXPECT_TRUE(gpu.fused_update());
    EXPECT_FALSE(gpu.mlp_refresh_in_update());
}

// The fused update against the launches before it, end to end: two backends
// from the same seed, one per path, the same batches, an overflowing
// (skipped) step in the middle: parameters, optimizer state, the encoding's
// fp16 tables (through the inference output) and the MLP's master and fragment
// buffers bit for bit after every step. Batches of 2 samples: a grid row then
// sums at most two contributions, whose order cannot change the sum, so the
// gradients are the same on both backends (larger batches differ by the
// grid's atomics order, which is not what is tested here).
TEST(CudaBackend, FusedUpdateMatchesPerGroupLaunchesBitForBit) {
    REQUIRE_DEVICE();
    ImageTrainingData data(astronaut_crop(64));
    json ema = image_fit_config();
    ema["optimizer"] = image_config()["optimizer"];
    ema["optimizer"]["nested"]["decay_start"] = 2;
    ema["optimizer"]["nested"]["decay_interval"] = 2;
    json composite = image_fit_config();
    composite["optimizer"] = json{{"otype", "Composite"},
                                  {"groups",
                                   {{"encoding", image_fit_config()["optimizer"]},
                                    {"network", {{"otype", "Adam"}, {"learning_rate", 1e-3}, {"l2_reg", 1e-6}}}}}};
    Matrix<float> probe, unused;
    random_batch(1000, 3, 777, probe, unused);
    for (const json& config : {image_fit_config(), ema, composite}) {
        SCOPED_TRACE(config["optimizer"].dump());
        CudaBackend fused(config, data, 3), per_group(config, data, 3);
        fused.set_fused_update(true);
        per_group.set_fused_update(false);
        ASSERT_TRUE(fused.mlp_refresh_in_update());
        ASSERT_FALSE(per_group.mlp_refresh_in_update());
        for (uint64_t s = 1; s <= 8; ++s) {
            SCOPED_TRACE("step " + std::to_string(s));
            Matrix<float> in, target;
            random_batch(2, 3, 100 + s, in, target);
            const bool overflow = s == 4;
            for (CudaBackend* b : {&fused, &per_group}) {
                if (overflow) b->set_loss_scale(1e30f);
                b->train_step_on(in, target);
                if (overflow) b->set_loss_scale(128.f);
            }
            EXPECT_EQ(fused.skipped_steps(), overflow || s > 4 ? 1u : 0u);
            EXPECT_EQ(per_group.skipped_steps(), fused.skipped_steps());
            ASSERT_TRUE(same_bits(fused.params(), per_group.params())) << "params";
            const TrainingState a = fused.save_state(), b = per_group.save_state();
            ASSERT_EQ(a.optimizer_buffers.size(), b.optimizer_buffers.size());
            for (size_t i = 0; i < a.optimizer_buffers.size(); ++i)
                EXPECT_TRUE(same_bits(a.optimizer_buffers[i].second, b.optimizer_buffers[i].second))
                    << a.optimizer_buffers[i].first;
            const MlpBuffers ma = mlp_buffers(fused), mb = mlp_buffers(per_group);
            EXPECT_TRUE(same_bits(ma.master, mb.master)) << "MLP master";
            EXPECT_TRUE(same_bits(ma.w_fwd, mb.w_fwd)) << "w_fwd";
            EXPECT_TRUE(same_bits(ma.w_bwd, mb.w_bwd)) << "w_bwd";
            EXPECT_TRUE(same_bits(ma.master, std::vector<float>(a.params.end() - (long)ma.master.size(), a.params.end())))
                << "the MLP's master is the network block";
        }
        // The fp16 grid tables and fragments the steps left, through inference
        // (which reads both): equal outputs.
        Matrix<float> out_a, out_b;
        fused.inference(probe, out_a);
        per_group.inference(probe, out_b);
        EXPECT_EQ(std::memcmp(out_a.data(), out_b.data(), (size_t)out_a.size() * sizeof(float)), 0) << "inference";
    }
}

// The fused update trains the image like the launches before it (larger
// batches: equal up to the grid atomics' order, so PSNR, not bits).
TEST(CudaBackend, FusedUpdateTrainsLikePerGroupLaunches) {
    REQUIRE_DEVICE();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    double psnr[2] = {0, 0};
    for (const bool fused : {true, false}) {
        CudaBackend gpu(image_fit_config(), data, 5);
        gpu.set_fused_update(fused);
        for (int s = 0; s < 200; ++s) gpu.train_step(1 << 14);
        gpu.synchronize();
        psnr[fused ? 0 : 1] = psnr_of(gpu, image);
    }
    std::printf("PSNR after 200 steps: fused update %.3f dB, per-group launches %.3f dB\n", psnr[0], psnr[1]);
    EXPECT_NEAR(psnr[0], psnr[1], 0.3);
}

// FUSEDNGP_NO_CONDITIONAL_GRAPH=1 (scripts/gpu-check sets it for the
// sanitizer runs, which cannot run a conditional graph): no update graph,
// the fallback's plain launches of the same kernels. It trains like the graph
// path, and an overflowing step still leaves finite parameters and halves
// the scale (updated with zero gradients instead of skipped).
TEST(CudaBackend, WithoutConditionalGraphTrainsOnPlainLaunches) {
    REQUIRE_DEVICE();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    test::ScopedEnv no_conditional("FUSEDNGP_NO_CONDITIONAL_GRAPH", "1");
    CudaBackend plain(image_fit_config(), data, 5);
    ASSERT_TRUE(no_conditional.set(nullptr));
    CudaBackend graph(image_fit_config(), data, 5);
    EXPECT_FALSE(plain.exact_skip());
    EXPECT_TRUE(plain.update_graph_nodes().empty());
    EXPECT_EQ(plain.mlp_refresh_in_update(), graph.mlp_refresh_in_update());
    for (int s = 0; s < 200; ++s) {
        plain.train_step(1 << 14);
        graph.train_step(1 << 14);
    }
    plain.synchronize();
    graph.synchronize();
    const double psnr_plain = psnr_of(plain, image), psnr_graph = psnr_of(graph, image);
    std::printf("PSNR after 200 steps: plain launches %.3f dB, update graph %.3f dB\n", psnr_plain, psnr_graph);
    EXPECT_NEAR(psnr_plain, psnr_graph, 0.3);

    Matrix<float> in, target;
    random_batch(4096, 3, 2, in, target);
    plain.set_loss_scale(1e30f);  // dL/dout * scale overflows fp16
    plain.train_step_on(in, target);
    EXPECT_TRUE(all_finite(plain.params()));
    EXPECT_EQ(plain.skipped_steps(), 1u);
    EXPECT_EQ(plain.loss_scale(), 0.5e30f);
}

// The app's view renders from a display copy on its own stream while training
// goes on: a leased copy computes the model as it was published, whatever the
// training stream does meanwhile, and the next lease is the newest publish.
TEST(CudaBackend, DisplayCopyKeepsThePublishedModelWhileTrainingGoesOn) {
    REQUIRE_DEVICE();
    const json config = image_config();
    const Image image = astronaut_crop(128);
    ImageTrainingData data(image);
    CudaBackend gpu(config, data, 5);
    EXPECT_FALSE(gpu.display_lease()) << "nothing published yet";

    Matrix<float> in, target, expected;
    random_batch(4096, 3, 11, in, target);
    const uint32_t n = (uint32_t)in.rows(), n_out = 3;
    float *d_in = nullptr, *d_out = nullptr;
    ASSERT_EQ(cudaMalloc(&d_in, sizeof(float) * n * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, sizeof(float) * n * n_out), cudaSuccess);
    std::vector<float> host_in((size_t)n * 2);
    for (uint32_t i = 0; i < n; ++i)
        for (int c = 0; c < 2; ++c) host_in[(size_t)i * 2 + c] = in(i, c);
    ASSERT_EQ(cudaMemcpy(d_in, host_in.data(), host_in.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    cudaStream_t view = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&view, cudaStreamNonBlocking), cudaSuccess);
    auto through = [&](const DisplayCopies::Lease& lease) {
        lease.inference(d_in, n, d_out, view);
        std::vector<float> out((size_t)n * n_out);
        EXPECT_EQ(cudaMemcpyAsync(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost, view),
                  cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(view), cudaSuccess);
        return out;
    };
    auto backend_now = [&] {
        Matrix<float> out;
        gpu.inference(in, out);
        std::vector<float> v((size_t)n * n_out);
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t c = 0; c < n_out; ++c) v[(size_t)i * n_out + c] = out(i, c);
        return v;
    };

    for (int i = 0; i < 20; ++i) gpu.train_step(1u << 14);
    gpu.publish_display();
    gpu.synchronize();
    const std::vector<float> published = backend_now();
    DisplayCopies::Lease lease = gpu.display_lease();
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease.version(), 1u);
    const std::vector<float> first = through(lease);
    EXPECT_LT(relative_error(first.data(), published.data(), first.size()), 1e-6);

    // Training and publishing go on while the lease is held (more publishes
    // than there are copies): the leased copy never changes.
    for (int i = 0; i < 10; ++i) {
        gpu.train_step(1u << 14);
        gpu.publish_display();
        EXPECT_EQ(through(lease), first) << "after publish " << i + 2;
    }
    EXPECT_THROW(gpu.display_lease(), std::logic_error);
    lease.release();

    gpu.synchronize();
    const std::vector<float> latest = backend_now();
    DisplayCopies::Lease newer = gpu.display_lease();
    ASSERT_TRUE(newer);
    EXPECT_EQ(newer.version(), 11u);
    const std::vector<float> second = through(newer);
    EXPECT_LT(relative_error(second.data(), latest.data(), second.size()), 1e-6);
    EXPECT_GT(relative_error(second.data(), first.data(), second.size()), 1e-4) << "training moved the model";
    newer.release();
    cudaStreamDestroy(view);
    cudaFree(d_in);
    cudaFree(d_out);
}

} // namespace
} // namespace fusedngp
