// The panel's "GPU steps/frame": the steps that ran per frame, from the
// running step count fed once per frame (a mean over the last frames).
#ifdef FUSEDNGP_HAVE_GUI

#include "gui/step_stats.h"

#include <gtest/gtest.h>

namespace fusedngp {
namespace {

TEST(FrameSteps, MeanOfTheStepsThatRanPerFrame) {
    FrameSteps f;
    EXPECT_EQ(f.per_frame(), 0.0);
    f.record(1000);  // the first count is only the baseline
    EXPECT_EQ(f.per_frame(), 0.0);
    f.record(1018);
    EXPECT_DOUBLE_EQ(f.per_frame(), 18.0);
    f.record(1038);
    f.record(1038);  // a frame in which nothing ran counts as 0
    EXPECT_DOUBLE_EQ(f.per_frame(), (18.0 + 20.0 + 0.0) / 3.0);
}

TEST(WallStepRate, StepsOverTheLastHalfSecondOfWallTime) {
    WallStepRate r;
    r.record(100, 10.0);  // the baseline
    EXPECT_EQ(r.steps_per_second(), 0.0);
    r.record(150, 10.2);  // inside the window: no new figure yet
    EXPECT_EQ(r.steps_per_second(), 0.0);
    r.record(400, 10.6);
    EXPECT_NEAR(r.steps_per_second(), 500.0, 1e-9);
    r.record(420, 11.0);  // the next window starts at 10.6
    EXPECT_NEAR(r.steps_per_second(), 500.0, 1e-9);
    r.record(460, 11.1);
    EXPECT_NEAR(r.steps_per_second(), 120.0, 1e-9);
    r.record(5, 11.2);  // a reset starts over
    EXPECT_EQ(r.steps_per_second(), 0.0);
}

TEST(FrameSteps, KeepsOnlyTheLastFrames) {
    FrameSteps f;
    uint64_t total = 0;
    f.record(total);
    for (size_t i = 0; i < FrameSteps::kFrames; ++i) f.record(total += 256);  // a burst long ago
    EXPECT_DOUBLE_EQ(f.per_frame(), 256.0);
    for (size_t i = 0; i < FrameSteps::kFrames; ++i) f.record(total += 18);
    EXPECT_DOUBLE_EQ(f.per_frame(), 18.0);
    f.record(total += 34);  // one newer frame replaces the oldest
    EXPECT_DOUBLE_EQ(f.per_frame(), (18.0 * (FrameSteps::kFrames - 1) + 34.0) / FrameSteps::kFrames);
}

TEST(FrameSteps, ACountThatWentDownStartsOver) {
    FrameSteps f;
    f.record(500);
    f.record(510);
    f.record(3);  // the session was reset: no negative step counts
    EXPECT_EQ(f.per_frame(), 0.0);
    f.record(7);
    EXPECT_DOUBLE_EQ(f.per_frame(), 4.0);
    f.reset();
    EXPECT_EQ(f.per_frame(), 0.0);
}

} // namespace
} // namespace fusedngp

#endif
