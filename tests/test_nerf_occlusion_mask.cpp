// The occluded-cell mask of the NeRF training march (nerf/occlusion_mask.h):
// its update rule, the cell a sample is noted in (the one its march step
// tested), the training bits, the probe rays, and the trainer that uses it.
#include "nerf/occlusion_mask.h"
#include "nerf/ray_marching_math.h"

#include "core/rng.h"

#include <gtest/gtest.h>

#include <vector>

using namespace fusedngp;
using namespace fusedngp::nerf;

namespace {

bool bit_of(const std::vector<uint8_t>& bits, uint32_t i) { return grid_bit(bits.data(), i); }

// The centre of cell c of cascade k.
Vec3 cell_centre(int k, Cell3 c) {
    const Box3 b = cell_box(k, c);
    return 0.5f * (b.lo + b.hi);
}

} // namespace

TEST(NerfOcclusionMask, UpdateRuleOnEveryCombination) {
    // Bits 0-7: every (culled, visited, seen) combination once, with the
    // counter at 1 (this update runs it down) and at 2 (it does not).
    for (uint8_t start : {(uint8_t)1, (uint8_t)2}) {
        uint8_t culled = 0, visited = 0, seen = 0;
        for (int b = 0; b < 8; ++b) {
            if (b & 1) culled |= (uint8_t)(1u << b);
            if (b & 2) visited |= (uint8_t)(1u << b);
            if (b & 4) seen |= (uint8_t)(1u << b);
        }
        uint8_t recent[8];
        for (uint8_t& r : recent) r = start;
        const uint8_t next = next_culled_cells(culled, visited, seen, recent);
        for (int b = 0; b < 8; ++b) {
            const bool was = b & 1, vis = b & 2, saw = b & 4;
            // Seen: released, the counter full. Else the counter runs down; at 0
            // a visited or culled cell is culled; a cell nothing reached keeps its state.
            EXPECT_EQ(recent[b], saw ? kOcclusionMemory : start - 1);
            const bool expect = !saw && start == 1 && (was || vis);
            EXPECT_EQ(((next >> b) & 1) != 0, expect)
                << "counter " << (int)start << " culled " << was << " visited " << vis << " seen " << saw;
        }
    }
    uint8_t zero[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(next_culled_cells(0x01, 0x00, 0x00, zero), 0x01);  // culled and unreached: stays
    EXPECT_EQ(zero[0], 0);
    EXPECT_EQ(training_march_cells(0xF0, 0x3C), 0xC0);
}

// Runs `periods` updates in which the sample at p is noted with `seen`.
void note_for(OcclusionMask& mask, Vec3 p, float dt, bool seen, int periods) {
    for (int i = 0; i < periods; ++i) {
        mask.note_sample(p, dt, seen);
        mask.update();
    }
}

TEST(NerfOcclusionMask, CellsCulledAfterMemoryPeriodsUnseenAndReleasedWhenOneIsSeen) {
    OcclusionMask mask(2);
    const Cell3 a{10, 20, 30}, b{11, 20, 30}, c{64, 64, 64};
    const uint32_t ia = grid_index(0, a), ib = grid_index(0, b), ic = grid_index(1, c);
    const float long_step = 4.f / kGridResolution;  // tests cascade 1 even inside [0,1]^3
    // a: occluded in every period; b: occluded, but seen in one period; c
    // (cascade 1, reached only by a long step): occluded.
    for (int period = 0; period < kOcclusionMemory; ++period) {
        mask.note_sample(cell_centre(0, a), kMinStep, false);
        mask.note_sample(cell_centre(0, b), kMinStep, period == 3);
        mask.note_sample(cell_centre(1, c), long_step, false);
        EXPECT_TRUE(bit_of(mask.visited(), ia));
        EXPECT_EQ(bit_of(mask.seen(), ib), period == 3);
        mask.update();
        EXPECT_FALSE(bit_of(mask.visited(), ia));  // marks cleared
        // Culled only once kOcclusionMemory periods have passed unseen.
        EXPECT_EQ(bit_of(mask.culled(), ia), period == kOcclusionMemory - 1) << period;
    }
    EXPECT_TRUE(bit_of(mask.culled(), ic));
    EXPECT_FALSE(bit_of(mask.culled(), ib));
    EXPECT_EQ(mask.recent()[ib], kOcclusionMemory - 4);
    EXPECT_NEAR(mask.fraction_culled(), 2.0 / (2.0 * kGridCells), 1e-12);
    // Periods where nothing reaches a: it stays culled. Then a probe sees it,
    // and it takes kOcclusionMemory unseen periods again to be culled.
    note_for(mask, {5.f, 5.f, 5.f}, kMinStep, false, 3);  // outside the grid: noted nowhere
    for (uint8_t byte : mask.visited()) ASSERT_EQ(byte, 0);
    EXPECT_TRUE(bit_of(mask.culled(), ia));
    note_for(mask, cell_centre(0, a), kMinStep, true, 1);
    EXPECT_FALSE(bit_of(mask.culled(), ia));
    EXPECT_TRUE(bit_of(mask.culled(), ic));
    note_for(mask, cell_centre(0, a), kMinStep, false, kOcclusionMemory - 1);
    EXPECT_FALSE(bit_of(mask.culled(), ia));
    note_for(mask, cell_centre(0, a), kMinStep, false, 1);
    EXPECT_TRUE(bit_of(mask.culled(), ia));
    // Marks taken before the warm-up ends are dropped, not applied.
    OcclusionMask fresh(1);
    for (int i = 0; i < kOcclusionMemory; ++i) {
        fresh.note_sample(cell_centre(0, b), kMinStep, false);
        fresh.clear_marks();
    }
    EXPECT_EQ(fresh.recent()[ib], kOcclusionMemory);
    EXPECT_FALSE(bit_of(fresh.culled(), ib));
}

// The cell a sample is noted in is the cell whose bit let the march emit
// it: on a random sparse grid, every emitted sample's marched_cell is
// occupied, for the fixed step and a cone, in one and three cascades.
TEST(NerfOcclusionMask, NotedCellIsTheCellTheMarchTested) {
    for (int n_cascades : {1, 3}) {
        for (float cone : {0.f, 1.f / 64}) {
            Rng rng(7 + n_cascades);
            std::vector<uint8_t> bits((size_t)n_cascades * kGridCells / 8);
            for (auto& byte : bits) byte = (uint8_t)(rng.next_u64() & rng.next_u64());  // ~1/4 of the cells
            MarchSettings m;
            m.n_cascades = n_cascades;
            m.cone_angle = cone;
            const Box3 box = cascade_box(n_cascades - 1);
            int samples = 0;
            for (int r = 0; r < 256; ++r) {
                const Vec3 o{-2.f + 0.1f * rng.next_float(), 0.5f + 0.4f * rng.next_float(), 0.1f + 0.8f * rng.next_float()};
                const Vec3 d = normalize(Vec3{1.f, rng.next_float() - 0.5f, rng.next_float() - 0.5f});
                march_ray(o, d, box, rng.next_float(), bits.data(), m, [&](Vec3 p, float, float dt) {
                    const uint32_t i = marched_cell(p, dt, n_cascades);
                    ASSERT_NE(i, kNoGridCell);
                    EXPECT_TRUE(grid_bit(bits.data(), i));
                    ++samples;
                });
            }
            EXPECT_GT(samples, 400) << n_cascades << " cascades, cone " << cone;
        }
    }
}

// Culling a cell takes it out of the training march and nothing else.
TEST(NerfOcclusionMask, TrainingBitsLeaveOutTheCulledCellsOnly) {
    OcclusionMask mask(1);
    const Cell3 hidden{60, 64, 64};
    note_for(mask, cell_centre(0, hidden), kMinStep, false, kOcclusionMemory);
    const std::vector<uint8_t> occupied(kGridCells / 8, 0xFF);
    std::vector<uint8_t> bits;
    mask.training_bits(occupied, bits);
    ASSERT_EQ(bits.size(), occupied.size());
    const uint32_t hidden_index = grid_index(0, hidden);
    size_t cleared = 0;
    for (uint32_t i = 0; i < kGridCells; ++i) cleared += !grid_bit(bits.data(), i);
    EXPECT_EQ(cleared, 1u);
    EXPECT_FALSE(grid_bit(bits.data(), hidden_index));
    // A ray along x through the hidden cell: the training march steps over
    // exactly the lattice points inside it.
    MarchSettings m;
    int full = 0, culled = 0, inside = 0;
    const Box3 cell = cell_box(0, hidden);
    const Vec3 o{-1.f, cell_centre(0, hidden).y, cell_centre(0, hidden).z};
    march_ray(o, {1, 0, 0}, cascade_box(0), 0.f, occupied.data(), m, [&](Vec3 p, float, float) {
        ++full;
        inside += p.x > cell.lo.x && p.x < cell.hi.x;
    });
    march_ray(o, {1, 0, 0}, cascade_box(0), 0.f, bits.data(), m, [&](Vec3, float, float) { ++culled; });
    EXPECT_GT(inside, 0);
    EXPECT_EQ(culled, full - inside);
}

TEST(NerfOcclusionMask, OneRayInSixteenProbes) {
    int probes = 0;
    for (uint32_t r = 0; r < 1024; ++r) probes += occlusion_probe_ray(r);
    EXPECT_EQ(probes, 1024 / (int)kOcclusionProbeEvery);
    EXPECT_TRUE(occlusion_probe_ray(0));
}
