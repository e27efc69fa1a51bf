// The app's grid-only NeRF views (nerf/occupancy_view.h): the march's samples
// per ray and the cost picture built from them.
#include "nerf/occupancy_view.h"

#include <gtest/gtest.h>

#include <vector>

namespace fusedngp::nerf {
namespace {

// One pixel whose centre ray runs down the z axis through the cube's centre.
Camera axis_camera() {
    Camera c;
    c.pose.position = {0.5f, 0.5f, 3.f};
    c.intrinsics = {1, 1, 10.f, 10.f, 0.5f, 0.5f};
    return c;
}

TEST(NerfViews, MarchCountsTheLatticeThroughOccupiedCells) {
    OccupancyGrid full(1);  // before its first update every cell is occupied
    MarchSettings march;
    // Through the whole cube (length 1) at the fixed step sqrt(3)/1024: 591 or 592 lattice points.
    const std::vector<uint32_t> n = march_sample_counts(full, axis_camera(), march);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_GE(n[0], 591u);
    EXPECT_LE(n[0], 592u);
    march.max_samples = 100;
    EXPECT_EQ(march_sample_counts(full, axis_camera(), march)[0], 100u);

    OccupancyGrid empty(1);
    empty.set_state(std::vector<float>(full.density().size(), 0.f), std::vector<uint8_t>(full.bits().size(), 0));
    EXPECT_EQ(march_sample_counts(empty, axis_camera(), MarchSettings{})[0], 0u);
}

TEST(NerfViews, CostViewShowsTheBackgroundWhereNothingIsMarched) {
    OccupancyGrid full(1);
    Camera wide = axis_camera();
    wide.intrinsics = {16, 16, 10.f, 10.f, 8.f, 8.f};  // the cube fills the middle only
    const Vec3 bg{0.3f, 0.3f, 0.3f};
    const MarchSettings march;
    const std::vector<uint32_t> n = march_sample_counts(full, wide, march);
    const Image img = render_march_cost_view(full, wide, march, bg);
    ASSERT_EQ(img.width, 16);
    ASSERT_EQ(img.channels, 3);
    int marched = 0, missed = 0;
    for (size_t i = 0; i < n.size(); ++i) {
        const bool is_bg = img.pixels[3 * i] == bg.x && img.pixels[3 * i + 1] == bg.y && img.pixels[3 * i + 2] == bg.z;
        EXPECT_EQ(is_bg, n[i] == 0) << i;
        (n[i] ? marched : missed) += 1;
    }
    EXPECT_GT(marched, 0);
    EXPECT_GT(missed, 0);
    // More samples, more yellow: the ramp's green rises with the count.
    for (size_t i = 0; i < n.size(); ++i) {
        for (size_t j = 0; j < n.size(); ++j) {
            if (n[i] > 0 && n[i] < n[j]) {
                EXPECT_LT(img.pixels[3 * i + 1], img.pixels[3 * j + 1]) << i << " " << j;
            }
        }
    }
}

TEST(NerfViews, CropBoxLimitsTheMarchAndTheCellsDrawn) {
    OccupancyGrid full(1);
    const MarchSettings march;
    // Half the cube's depth along the ray: half the lattice (0.5 / (sqrt(3)/1024) = 295.6).
    const Box3 middle{{-1, -1, 0.25f}, {2, 2, 0.75f}};
    const uint32_t n = march_sample_counts(full, axis_camera(), march, middle)[0];
    EXPECT_GE(n, 295u);
    EXPECT_LE(n, 296u);
    const Box3 away{{2, 2, 2}, {3, 3, 3}};
    EXPECT_EQ(march_sample_counts(full, axis_camera(), march, away)[0], 0u);

    const Vec3 bg{0.3f, 0.3f, 0.3f};
    const Image drawn = render_occupancy_view(full, axis_camera(), bg);
    const Image cropped = render_occupancy_view(full, axis_camera(), bg, away);
    EXPECT_NE(drawn.pixels, std::vector<float>({bg.x, bg.y, bg.z}));
    EXPECT_EQ(cropped.pixels, std::vector<float>({bg.x, bg.y, bg.z}));
    EXPECT_EQ(render_march_cost_view(full, axis_camera(), march, bg, away).pixels, cropped.pixels);
}

} // namespace
} // namespace fusedngp::nerf
