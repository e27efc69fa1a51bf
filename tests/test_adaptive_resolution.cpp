// AdaptiveResolution: the render size follows the measured cost per pixel so
// a pass fits its budget, keeps the view's aspect, stays within the view and
// does not flicker between nearby sizes.
#include "render/adaptive_resolution.h"

#include <gtest/gtest.h>

namespace fusedngp {
namespace {

TEST(AdaptiveResolution, PassFitsTheBudgetAtTheMeasuredCost) {
    AdaptiveResolution r(8.0);
    RenderSize first = r.size(1600, 900);
    EXPECT_EQ(first.height, 225);  // before any measurement: a quarter per axis
    EXPECT_EQ(first.width, 400);
    r.record(10000, 20.0);  // 2 us per pixel: 4000 pixels per 8 ms
    RenderSize s = r.size(400, 225);
    EXPECT_NEAR((double)s.width * s.height, 4000, 400);
    EXPECT_NEAR((double)s.width / s.height, 400.0 / 225.0, 0.05);
    // Ten frames per pass afford ten times the pixels.
    RenderSize slow = r.size(400, 225, 10);
    EXPECT_NEAR((double)slow.width * slow.height, 40000, 4000);
}

TEST(AdaptiveResolution, CheapPixelsGiveTheViewsSizeExpensiveOnesTheFloor) {
    AdaptiveResolution r(8.0);
    r.record(1 << 20, 0.1);
    RenderSize full = r.size(1920, 1080);
    EXPECT_EQ(full.width, 1920);
    EXPECT_EQ(full.height, 1080);
    AdaptiveResolution costly(1.0);
    costly.record(10, 100.0);
    RenderSize floor = costly.size(1920, 1080);
    EXPECT_EQ(floor.height, 1080 / 16 + 1);  // kMinScale of the height, rounded
    EXPECT_GE(floor.width, 1);
    RenderSize tiny = costly.size(40, 20);
    EXPECT_EQ(tiny.height, AdaptiveResolution::kMinRows);  // never below a few rows
}

TEST(AdaptiveResolution, SmallCostChangesKeepTheSize) {
    AdaptiveResolution r(8.0);
    r.record(10000, 20.0);
    const RenderSize a = r.size(400, 225);
    r.record(10000, 21.0);  // 5 % dearer, smoothed: within the hysteresis
    const RenderSize b = r.size(400, 225);
    EXPECT_EQ(a.width, b.width);
    EXPECT_EQ(a.height, b.height);
    for (int i = 0; i < 20; ++i) r.record(10000, 80.0);  // 4x dearer for good: the size follows
    const RenderSize c = r.size(400, 225);
    EXPECT_NEAR((double)c.width * c.height, 1000, 150);
}

// A render beside training pays a fixed wait per pass: with passes of two
// sizes measured, that part is fitted and the pixels get the rest of the budget.
TEST(AdaptiveResolution, FixedCostPerPassIsFittedAndLeftOutOfThePixels) {
    AdaptiveResolution r(8.0);
    for (int i = 0; i < 20; ++i) {  // the per-pixel cost forgets its first, unfitted estimates
        r.record(20000, 5.0 + 20000 * 1e-4);  // 5 ms fixed, 0.1 us per pixel
        r.record(40000, 5.0 + 40000 * 1e-4);
    }
    EXPECT_NEAR(r.fixed_ms(), 5.0, 1e-6);
    EXPECT_NEAR(r.ms_per_pixel(), 1e-4, 1e-6);
    EXPECT_NEAR((double)r.pixels_per_budget(), 30000, 30);  // (8 - 5) ms at 0.1 us
    const RenderSize s = r.size(1600, 900);
    EXPECT_NEAR((double)s.width * s.height, 30000, 3000);
    // A budget below the fixed part: the smallest picture, not a negative one.
    AdaptiveResolution tight(4.0);
    for (int i = 0; i < 8; ++i) {
        tight.record(20000, 7.0);
        tight.record(40000, 9.0);
    }
    EXPECT_NEAR(tight.fixed_ms(), 5.0, 1e-6);
    EXPECT_EQ(tight.size(1600, 900).height, 56);  // kMinScale of the height, rounded
}

TEST(AdaptiveResolution, OneSizeAloneLeavesTheCostProportional) {
    AdaptiveResolution r(8.0);
    for (int i = 0; i < 20; ++i) r.record(10000, 20.0);
    EXPECT_EQ(r.fixed_ms(), 0.0);
    EXPECT_NEAR(r.ms_per_pixel(), 2e-3, 1e-9);
}

} // namespace
} // namespace fusedngp
