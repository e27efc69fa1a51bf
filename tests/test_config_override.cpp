// Parsing `--set KEY=VALUE@FRAME` and applying live config changes.
#include "config/config.h"
#include "config/config_override.h"
#include "core/errors.h"

#include <gtest/gtest.h>

using namespace fusedngp;

TEST(ConfigOverride, ParsesKeyValueFrame) {
    ScheduledChange s = parse_scheduled_change("network.n_neurons=128@120");
    EXPECT_EQ(s.change.key, "network.n_neurons");
    EXPECT_EQ(s.change.value, json(128));
    EXPECT_EQ(s.frame, 120u);
    s = parse_scheduled_change("network.otype=CublasMLP@0");
    EXPECT_EQ(s.change.value, json("CublasMLP"));
    EXPECT_EQ(s.frame, 0u);
    s = parse_scheduled_change("optimizer.learning_rate=1e-3@7");
    EXPECT_DOUBLE_EQ(s.change.value.get<double>(), 1e-3);
    EXPECT_EQ(change_effect(s.change.key), ChangeEffect::LearningRate);
    EXPECT_EQ(change_effect("batch_size"), ChangeEffect::BatchSize);
    EXPECT_EQ(change_effect("encoding.n_levels"), ChangeEffect::Rebuild);
}

TEST(ConfigOverride, RejectsBadSyntaxAndUnknownKeys) {
    for (const char* bad : {"network.n_neurons=128", "network.n_neurons128@3", "=5@3", "network.n_neurons=@3",
                            "network.n_neurons=64@", "network.n_neurons=64@-1", "network.n_neurons=64@x",
                            "network.n_nerons=64@3", "encoding=1@2", "seed=4@1"}) {
        EXPECT_THROW(parse_scheduled_change(bad), InputError) << bad;
    }
    try {
        parse_scheduled_change("network.width=64@3");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("network.n_neurons"), std::string::npos) << e.what();
    }
}

TEST(ConfigOverride, AppliesToNestedOptimizerAndSections) {
    json config = default_config();  // EMA -> ExponentialDecay -> Adam
    apply_config_change(config, parse_config_change("optimizer.learning_rate=0.005"));
    EXPECT_DOUBLE_EQ(config["optimizer"]["nested"]["nested"]["learning_rate"].get<double>(), 0.005);
    EXPECT_FALSE(config["optimizer"].contains("learning_rate"));
    EXPECT_DOUBLE_EQ(config_value(config, "optimizer.learning_rate").get<double>(), 0.005);
    apply_config_change(config, parse_config_change("network.n_hidden_layers=5"));
    EXPECT_EQ(config["network"]["n_hidden_layers"], json(5));
    apply_config_change(config, parse_config_change("encoding.otype=DenseGrid"));
    EXPECT_EQ(config_value(config, "encoding.otype"), json("DenseGrid"));
    json before = config;
    apply_config_change(config, parse_config_change("batch_size=4096"));
    EXPECT_EQ(config, before);
    EXPECT_EQ(value_text(json("CPU")), "CPU");
    EXPECT_EQ(value_text(json(64)), "64");
}

// Found by scripts/fuzz (config): a raw --set value with bytes that are not
// UTF-8 was kept, and the error message about it then threw from nlohmann's
// dump instead of reporting the value.
TEST(ConfigOverride, ValueThatIsNotUtf8IsAnInputError) {
    EXPECT_THROW(parse_config_change("network.n_neurons=ab\x9b"), InputError);
    EXPECT_THROW(parse_config_change("network.activation=\xff\xfe"), InputError);
    EXPECT_NO_THROW(parse_config_change("network.activation=Sine"));
    // The field readers' messages survive such a value already in a config.
    json config = {{"n_neurons", std::string("x\x9b")}};
    try {
        get_size(config, "network", "n_neurons", 64);
        ADD_FAILURE() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("network.n_neurons"), std::string::npos) << e.what();
    }
}
