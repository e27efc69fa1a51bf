// Dynamic loss scaling (both CUDA trainers share it): when the scale halves,
// doubles and stays, step by step, and FUSEDNGP_LOSS_SCALE's parsing.
#include "optimizers/dynamic_loss_scale.h"
#include "core/errors.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace fusedngp;

namespace {

LossScaleSettings settings(float initial, uint32_t growth, float min_scale, float max_scale) {
    LossScaleSettings s;
    s.initial = initial;
    s.growth_interval = growth;
    s.min_scale = min_scale;
    s.max_scale = max_scale;
    return s;
}

// Sets FUSEDNGP_LOSS_SCALE for one scope and restores it after.
struct ScopedLossScaleVariable {
    explicit ScopedLossScaleVariable(const char* value) {
        if (const char* old = std::getenv(kName)) had_ = true, old_ = old;
        setenv(kName, value, 1);
    }
    ~ScopedLossScaleVariable() {
        if (had_) setenv(kName, old_.c_str(), 1);
        else unsetenv(kName);
    }
    static constexpr const char* kName = "FUSEDNGP_LOSS_SCALE";
    bool had_ = false;
    std::string old_;
};

} // namespace

TEST(DynamicLossScale, HalvesOncePerScaleOnNonFiniteSteps) {
    DynamicLossScale s(settings(1024.f, 1000, 1.f, 4096.f));
    EXPECT_TRUE(s.on_step(1024.f, true));
    EXPECT_EQ(s.scale(), 512.f);
    // Two more steps were queued with 1024 before the readback: they overflow
    // too, but the scale they ran with is no longer the current one.
    EXPECT_FALSE(s.on_step(1024.f, true));
    EXPECT_FALSE(s.on_step(1024.f, true));
    EXPECT_EQ(s.scale(), 512.f);
    // A step that ran with 512 and still overflows halves again.
    EXPECT_TRUE(s.on_step(512.f, true));
    EXPECT_EQ(s.scale(), 256.f);
}

TEST(DynamicLossScale, NeverGoesBelowTheMinimum) {
    DynamicLossScale s(settings(4.f, 1000, 2.f, 4096.f));
    EXPECT_TRUE(s.on_step(4.f, true));
    EXPECT_EQ(s.scale(), 2.f);
    EXPECT_FALSE(s.on_step(2.f, true));
    EXPECT_EQ(s.scale(), 2.f);
}

TEST(DynamicLossScale, DoublesAfterTheGrowthIntervalOfCleanStepsUpToTheMaximum) {
    DynamicLossScale s(settings(1024.f, 3, 1.f, 4096.f));
    EXPECT_FALSE(s.on_step(1024.f, false));
    EXPECT_FALSE(s.on_step(1024.f, false));
    EXPECT_TRUE(s.on_step(1024.f, false));
    EXPECT_EQ(s.scale(), 2048.f);
    for (int i = 0; i < 2; ++i) EXPECT_FALSE(s.on_step(2048.f, false));
    EXPECT_TRUE(s.on_step(2048.f, false));
    EXPECT_EQ(s.scale(), 4096.f);
    for (int i = 0; i < 10; ++i) EXPECT_FALSE(s.on_step(4096.f, false));
    EXPECT_EQ(s.scale(), 4096.f);
}

TEST(DynamicLossScale, AnOverflowRestartsTheCleanRun) {
    DynamicLossScale s(settings(1024.f, 3, 1.f, 4096.f));
    s.on_step(1024.f, false);
    s.on_step(1024.f, false);
    // An overflow from an older scale changes nothing but the count.
    EXPECT_FALSE(s.on_step(2048.f, true));
    EXPECT_FALSE(s.on_step(1024.f, false));
    EXPECT_FALSE(s.on_step(1024.f, false));
    EXPECT_EQ(s.scale(), 1024.f);
    EXPECT_TRUE(s.on_step(1024.f, false));
    EXPECT_EQ(s.scale(), 2048.f);
}

TEST(DynamicLossScale, SetRestartsTheCleanRun) {
    DynamicLossScale s(settings(1024.f, 2, 1.f, 1e6f));
    s.on_step(1024.f, false);
    s.set(100.f);
    EXPECT_FALSE(s.on_step(100.f, false));
    EXPECT_TRUE(s.on_step(100.f, false));
    EXPECT_EQ(s.scale(), 200.f);
}

TEST(LossScaleEnvironment, WithoutTheVariableTheDefaultsStand) {
    unsetenv(ScopedLossScaleVariable::kName);
    const LossScaleSettings s = loss_scale_settings_from_environment(settings(4096.f, 7, 1.f, 4096.f));
    EXPECT_EQ(s.initial, 4096.f);
    EXPECT_EQ(s.growth_interval, 7u);
}

TEST(LossScaleEnvironment, ScaleAndGrowthIntervalAreRead) {
    ScopedLossScaleVariable v("65536:50");
    const LossScaleSettings s = loss_scale_settings_from_environment(settings(4096.f, 1000, 1.f, 4096.f));
    EXPECT_EQ(s.initial, 65536.f);
    EXPECT_EQ(s.growth_interval, 50u);
    EXPECT_EQ(s.max_scale, 65536.f);  // widened to hold the initial scale
    EXPECT_EQ(s.min_scale, 1.f);
}

TEST(LossScaleEnvironment, MalformedValuesAreInputErrorsNamingTheVariable) {
    for (const char* bad : {"abc", "0.5", "1e9", "512:", "512:0", "512:-3", "512:x", "512:10x", "nan"}) {
        ScopedLossScaleVariable v(bad);
        try {
            loss_scale_settings_from_environment();
            ADD_FAILURE() << bad << " was accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("FUSEDNGP_LOSS_SCALE=\"" + std::string(bad) + "\""),
                      std::string::npos)
                << e.what();
        }
    }
}
