// Core helpers: the seeded RNG and config field readers.
#include "core/json_fields.h"
#include "core/rng.h"

#include <gtest/gtest.h>

using namespace fusedngp;

TEST(Rng, SameSeedSameSequenceAndInRange) {
    Rng a(42), b(42), c(43);
    bool any_difference = false;
    for (int i = 0; i < 1000; ++i) {
        uint64_t x = a.next_u64();
        EXPECT_EQ(x, b.next_u64());
        any_difference |= (x != c.next_u64());
    }
    EXPECT_TRUE(any_difference);
    for (int i = 0; i < 10000; ++i) {
        float f = a.next_float();
        double d = a.next_double();
        ASSERT_GE(f, 0.0f);
        ASSERT_LT(f, 1.0f);
        ASSERT_GE(d, 0.0);
        ASSERT_LT(d, 1.0);
    }
}

TEST(Rng, KnownFirstValueOfSplitMix64) {
    // Reference value of SplitMix64 seeded with 0 (published test vector).
    Rng r(0);
    EXPECT_EQ(r.next_u64(), 0xE220A8397B1DCDAFull);
}

TEST(JsonFields, SizesMustBePositive) {
    json j = {{"n_levels", 0}, {"n_neurons", -4}, {"ok", 8}, {"frac", 2.5}};
    EXPECT_THROW(get_size(j, "encoding", "n_levels", 1), ConfigError);
    EXPECT_THROW(get_size(j, "network", "n_neurons", 1), ConfigError);
    EXPECT_THROW(get_size(j, "x", "frac", 1), ConfigError);
    EXPECT_EQ(get_size(j, "x", "ok", 1), 8u);
    EXPECT_EQ(get_size(j, "x", "missing", 3), 3u);
    try {
        get_size(j, "encoding", "n_levels", 1);
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "encoding.n_levels");
        EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos);
    }
}

TEST(JsonFields, HugeWholeNumbersAreOutOfRangeNotConverted) {
    // Found by fuzz_config: 1e91 read as a whole float was cast to int64 (undefined behaviour).
    json j = json::parse(R"({"big": 1.9e91, "neg": -1e300, "edge": 9223372036854775808.0,
                             "unsigned": 18446744073709551613, "ok": 4.0})");
    for (const char* key : {"big", "neg", "edge", "unsigned"}) {
        try {
            get_int(j, "encoding", key, 0, 1, 64);
            ADD_FAILURE() << key << " was accepted";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("allowed range is [1, 64]"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(get_int(j, "encoding", "ok", 0, 1, 64), 4);
}

TEST(JsonFields, ChoicesIgnoreCaseAndListAllowedValues) {
    EXPECT_EQ(match_choice("relu", {"None", "ReLU"}, "network.activation"), "ReLU");
    try {
        match_choice("Relux", {"None", "ReLU"}, "network.activation");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("network.activation"), std::string::npos);
        EXPECT_NE(msg.find("None, ReLU"), std::string::npos);
    }
}

TEST(JsonFields, OtypeMustExistAndBeString) {
    EXPECT_THROW(get_otype(json::object(), "encoding"), ConfigError);
    EXPECT_THROW(get_otype(json{{"otype", 3}}, "encoding"), ConfigError);
    EXPECT_THROW(get_otype(json::array(), "encoding"), ConfigError);
    EXPECT_EQ(get_otype(json{{"otype", "HashGrid"}}, "encoding"), "HashGrid");
}
