// Config files: loading errors that name the file (and line:column for bad
// JSON), defaults for missing sections, and the shipped configs.
#include "config/config.h"
#include "optimizers/factory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace fusedngp;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed at the end.
class ConfigFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("fusedngp_config_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& name, const std::string& text) {
        const fs::path path = dir_ / name;
        std::ofstream(path, std::ios::binary) << text;
        return path.string();
    }

    fs::path dir_;
};

std::string config_error_message(const std::string& path) {
    try {
        load_config_file(path);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no ConfigError)";
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::vector<std::string> shipped_config_files() {
    std::vector<std::string> files;
    for (const char* dir : {"configs", "configs/examples"}) {
        for (const auto& entry : fs::directory_iterator(fs::path(FUSEDNGP_SOURCE_DIR) / dir)) {
            if (entry.path().extension() == ".json") files.push_back(entry.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

TEST_F(ConfigFileTest, MalformedJsonNamesFileLineAndColumn) {
    // Line 3 has a trailing comma; the parser fails at the '}' in column 31.
    const std::string path = write("broken.json",
                                   "{\n"
                                   "  \"loss\": {\"otype\": \"L2\"},\n"
                                   "  \"network\": {\"n_neurons\": 64,}\n"
                                   "}\n");
    const std::string msg = config_error_message(path);
    EXPECT_TRUE(contains(msg, path + ":3:31: malformed JSON: ")) << msg;
    EXPECT_FALSE(contains(msg, "[json.exception")) << msg;
    EXPECT_TRUE(contains(msg, "unexpected '}'")) << msg;
}

// Found by scripts/fuzz (config): nlohmann reports a number too large for a
// double as out_of_range, not as a parse error, and it escaped as such.
TEST_F(ConfigFileTest, NumberTooLargeIsMalformedJson) {
    const std::string path = write("overflow.json", "{\"network\": {\"n_neurons\": 1e999}}\n");
    const std::string msg = config_error_message(path);
    EXPECT_TRUE(contains(msg, path + ": malformed JSON: number overflow")) << msg;
    EXPECT_FALSE(contains(msg, "[json.exception")) << msg;
}

TEST_F(ConfigFileTest, TruncatedJsonReportsTheEnd) {
    const std::string path = write("truncated.json", "{\n  \"loss\": {\n");
    const std::string msg = config_error_message(path);
    EXPECT_TRUE(contains(msg, path + ":3:1: malformed JSON")) << msg;
}

TEST_F(ConfigFileTest, MissingOrUnreadableFileIsInputError) {
    const std::string missing = (dir_ / "nope.json").string();
    try {
        load_config_file(missing);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_TRUE(contains(e.what(), missing)) << e.what();
    }
    EXPECT_THROW(load_config_file(dir_.string()), InputError);  // a directory
}

TEST_F(ConfigFileTest, RootMustBeAnObject) {
    const std::string path = write("array.json", "[{\"otype\": \"Adam\"}]");
    const std::string msg = config_error_message(path);
    EXPECT_TRUE(contains(msg, path)) << msg;
    EXPECT_TRUE(contains(msg, "root")) << msg;
    EXPECT_TRUE(contains(msg, "array")) << msg;
}

TEST_F(ConfigFileTest, CommentsAreAllowed) {
    const std::string path = write("commented.json",
                                   "// image fitting\n"
                                   "{ \"loss\": {\"otype\": \"L1\"} /* the rest from defaults */ }\n");
    EXPECT_EQ(load_config_file(path)["loss"]["otype"], "L1");
}

TEST(ConfigDefaults, FillOnlyMissingSectionsAndKeepExtraKeys) {
    const json user = {{"loss", {{"otype", "L1"}}},
                       {"network", {{"otype", "CutlassMLP"}}},
                       {"rgb_network", {{"otype", "FullyFusedMLP"}}}};
    const json config = config_with_defaults(user);
    const json defaults = default_config();
    EXPECT_EQ(config["loss"], user["loss"]);        // present: kept as written
    EXPECT_EQ(config["network"], user["network"]);  // not merged field by field
    EXPECT_EQ(config["optimizer"], defaults["optimizer"]);
    EXPECT_EQ(config["encoding"], defaults["encoding"]);
    EXPECT_EQ(config["rgb_network"], user["rgb_network"]);
    EXPECT_EQ(config_with_defaults(json::object()), defaults);
}

TEST(ConfigDefaults, SectionsMustBeObjects) {
    try {
        config_with_defaults({{"encoding", "HashGrid"}});
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "encoding");
    }
    EXPECT_THROW(config_with_defaults(json::array()), ConfigError);
}

TEST(ShippedConfigs, ImageConfigIsTheBuiltInDefault) {
    EXPECT_EQ(load_config_file(std::string(FUSEDNGP_SOURCE_DIR) + "/configs/image.json"), default_config());
}

TEST(ShippedConfigs, AllParseAndTheirOptimizersBuild) {
    const std::vector<std::string> files = shipped_config_files();
    // image, sdf, nerf + the two schema examples.
    ASSERT_GE(files.size(), 5u);
    for (const std::string& file : files) {
        SCOPED_TRACE(file);
        const json config = config_with_defaults(load_config_file(file));
        for (const std::string& section : config_sections()) {
            ASSERT_TRUE(config[section].is_object()) << section;
            EXPECT_TRUE(config[section]["otype"].is_string()) << section;
        }
        EXPECT_NO_THROW(create_optimizer<double>(config["optimizer"]));
        EXPECT_NO_THROW(create_optimizer<float>(config["optimizer"]));
    }
}

TEST(ShippedConfigs, InstantNgpStyleLoadsUnchanged) {
    const json config = load_config_file(std::string(FUSEDNGP_SOURCE_DIR) + "/configs/examples/instant_ngp_style.json");
    auto optimizer = create_optimizer<double>(config["optimizer"]);
    EXPECT_EQ(optimizer->otype(), "EMA");  // written "Ema"
    EXPECT_EQ(optimizer->learning_rate(), 1e-2);
    // Nested sections of other components also use our optimizer schema.
    EXPECT_NO_THROW(create_optimizer<double>(config["distortion_map"]["optimizer"], "distortion_map.optimizer"));
    EXPECT_NO_THROW(create_optimizer<double>(config["envmap"]["optimizer"], "envmap.optimizer"));
}
