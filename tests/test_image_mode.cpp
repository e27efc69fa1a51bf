// Image mode on the CPU backend: training fits a real image, and training
// resumed from a snapshot file continues bit-identically.
#include "backends/cpu_backend.h"
#include "cli_runner.h"
#include "io/image.h"
#include "io/metrics.h"
#include "modes/image_mode.h"
#include "persist/snapshot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace fusedngp;
namespace fs = std::filesystem;

namespace {

Image bundled_image() { return load_image(std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png"); }

// The face region of the astronaut: real detail, small enough for CI.
Image crop(const Image& src, int x0, int y0, int w, int h) {
    Image out = make_image(w, h, src.channels, src.color_space, src.path);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < src.channels; ++c) out.at(x, y, c) = src.at(x0 + x, y0 + y, c);
    return out;
}

json small_config(const json& optimizer) {
    return json{{"loss", {{"otype", "L2"}}},
                {"optimizer", optimizer},
                {"encoding", {{"otype", "HashGrid"}, {"n_levels", 8}, {"n_features_per_level", 2},
                              {"log2_hashmap_size", 14}, {"base_resolution", 8}, {"per_level_scale", 1.5}}},
                {"network", {{"otype", "FullyFusedMLP"}, {"n_neurons", 32}, {"n_hidden_layers", 2}}}};
}

} // namespace

// Hash grid + MLP + Adam on a 128x128 crop of a real photo: within 300 steps
// the loss falls by at least 20x and the render reaches 24 dB PSNR.
TEST(ImageFit, HashGridMlpAdamFitsRealImageCrop) {
    Image image = crop(bundled_image(), 160, 60, 128, 128);
    ImageTrainingData data(image);
    json config = small_config({{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"epsilon", 1e-15}});
    CpuBackend backend(config, data, 7);
    float first = backend.train_step(4096);
    float last = 0;
    for (int i = 1; i < 300; ++i) last = backend.train_step(4096);
    InferenceFn infer = [&](const Matrix<float>& in, Matrix<float>& out) { backend.inference(in, out); };
    double quality = evaluate_image(infer, image, false).psnr;
    std::printf("fit: loss %.4g -> %.4g (%.1fx), PSNR %.2f dB\n", first, last, first / last, quality);
    EXPECT_GT(first / last, 20.0f);
    EXPECT_GT(quality, 24.0);
}

// Train 40 steps in one go, versus 20 steps, snapshot to a file, load into a
// fresh backend, 20 more: parameters and all optimizer state must match bit
// for bit. The optimizer stack covers every stateful wrapper, and the decay
// starts inside the second half.
TEST(ImageResume, SnapshotResumeIsBitIdentical) {
    Image image = crop(bundled_image(), 100, 100, 64, 64);
    ImageTrainingData data(image);
    json adam = {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta2", 0.99}, {"epsilon", 1e-15}};
    json config = small_config({{"otype", "EMA"}, {"decay", 0.95},
                                {"nested", {{"otype", "ExponentialDecay"}, {"decay_start", 25}, {"decay_interval", 5},
                                            {"decay_base", 0.5}, {"nested", adam}}}});
    const uint64_t seed = 11;
    const uint32_t batch = 512;

    CpuBackend straight(config, data, seed);
    for (int i = 0; i < 40; ++i) straight.train_step(batch);

    auto dir = fusedngp::test::make_temp_dir("resume");
    std::string path = (dir / "snap.fusedngp").string();
    {
        CpuBackend first_half(config, data, seed);
        for (int i = 0; i < 20; ++i) first_half.train_step(batch);
        Snapshot s{config, "image", "crop", 2, 3, image_mode_info(image), "cpu", first_half.save_state()};
        save_snapshot(path, s);
    }
    Snapshot loaded = load_snapshot(path);
    EXPECT_EQ(loaded.config, config);
    CpuBackend resumed(loaded.config, data, 999);  // a different seed: everything must come from the file
    resumed.load_state(loaded.state);
    EXPECT_EQ(resumed.step(), 20u);
    for (int i = 0; i < 20; ++i) resumed.train_step(batch);

    TrainingState a = straight.save_state(), b = resumed.save_state();
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.rng_state, b.rng_state);
    ASSERT_EQ(a.params.size(), b.params.size());
    EXPECT_EQ(0, std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)));
    ASSERT_EQ(a.optimizer_buffers.size(), b.optimizer_buffers.size());
    for (size_t i = 0; i < a.optimizer_buffers.size(); ++i) {
        SCOPED_TRACE(a.optimizer_buffers[i].first);
        EXPECT_EQ(a.optimizer_buffers[i].first, b.optimizer_buffers[i].first);
        EXPECT_EQ(a.optimizer_buffers[i].second, b.optimizer_buffers[i].second);
    }
    // And the resumed run really trained: the state differs from the snapshot.
    EXPECT_NE(0, std::memcmp(loaded.state.params.data(), b.params.data(), b.params.size() * sizeof(float)));
    fs::remove_all(dir);
}

TEST(ImageResume, SnapshotForAnotherModelIsRejected) {
    Image image = crop(bundled_image(), 0, 0, 32, 32);
    ImageTrainingData data(image);
    json config = small_config({{"otype", "Adam"}});
    CpuBackend small(config, data, 1);
    json bigger = config;
    bigger["network"]["n_neurons"] = 64;
    CpuBackend big(bigger, data, 1);
    EXPECT_THROW(big.load_state(small.save_state()), InputError);
}

TEST(ImageRender, TilesDoNotChangeTheResult) {
    // A deterministic "model": colour = (u, v, u*v). Tiled rendering must
    // place every tile's pixels exactly where one big tile would.
    InferenceFn f = [](const Matrix<float>& in, Matrix<float>& out) {
        out.resize(in.rows(), 3);
        for (Eigen::Index i = 0; i < in.rows(); ++i) {
            out(i, 0) = in(i, 0);
            out(i, 1) = in(i, 1);
            out(i, 2) = in(i, 0) * in(i, 1);
        }
    };
    Image whole = render_image(f, 37, 23, 3, ColorSpace::Srgb, 1 << 20);
    Image tiled = render_image(f, 37, 23, 3, ColorSpace::Srgb, 10);
    EXPECT_EQ(whole.pixels, tiled.pixels);
    EXPECT_FLOAT_EQ(whole.at(0, 0, 0), 0.5f / 37);
    EXPECT_FLOAT_EQ(whole.at(36, 22, 1), 22.5f / 23);
}

#ifdef _OPENMP
#include <omp.h>
// The CPU engine parallelises over fixed chunks of samples, so a training run
// gives the same bits with any thread count (snapshots resume anywhere).
TEST(ImageDeterminism, ThreadCountDoesNotChangeResults) {
    Image image = crop(bundled_image(), 200, 200, 64, 64);
    ImageTrainingData data(image);
    json config = small_config({{"otype", "Adam"}, {"learning_rate", 1e-2}});
    auto run = [&](int threads) {
        int saved = omp_get_max_threads();
        omp_set_num_threads(threads);
        CpuBackend b(config, data, 3);
        for (int i = 0; i < 10; ++i) b.train_step(5000);  // several row chunks, one partial
        omp_set_num_threads(saved);
        return b.save_state().params;
    };
    std::vector<float> one = run(1), three = run(3);
    ASSERT_EQ(one.size(), three.size());
    EXPECT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float)));
}
#endif
