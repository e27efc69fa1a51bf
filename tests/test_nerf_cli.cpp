// The NeRF mode end to end through the CLI on the CPU backend: train on the
// synthetic scene, check the summary, the test PSNR and the renders; and the
// bad inputs, each a one-line error with exit 2 and no output directory.
#include "backends/backend.h"
#include "cli_runner.h"
#include "nerf_persist_scene.h"
#include "nerf/synthetic_scene.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <vector>

namespace fs = std::filesystem;
using fusedngp::test::expect_cli_input_error;
using fusedngp::test::make_temp_dir;
using fusedngp::test::read_text;
using fusedngp::test::run_cli;
using fusedngp::test::expect_saved_after_signals;
using fusedngp::test::write_text_file;

namespace {

// Small enough for ~150 steps in a few seconds on one core; sampling as the
// trainer's own fit test (cone angle 1/128, 128 samples, no grid warm-up):
// the persistence tests' config with plain Adam instead of EMA over it.
std::string small_config() {
    nlohmann::json c = nlohmann::json::parse(fusedngp::test::kNerfPersistConfig);
    c["optimizer"] = c["optimizer"]["nested"];
    return c.dump(2);
}

struct Scene {
    fs::path dir, config;
};

const Scene& scene() {
    static const Scene s = [] {
        Scene r;
        r.dir = make_temp_dir("nerf_cli_scene");
        fusedngp::write_synthetic_dataset(r.dir.string(), fusedngp::default_synthetic_scene(), 12, 2, 24, 24, 5);
        r.config = r.dir / "small.json";
        write_text_file(r.config, small_config());
        return r;
    }();
    return s;
}

std::string train_args(const std::string& data, const fs::path& out, const std::string& backend = "cpu") {
    return "train --data " + data + " --backend " + backend + " --config " + scene().config.string() +
           " --steps 150 --batch 512 --eval-every 0 --out " + out.string();
}

} // namespace

TEST(NerfCli, TrainsTheSyntheticSceneToTheStatedTestPsnr) {
    const fs::path out = make_temp_dir("nerf_cli_out") / "out";
    auto r = run_cli(train_args(scene().dir.string(), out));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::printf("%s", r.out.c_str());
    EXPECT_NE(r.out.find("12 frames 24x24, 2 test frames"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("density +"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("snapshot.fusedngp"), std::string::npos) << r.out;
    nlohmann::json s = nlohmann::json::parse(read_text((out / "summary.json").string()));
    EXPECT_EQ(s["mode"], "nerf");
    EXPECT_EQ(s["backend"], "cpu");
    EXPECT_EQ(s["steps"], 150);
    EXPECT_EQ(s["stop_reason"], "steps");
    EXPECT_EQ(s["rays_per_step"], 512);
    EXPECT_GT(s["samples_per_step"].get<double>(), 512.0);
    EXPECT_LT(s["samples_per_step"].get<double>(), 512.0 * 128);
    EXPECT_GT(s["seconds"].get<double>(), 0.0);
    EXPECT_GT(s["steps_per_second"].get<double>(), 0.0);
    EXPECT_TRUE(std::isfinite(s["loss"].get<double>()));
    EXPECT_EQ(s["config"]["encoding"]["n_levels"], 8);
    EXPECT_EQ(s["test"]["frames"], 2);
    ASSERT_EQ(s["psnr_history"].size(), 1u);  // --eval-every 0: the final evaluation only
    EXPECT_EQ(s["psnr_history"][0][0], 150);
    EXPECT_EQ(s["psnr_history"][0][2], s["test_psnr"]);
    // Seen: 24.2 dB (an untrained model is ~10 dB): a convergence check with margin.
    EXPECT_GT(s["test_psnr"].get<double>(), 20.0);
    // SSIM of the same final renders: well above an untrained model's, below a perfect 1.
    EXPECT_GT(s["test_ssim"].get<double>(), 0.5);
    EXPECT_LT(s["test_ssim"].get<double>(), 1.0);
    EXPECT_TRUE(fs::exists(out / "test_000.png"));
    EXPECT_TRUE(fs::exists(out / "test_001.png"));
    EXPECT_FALSE(fs::exists(out / "test_002.png"));
    EXPECT_TRUE(fs::exists(out / "snapshot.fusedngp"));
}

TEST(NerfCli, WithoutATestSplitRendersTheFirstTrainView) {
    const fs::path out = make_temp_dir("nerf_cli_notest") / "out";
    // Only the train split's file: its _test sibling is picked up, so use a copy under another name.
    const fs::path only = scene().dir / "transforms.json";
    fs::copy_file(scene().dir / "transforms_train.json", only, fs::copy_options::overwrite_existing);
    auto r = run_cli("train --data " + only.string() + " --config " + scene().config.string() +
                     " --steps 3 --batch 64 --eval-every 0 --background 0,0,0 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    nlohmann::json s = nlohmann::json::parse(read_text((out / "summary.json").string()));
    EXPECT_TRUE(s["test"].is_null());
    EXPECT_TRUE(s.contains("train_psnr"));
    EXPECT_TRUE(s.contains("train_ssim"));
    EXPECT_FALSE(s.contains("test_psnr"));
    EXPECT_EQ(s["background"], nlohmann::json::array({0.0, 0.0, 0.0}));
    EXPECT_TRUE(fs::exists(out / "render.png"));
}

TEST(NerfCli, BadInputsAreOneLineErrorsWithNoOutput) {
    const fs::path dir = make_temp_dir("nerf_cli_bad");
    const fs::path out = dir / "out";
    fs::create_directories(dir / "empty_scene");
    expect_cli_input_error(train_args((dir / "empty_scene").string(), out), out, "transforms");
    write_text_file(dir / "broken.json", "{\"frames\": [");
    expect_cli_input_error(train_args((dir / "broken.json").string(), out), out, "broken.json");
    if (fusedngp::available_backends().front() != "cuda")  // no device: --backend cuda is a clear error
        expect_cli_input_error(train_args(scene().dir.string(), out, "cuda"), out, "--backend cuda");
    expect_cli_input_error(train_args(scene().dir.string(), out) + " --test " + (dir / "missing.json").string(), out,
                       "missing.json");
    expect_cli_input_error(train_args(scene().dir.string(), out) + " --background pink", out, "--background");
}

// Signals stop a NeRF run cleanly with everything saved: a burst of SIGINTs
// is one request, and SIGTERM saves as SIGINT does.
TEST(NerfCli, SignalsStopTrainingWithEverythingSaved) {
    for (const std::vector<int>& signals : {std::vector<int>{SIGINT, SIGINT, SIGINT}, std::vector<int>{SIGTERM, SIGINT}}) {
        const fs::path out = make_temp_dir("nerf_cli_signals") / "out";
        const auto summary = expect_saved_after_signals(
            "train --data " + scene().dir.string() + " --backend cpu --config " + scene().config.string() +
                " --seconds 120 --batch 128 --log-every 1 --eval-every 0 --out " + out.string(),
            out, "test_000.png", signals);
        EXPECT_GT(summary.value("steps", 0), 0);
        EXPECT_TRUE(summary.contains("test_psnr") && summary["test_psnr"].is_number()) << summary.dump();
    }
}
