// Unused config fields are reported as warnings with a suggestion, and the
// shipped configs have none.
#include "config/config.h"
#include "config/unused_fields.h"
#include "cli_runner.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace fusedngp;
namespace fs = std::filesystem;

TEST(UnusedFields, TypoIsReportedWithSuggestion) {
    json config = json::parse(R"({
      "encoding": {"otype": "HashGrid", "log2_hash_map_size": 15, "n_levels": 8},
      "network": {"otype": "FullyFusedMLP", "n_neuron": 64},
      "loss": {"otype": "L2"},
      "optimizer": {"otype": "EMA", "decay": 0.9, "nested": {"otype": "Adam", "learningrate": 1e-2}},
      "rgb_network": {"anything": 1}
    })");
    auto warnings = unused_config_fields(config);
    ASSERT_EQ(warnings.size(), 3u);
    EXPECT_NE(warnings[0].find("optimizer.nested.learningrate"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("did you mean learning_rate?"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[1].find("encoding.log2_hash_map_size"), std::string::npos) << warnings[1];
    EXPECT_NE(warnings[1].find("did you mean log2_hashmap_size?"), std::string::npos) << warnings[1];
    EXPECT_NE(warnings[2].find("network.n_neuron"), std::string::npos) << warnings[2];
}

TEST(UnusedFields, CompositeEntriesMayNameTheirDims) {
    json config = json::parse(R"({"encoding": {"otype": "Composite", "nested": [
        {"otype": "HashGrid", "n_dims_to_encode": 2}, {"otype": "Frequency", "n_frequencies": 4, "n_bin": 3}]}})");
    auto warnings = unused_config_fields(config);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("encoding.nested[1].n_bin"), std::string::npos) << warnings[0];
}

TEST(UnusedFields, ShippedConfigsHaveNone) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(FUSEDNGP_SOURCE_DIR) / "configs")) {
        if (e.path().extension() != ".json") continue;
        auto warnings = unused_config_fields(load_config_file(e.path().string()));
        EXPECT_TRUE(warnings.empty()) << e.path() << ": " << (warnings.empty() ? "" : warnings[0]);
    }
}

TEST(UnusedFields, CliWarnsButRuns) {
    auto dir = fusedngp::test::make_temp_dir("unused");
    fusedngp::test::write_text_file(dir / "c.json", R"({"encoding": {"otype": "HashGrid", "log2_hash_map_size": 12}})");
    auto r = fusedngp::test::run_cli("info --config " + (dir / "c.json").string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: encoding.log2_hash_map_size"), std::string::npos) << r.err;
    fs::remove_all(dir);
}
