// Every shipped config builds every component, and each kind of bad config
// makes the CLI exit with code 2 and a one-line message naming the field.
#include "cli_runner.h"
#include "config/config.h"
#include "model/trainer.h"
#include "modes/mode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace fusedngp;
using namespace fusedngp::test;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> config_files() {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FUSEDNGP_SOURCE_DIR) / "configs")) {
        if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// Dims for building a config: the mode named by its file (image/sdf/nerf), or 3 -> 3.
std::pair<uint32_t, uint32_t> dims_for(const fs::path& p) {
    std::string stem = p.stem().string();
    for (const auto& spec : mode_specs()) {
        if (stem.find(spec.name) != std::string::npos) return {spec.n_input_dims, spec.n_output_dims};
    }
    return {3, 3};
}

} // namespace

TEST(ShippedConfigs, EveryFileBuildsAllComponents) {
    auto files = config_files();
    ASSERT_GE(files.size(), 3u) << "configs/ should hold image, sdf and nerf defaults";
    for (const auto& f : files) {
        SCOPED_TRACE(f.string());
        json cfg = config_with_defaults(load_config_file(f.string()));
        // Hash tables capped at 2^16 rows: three examples ask for 2^24 (several
        // GB with Adam's moments, a minute of this test); the components and
        // the step are what is checked here.
        if (cfg["encoding"].contains("log2_hashmap_size"))
            cfg["encoding"]["log2_hashmap_size"] = std::min(cfg["encoding"]["log2_hashmap_size"].get<int>(), 16);
        auto [n_in, n_out] = dims_for(f);
        Trainer<float> trainer(n_in, n_out, cfg, 1);
        EXPECT_GT(trainer.model().n_params(), 0u);
        // One step must produce a finite loss: the config is usable, not just parseable.
        Matrix<float> in = Matrix<float>::Random(64, n_in).array() * 0.5f + 0.5f;
        Matrix<float> target = Matrix<float>::Random(64, n_out).array() * 0.5f + 0.5f;
        float loss = trainer.step(in, target);
        EXPECT_TRUE(std::isfinite(loss));
    }
}

TEST(ShippedConfigs, ModeDefaultsLoadWithoutAFile) {
    for (const auto& spec : mode_specs()) {
        json cfg = load_mode_config(spec.name, "");
        for (const char* s : {"loss", "optimizer", "encoding", "network"}) EXPECT_TRUE(cfg.contains(s)) << s;
    }
}

namespace {

// Writes `config_text` to a file, runs `fusedngp info --config FILE`, and
// checks exit code 2, a single line on stderr, and that it mentions `expect`.
void expect_cli_config_error(const std::string& config_text, const std::string& expect, const std::string& mode = "image") {
    auto dir = make_temp_dir("cfg");
    auto path = dir / "config.json";
    write_text_file(path, config_text);
    CliResult r = run_cli("info --mode " + mode + " --config " + path.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(expect), std::string::npos) << "stderr: " << r.err << "\nexpected to mention: " << expect;
    fs::remove_all(dir);
}

} // namespace

TEST(ConfigErrorsCli, MalformedJson) {
    expect_cli_config_error("{\"encoding\": {\"otype\": \"HashGrid\",, }", "config.json");
}

TEST(ConfigErrorsCli, UnknownOtype) {
    expect_cli_config_error(R"({"encoding": {"otype": "HashGridz"}})", "encoding.otype");
    expect_cli_config_error(R"({"network": {"otype": "SuperMLP"}})", "network.otype");
    expect_cli_config_error(R"({"loss": {"otype": "L3"}})", "loss.otype");
    expect_cli_config_error(R"({"optimizer": {"otype": "Adamm"}})", "optimizer.otype");
}

TEST(ConfigErrorsCli, ZeroOrNegativeSizes) {
    expect_cli_config_error(R"({"network": {"otype": "FullyFusedMLP", "n_neurons": 0}})", "network.n_neurons");
    expect_cli_config_error(R"({"encoding": {"otype": "HashGrid", "n_levels": -2}})", "encoding.n_levels");
}

TEST(ConfigErrorsCli, FeaturesPerLevelNotPowerOfTwo) {
    expect_cli_config_error(R"({"encoding": {"otype": "HashGrid", "n_features_per_level": 3}})",
                            "encoding.n_features_per_level");
}

TEST(ConfigErrorsCli, HashmapTooLarge) {
    expect_cli_config_error(R"({"encoding": {"otype": "HashGrid", "log2_hashmap_size": 31}})",
                            "encoding.log2_hashmap_size");
}

TEST(ConfigErrorsCli, EncodingDoesNotMatchInputDims) {
    // Spherical harmonics need 3D directions; image mode feeds 2D coordinates.
    expect_cli_config_error(R"({"encoding": {"otype": "SphericalHarmonics", "degree": 4}})", "encoding");
}

TEST(ConfigErrorsCli, MissingConfigFileNamesIt) {
    CliResult r = run_cli("info --config /nonexistent/dir/cfg.json");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/dir/cfg.json"), std::string::npos) << r.err;
}

TEST(Cli, InfoDescribesDefaultConfig) {
    CliResult r = run_cli("info");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("encoding"), std::string::npos);
    EXPECT_NE(r.out.find("params"), std::string::npos);
}

TEST(Cli, InfoSaysWhenTheNerfGridScaleComesFromTheData) {
    CliResult r = run_cli("info --mode nerf");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("no per_level_scale in the config"), std::string::npos) << r.out;
    auto dir = make_temp_dir("cfg_scale");
    auto path = dir / "nerf.json";
    write_text_file(path, R"({"encoding": {"otype": "HashGrid", "per_level_scale": 1.5}})");
    r = run_cli("info --mode nerf --config " + path.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("no per_level_scale"), std::string::npos) << r.out;
    EXPECT_EQ(run_cli("info --mode image").out.find("no per_level_scale"), std::string::npos);
    fs::remove_all(dir);
}

TEST(Cli, UnknownOptionIsUsageError) {
    CliResult r = run_cli("info --no-such-flag");
    EXPECT_EQ(r.exit_code, 2);
}
