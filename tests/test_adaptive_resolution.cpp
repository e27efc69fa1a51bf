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

} // namespace
} // namespace fusedngp
