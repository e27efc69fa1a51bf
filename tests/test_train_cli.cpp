// The train / render / export commands end to end, and every kind of bad
// input: exit code 2, a message naming the file and the problem, and no
// output left behind.
#include "cli_runner.h"
#include "exr_test_util.h"
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

using namespace fusedngp::test;
namespace fs = std::filesystem;

namespace {

const std::string kImage = std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png";

// A small, fast training config for CLI tests.
const char* kTrainSmallConfig = R"({
  "loss": {"otype": "L2"},
  "optimizer": {"otype": "Adam", "learning_rate": 1e-2},
  "encoding": {"otype": "HashGrid", "n_levels": 4, "n_features_per_level": 2, "log2_hashmap_size": 12,
               "base_resolution": 8, "per_level_scale": 2.0},
  "network": {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}
})";

std::vector<char> read_all(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& p, const std::vector<char>& bytes) {
    std::ofstream f(p, std::ios::binary);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}

// Asserts a failed run: exit 2, one stderr line mentioning each of `needles`.
void expect_bad_input(const CliResult& r, const std::vector<std::string>& needles) {
    EXPECT_EQ(r.exit_code, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "stderr: " << r.err << "\nmissing: " << n;
}

bool dir_is_empty_or_missing(const fs::path& dir) {
    return !fs::exists(dir) || fs::is_empty(dir);
}

class TrainCli : public ::testing::Test {
protected:
    void SetUp() override {
        dir = make_temp_dir("train");
        config = dir / "small.json";
        write_text_file(config, kTrainSmallConfig);
    }
    void TearDown() override { fs::remove_all(dir); }

    CliResult train(const std::string& data, const fs::path& out, const std::string& extra = "") {
        return run_cli("train --data " + data + " --config " + config.string() + " --steps 20 --batch 1024 --out " +
                       out.string() + " " + extra);
    }

    void expect_clean_stop_after(const std::vector<int>& signals);

    fs::path dir;
    fs::path config;
};

} // namespace

TEST_F(TrainCli, TrainWritesSummarySnapshotAndRenderThenRenderAndExportWork) {
    fs::path out = dir / "run";
    CliResult r = train(kImage, out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(fs::exists(out / "summary.json"));
    ASSERT_TRUE(fs::exists(out / "snapshot.fusedngp"));
    ASSERT_TRUE(fs::exists(out / "render.png"));
    auto summary = nlohmann::json::parse(read_text((out / "summary.json").string()));
    for (const char* key : {"mode", "backend", "steps", "seconds", "loss", "psnr", "params"}) {
        EXPECT_TRUE(summary.contains(key)) << key;
    }
    EXPECT_EQ(summary["mode"], "image");
    EXPECT_EQ(summary["backend"], "cpu");
    EXPECT_EQ(summary["steps"], 20);
    EXPECT_GT(summary["psnr"].get<double>(), 10.0);
    // Non-TTY progress: plain lines, no carriage returns.
    EXPECT_EQ(r.out.find('\r'), std::string::npos);

    CliResult e = run_cli("export " + (out / "snapshot.fusedngp").string() + " --out " + (dir / "w.safetensors").string());
    ASSERT_EQ(e.exit_code, 0) << e.err;
    auto weights = fusedngp::read_safetensors((dir / "w.safetensors").string());
    ASSERT_NE(weights.find("encoding.grid.level00"), nullptr);
    ASSERT_NE(weights.find("network.layers.0.weight"), nullptr);
    EXPECT_TRUE(weights.metadata.count("config"));

    CliResult e16 = run_cli("export " + (out / "snapshot.fusedngp").string() + " --out " +
                            (dir / "w16.safetensors").string() + " --dtype f16");
    ASSERT_EQ(e16.exit_code, 0) << e16.err;
    EXPECT_EQ(fusedngp::read_safetensors((dir / "w16.safetensors").string()).tensors[0].dtype, fusedngp::TensorDtype::F16);

    // Render from the snapshot and from the exported weights: same model, same pixels.
    CliResult r1 = run_cli("render " + (out / "snapshot.fusedngp").string() + " --out " + (dir / "a.png").string() +
                           " --width 64 --height 48");
    CliResult r2 = run_cli("render " + (dir / "w.safetensors").string() + " --out " + (dir / "b.png").string() +
                           " --width 64 --height 48");
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    EXPECT_EQ(read_all(dir / "a.png"), read_all(dir / "b.png"));
}

// --sample-order spread trains (the same samples in another order) and the
// summary records the order; tiled is the default.
TEST_F(TrainCli, SampleOrderIsSelectableAndRecorded) {
    fs::path tiled = dir / "tiled", spread = dir / "spread";
    CliResult r = train(kImage, spread, "--backend cpu --sample-order spread");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto summary = nlohmann::json::parse(read_text((spread / "summary.json").string()));
    EXPECT_EQ(summary["sampling"]["order"], "spread");
    EXPECT_GT(summary["psnr"].get<double>(), 10.0);
    ASSERT_EQ(train(kImage, tiled, "--backend cpu").exit_code, 0);
    EXPECT_EQ(nlohmann::json::parse(read_text((tiled / "summary.json").string()))["sampling"]["order"], "tiled");
    EXPECT_NE(train(kImage, dir / "bad", "--backend cpu --sample-order zigzag").exit_code, 0);
}

TEST_F(TrainCli, ResumeWithDifferentConfigIsRejected) {
    fs::path out = dir / "run";
    ASSERT_EQ(train(kImage, out).exit_code, 0);
    fs::path other = dir / "other.json";
    write_text_file(other, R"({"network": {"otype": "FullyFusedMLP", "n_neurons": 32, "n_hidden_layers": 1}})");
    fs::path out2 = dir / "resumed";
    CliResult r = run_cli("train --data " + kImage + " --config " + other.string() + " --resume " +
                          (out / "snapshot.fusedngp").string() + " --steps 30 --out " + out2.string());
    expect_bad_input(r, {"snapshot.fusedngp", "different config"});
    EXPECT_TRUE(dir_is_empty_or_missing(out2));
}

TEST_F(TrainCli, MissingFile) {
    fs::path out = dir / "out";
    expect_bad_input(train((dir / "nope.png").string(), out), {"nope.png"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, TruncatedPngAndJpeg) {
    auto png = read_all(kImage);
    png.resize(png.size() / 3);
    write_all(dir / "cut.png", png);
    fs::path out = dir / "out";
    expect_bad_input(train((dir / "cut.png").string(), out), {"cut.png"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));

    // A JPEG: make one from the PNG through the render path is not possible
    // (we write PNG/EXR only), so cut a hand-made JPEG header + garbage.
    std::vector<char> jpeg = {(char)0xFF, (char)0xD8, (char)0xFF, (char)0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
    write_all(dir / "cut.jpg", jpeg);
    expect_bad_input(train((dir / "cut.jpg").string(), out), {"cut.jpg"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, NotAnImage) {
    write_text_file(dir / "notes.png", "this is not an image\n");
    fs::path out = dir / "out";
    expect_bad_input(train((dir / "notes.png").string(), out), {"notes.png"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, ZeroSizeImage) {
    write_all(dir / "empty.png", {});
    fs::path out = dir / "out";
    expect_bad_input(train((dir / "empty.png").string(), out), {"empty.png"});
    // A BMP header claiming 0 x 0 pixels.
    std::vector<char> bmp(54, 0);
    bmp[0] = 'B';
    bmp[1] = 'M';
    bmp[2] = 54;
    bmp[10] = 54;
    bmp[14] = 40;
    bmp[26] = 1;
    bmp[28] = 24;
    write_all(dir / "zero.bmp", bmp);
    expect_bad_input(train((dir / "zero.bmp").string(), out), {"zero.bmp"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, ExrWithUnusableChannels) {
    write_raw_exr((dir / "depth.exr").string(), 4, 4, {"Z"}, {std::vector<float>(16, 1.0f)});
    fs::path out = dir / "out";
    expect_bad_input(train((dir / "depth.exr").string(), out), {"depth.exr", "Z"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, UnwritableOutputDirectory) {
    // Runs as root in CI, so permissions do not stop writes: use a path whose
    // parent is a regular file.
    write_text_file(dir / "afile", "x");
    fs::path out = dir / "afile" / "out";
    expect_bad_input(train(kImage, out), {"afile"});
    EXPECT_TRUE(fs::is_regular_file(dir / "afile"));
}

TEST_F(TrainCli, ModelTooLargeForMemoryIsOneLineAndExitTwo) {
    // 16 levels x 2^30 rows x 8 features: 1.4 x 10^11 parameters, 512 GiB as
    // floats, which no machine here has. With overcommit "always" the
    // allocation could succeed and the machine run out of memory later.
    if (read_text("/proc/sys/vm/overcommit_memory").rfind("1", 0) == 0) GTEST_SKIP() << "vm.overcommit_memory is 1";
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer's operator new aborts when out of memory instead of throwing std::bad_alloc";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    GTEST_SKIP() << "AddressSanitizer's operator new aborts when out of memory instead of throwing std::bad_alloc";
#endif
#endif
    fs::path huge = dir / "huge.json";
    write_text_file(huge, R"({"loss": {"otype": "L2"}, "optimizer": {"otype": "Adam"},
        "encoding": {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 8, "log2_hashmap_size": 30},
        "network": {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}})");
    fs::path out = dir / "out_huge";
    expect_bad_input(run_cli("train --data " + kImage + " --backend cpu --config " + huge.string() + " --steps 2 --out " +
                             out.string()),
                     {"out of memory", "log2_hashmap_size"});
    EXPECT_TRUE(dir_is_empty_or_missing(out));
}

TEST_F(TrainCli, CorruptAndTruncatedSnapshots) {
    fs::path out = dir / "run";
    ASSERT_EQ(train(kImage, out).exit_code, 0);
    auto snap = read_all(out / "snapshot.fusedngp");

    auto truncated = snap;
    truncated.resize(snap.size() / 2);
    write_all(dir / "truncated.fusedngp", truncated);
    auto corrupt = snap;
    for (size_t i = 8; i < 40 && i < corrupt.size(); ++i) corrupt[i] = '#';
    write_all(dir / "corrupt.fusedngp", corrupt);

    for (const char* name : {"truncated.fusedngp", "corrupt.fusedngp"}) {
        SCOPED_TRACE(name);
        fs::path o = dir / "o";
        expect_bad_input(run_cli("train --data " + kImage + " --resume " + (dir / name).string() + " --out " + o.string()),
                         {name});
        EXPECT_TRUE(dir_is_empty_or_missing(o));
        expect_bad_input(run_cli("render " + (dir / name).string() + " --out " + (dir / "x.png").string()), {name});
        expect_bad_input(run_cli("export " + (dir / name).string() + " --out " + (dir / "x.safetensors").string()), {name});
        EXPECT_FALSE(fs::exists(dir / "x.png"));
        EXPECT_FALSE(fs::exists(dir / "x.safetensors"));
    }
}

TEST_F(TrainCli, SafetensorsHeaderThatLies) {
    fs::path out = dir / "run";
    ASSERT_EQ(train(kImage, out).exit_code, 0);
    ASSERT_EQ(run_cli("export " + (out / "snapshot.fusedngp").string() + " --out " + (dir / "w.safetensors").string()).exit_code, 0);
    auto bytes = read_all(dir / "w.safetensors");
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    std::string header(bytes.data() + 8, n);
    // Claim the first tensor ends 4 bytes further than it does.
    auto header_json = nlohmann::json::parse(header);
    std::string first;
    for (auto& [k, v] : header_json.items()) {
        if (k != "__metadata__") { first = k; break; }
    }
    header_json[first]["data_offsets"][1] = header_json[first]["data_offsets"][1].get<uint64_t>() + 4;
    std::string lie = header_json.dump();
    while (lie.size() < n) lie += ' ';
    ASSERT_EQ(lie.size(), n) << "rewritten header must keep its length";
    std::copy(lie.begin(), lie.end(), bytes.begin() + 8);
    write_all(dir / "lie.safetensors", bytes);
    expect_bad_input(run_cli("render " + (dir / "lie.safetensors").string() + " --out " + (dir / "x.png").string()),
                     {"lie.safetensors"});
    EXPECT_FALSE(fs::exists(dir / "x.png"));

    // A header length larger than the file.
    auto big = bytes;
    uint64_t huge = bytes.size() * 2;
    std::memcpy(big.data(), &huge, 8);
    write_all(dir / "long.safetensors", big);
    expect_bad_input(run_cli("render " + (dir / "long.safetensors").string() + " --out " + (dir / "x.png").string()),
                     {"long.safetensors"});
}

TEST_F(TrainCli, BadOptions) {
    CliResult r = run_cli("export " + kImage + " --out " + (dir / "x.safetensors").string() + " --dtype bf16");
    expect_bad_input(r, {"f16"});
    r = run_cli("render " + kImage + " --out " + (dir / "x.jpg").string());
    expect_bad_input(r, {"x.jpg"});
    EXPECT_EQ(run_cli("train --help").exit_code, 0);
    EXPECT_EQ(run_cli("render --help").exit_code, 0);
    EXPECT_EQ(run_cli("export --help").exit_code, 0);
    EXPECT_EQ(run_cli("info --help").exit_code, 0);
}

// Ctrl-C during training stops cleanly: exit 0, a snapshot, a render, and a
// summary whose stop_reason says it was interrupted.
void TrainCli::expect_clean_stop_after(const std::vector<int>& signals) {
    const fs::path out = dir / "run";
    fusedngp::test::expect_saved_after_signals("train --data " + kImage + " --config " + config.string() +
                                                   " --seconds 120 --batch 1024 --log-every 1 --out " + out.string(),
                                               out, "render.png", signals);
}

// Out-of-range numbers are one-line errors naming the option, exit 2, and no
// output folder: an unsigned option once read "-3" as 2^64 - 3 and trained
// until interrupted.
TEST_F(TrainCli, NumericOptionsAreRangeCheckedBeforeAnythingIsWritten) {
    const fs::path out = dir / "never" / "made";
    for (const std::string bad : {"--steps -3", "--steps 0", "--seconds -1", "--seconds nan", "--seconds inf",
                                  "--eval-every -2", "--log-every 0", "--batch -5", "--seed -1", "--steps x"}) {
        const CliResult r = run_cli("train --data " + std::string(kImage) + " " + bad + " --out " + out.string());
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
        const std::string option = bad.substr(0, bad.find(' '));
        EXPECT_NE(r.err.find(option), std::string::npos) << bad << ": " << r.err;
        EXPECT_FALSE(fs::exists(dir / "never")) << bad;
    }
}

// A config error found after --out was created leaves no empty folder behind.
TEST_F(TrainCli, ConfigErrorLeavesNoOutputFolder) {
    const fs::path bad_config = dir / "bad.json";
    write_text_file(bad_config, R"({"encoding": {"otype": "Nope"}})");
    const fs::path out = dir / "new" / "run";
    const CliResult r = run_cli("train --data " + std::string(kImage) + " --config " + bad_config.string() +
                                " --steps 2 --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("encoding.otype"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "new"));
}

// A run whose parameters go non-finite (Adam at learning rate 1e30) says so:
// exit 3, stop_reason "diverged", no PSNR (it once reported NaN as 1e9 dB).
TEST_F(TrainCli, DivergedRunSaysSoAndReportsNoPsnr) {
    const fs::path diverging = dir / "diverging.json";
    std::string text = kTrainSmallConfig;
    text.replace(text.find("1e-2"), 4, "1e30");
    write_text_file(diverging, text);
    const fs::path out = dir / "run";
    const CliResult r = run_cli("train --data " + std::string(kImage) + " --config " + diverging.string() +
                                " --steps 20 --batch 1024 --out " + out.string());
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("training diverged"), std::string::npos) << r.err;
    const auto summary = nlohmann::json::parse(read_text((out / "summary.json").string()));
    EXPECT_EQ(summary["stop_reason"], "diverged");
    EXPECT_TRUE(summary["psnr"].is_null()) << summary["psnr"];
    EXPECT_TRUE(summary["loss"].is_null()) << summary["loss"];
}

TEST_F(TrainCli, InterruptSavesSnapshot) { expect_clean_stop_after({SIGINT}); }

// Signals arriving together are one request, not a request and an abort.
TEST_F(TrainCli, InterruptBurstIsOneRequest) { expect_clean_stop_after({SIGINT, SIGINT, SIGINT}); }

TEST_F(TrainCli, TerminateSavesLikeInterrupt) { expect_clean_stop_after({SIGTERM, SIGINT}); }
