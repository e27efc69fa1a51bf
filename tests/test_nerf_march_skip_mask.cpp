// The fixed-step march's skip mask (nerf/march_skip_mask.h): the mask against
// its definition, and the round test against the lattice points themselves.
#include "nerf/march_skip_mask.h"
#include "nerf/occupancy_grid.h"
#include "nerf/ray_marching_math.h"
#include "render/camera.h"

#include "core/errors.h"
#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace fusedngp;
using namespace fusedngp::nerf;

namespace {

void set_cell(std::vector<uint8_t>& bits, uint32_t index) { bits[index >> 3] |= (uint8_t)(1u << (index & 7u)); }

// Occupied: the cells of cascade 0 within `radius` of `centre` and, in every
// cascade, `scattered` random cells; pooled as the occupancy grid pools.
std::vector<uint8_t> ball_grid(int n_cascades, Vec3 centre, float radius, int scattered, uint64_t seed) {
    std::vector<uint8_t> bits((size_t)n_cascades * kGridCells / 8, 0);
    for (uint32_t m = 0; m < kGridCells; ++m) {
        const Box3 b = cell_box(0, morton3_decode(m));
        if (length(0.5f * (b.lo + b.hi) - centre) < radius) set_cell(bits, m);
    }
    Rng rng(seed);
    for (int k = 0; k < n_cascades; ++k)
        for (int i = 0; i < scattered; ++i) set_cell(bits, (uint32_t)k * kGridCells + (uint32_t)(rng.next_u64() % kGridCells));
    pool_cascade_bits(bits, n_cascades);
    return bits;
}

// The mask by its definition: every block within one block (per axis, same
// cascade) of an occupied cell is marked.
std::vector<uint8_t> mask_by_definition(const std::vector<uint8_t>& bits, int n_cascades) {
    std::vector<uint8_t> mask((size_t)n_cascades * kSkipBlocks, 0);
    for (uint32_t i = 0; i < (uint32_t)n_cascades * kGridCells; ++i) {
        if (!grid_bit(bits.data(), i)) continue;
        const int k = (int)(i / kGridCells);
        const Cell3 c = morton3_decode(i % kGridCells);
        const int bx = (int)(c.x / 8), by = (int)(c.y / 8), bz = (int)(c.z / 8);
        for (int z = bz - 1; z <= bz + 1; ++z)
            for (int y = by - 1; y <= by + 1; ++y)
                for (int x = bx - 1; x <= bx + 1; ++x)
                    if (x >= 0 && y >= 0 && z >= 0 && x < 16 && y < 16 && z < 16)
                        mask[skip_block_index(k, Cell3{(uint32_t)x, (uint32_t)y, (uint32_t)z})] = 1;
    }
    return mask;
}

Vec3 random_unit(Rng& rng) {
    for (;;) {
        const Vec3 v{2 * rng.next_float() - 1, 2 * rng.next_float() - 1, 2 * rng.next_float() - 1};
        const float l = length(v);
        if (l > 0.1f && l <= 1.f) return v * (1.f / l);
    }
}

// A ray from a random point outside the grid of n_cascades towards a random
// point of the unit cube (where the test grids' ball is).
Ray ray_into_unit_cube(Rng& rng, int n_cascades) {
    const Vec3 target{0.05f + 0.9f * rng.next_float(), 0.05f + 0.9f * rng.next_float(), 0.05f + 0.9f * rng.next_float()};
    const Vec3 back = random_unit(rng);
    return {target + back * (1.5f * cascade_scale(n_cascades - 1)), -1.f * back};
}

struct RoundCounts {
    size_t rounds = 0, empty = 0, occupied = 0, empty_but_occupied = 0;
};

// Rays into the unit cube (ray_into_unit_cube): every whole round inside the
// box, tested by lattice_round_empty and point by point.
RoundCounts check_rounds(const std::vector<uint8_t>& bits, const std::vector<uint8_t>& mask, int n_cascades,
                         int n_rays, uint64_t seed) {
    const Box3 bounds = cascade_box(n_cascades - 1);
    MarchSettings m;
    m.n_cascades = n_cascades;
    Rng rng(seed);
    RoundCounts out;
    for (int r = 0; r < n_rays; ++r) {
        const Ray ray = ray_into_unit_cube(rng, n_cascades);
        const Vec3 origin = ray.origin, dir = ray.direction;
        const MarchCursor c = march_start(origin, dir, bounds, rng.next_float(), m);
        for (uint32_t k0 = 0; c.t <= c.t1 && lattice_t(c.t_start, k0 + 31) <= c.t1; k0 += 32) {
            bool any = false;
            for (uint32_t j = 0; j < 32; ++j)
                any |= lattice_point_occupied(ray_point(origin, dir, lattice_t(c.t_start, k0 + j)), kMinStep,
                                              bits.data(), m);
            const bool empty = lattice_round_empty(mask.data(), origin, dir, c.t_start, k0, n_cascades);
            ++out.rounds;
            out.empty += empty;
            out.occupied += any;
            out.empty_but_occupied += empty && any;
        }
    }
    return out;
}

} // namespace

TEST(NerfMarchSkipMask, BlockIndexIsTheCellsGridIndexOver512) {
    Rng rng(5);
    for (int i = 0; i < 1000; ++i) {
        const int k = (int)(rng.next_u64() % kMaxCascades);
        const Cell3 c{(uint32_t)(rng.next_u64() % 128), (uint32_t)(rng.next_u64() % 128), (uint32_t)(rng.next_u64() % 128)};
        EXPECT_EQ(grid_index(k, c) >> 9, skip_block_index(k, Cell3{c.x / 8, c.y / 8, c.z / 8}));
    }
}

TEST(NerfMarchSkipMask, MaskMatchesItsDefinition) {
    for (int n_cascades : {1, 3}) {
        const std::vector<uint8_t> bits = ball_grid(n_cascades, {0.5f, 0.45f, 0.55f}, 0.2f, 40, 11 + n_cascades);
        const std::vector<uint8_t> mask = march_skip_mask(bits, n_cascades);
        const std::vector<uint8_t> want = mask_by_definition(bits, n_cascades);
        ASSERT_EQ(mask.size(), want.size());
        size_t marked = 0;
        for (size_t i = 0; i < mask.size(); ++i) {
            EXPECT_EQ(mask[i] != 0, want[i] != 0) << "block " << i << ", " << n_cascades << " cascades";
            marked += want[i] != 0;
        }
        // Neither all nor none: the comparison means something.
        EXPECT_GT(marked, mask.size() / 20);
        EXPECT_LT(marked, mask.size() - mask.size() / 5);
    }
}

TEST(NerfMarchSkipMask, EmptyRoundsHoldNoOccupiedLatticePoint) {
    for (int n_cascades : {1, 2, 3}) {
        SCOPED_TRACE(std::to_string(n_cascades) + " cascades");
        const std::vector<uint8_t> bits = ball_grid(n_cascades, {0.5f, 0.45f, 0.55f}, 0.25f, 30, 17 + n_cascades);
        const std::vector<uint8_t> mask = march_skip_mask(bits, n_cascades);
        const RoundCounts c = check_rounds(bits, mask, n_cascades, 3000, 23 + n_cascades);
        std::printf("%d cascades: %zu rounds, %zu empty by the mask, %zu with occupied points\n", n_cascades, c.rounds,
                    c.empty, c.occupied);
        EXPECT_EQ(c.empty_but_occupied, 0u);
        // The test sees both kinds of round, and the mask rules out most of
        // the rounds that are empty.
        EXPECT_GT(c.occupied, c.rounds / 100);
        EXPECT_GT(c.empty, (c.rounds - c.occupied) / 2);
    }
}

TEST(NerfMarchSkipMask, OneCellMarksItsNeighbourBlocksAndAFullGridHasNoEmptyRound) {
    std::vector<uint8_t> bits(kGridCells / 8, 0);
    set_cell(bits, grid_index(0, Cell3{64, 64, 64}));
    // One occupied cell marks its block's 3x3x3 neighbourhood only.
    const std::vector<uint8_t> mask = march_skip_mask(bits, 1);
    size_t marked = 0;
    for (uint8_t b : mask) marked += b != 0;
    EXPECT_EQ(marked, 27u);
    std::fill(bits.begin(), bits.end(), 0xFF);
    const std::vector<uint8_t> full = march_skip_mask(bits, 1);
    const RoundCounts c = check_rounds(bits, full, 1, 200, 3);
    EXPECT_GT(c.rounds, 0u);
    EXPECT_EQ(c.empty, 0u);
}

TEST(NerfMarchSkipMask, RejectsBitsOfTheWrongSize) {
    EXPECT_THROW(march_skip_mask(std::vector<uint8_t>(kGridCells / 8 + 1, 0), 1), InputError);
    EXPECT_THROW(march_skip_mask(std::vector<uint8_t>(kGridCells / 8, 0), 2), InputError);
}

// march_ray with the mask against march_ray without it: the same samples,
// exactly, with the fixed step and with a cone (whose steps outgrow the
// finest cascades), on 1 to 4 cascades.
TEST(NerfMarchSkipMask, MarchesWithTheMaskPlaceTheSamplesOfMarchesWithout) {
    for (int n_cascades : {1, 2, 4}) {
        for (float cone : {0.f, 1.f / 256.f}) {
            SCOPED_TRACE(std::to_string(n_cascades) + " cascades, cone " + std::to_string(cone));
            const std::vector<uint8_t> bits = ball_grid(n_cascades, {0.5f, 0.45f, 0.55f}, 0.25f, 30, 31 + n_cascades);
            const std::vector<uint8_t> mask = march_skip_mask(bits, n_cascades);
            MarchSettings m;
            m.n_cascades = n_cascades;
            m.cone_angle = cone;
            const Box3 bounds = cascade_box(n_cascades - 1);
            Rng rng(41 + n_cascades);
            size_t rays_with_samples = 0, rays_past_clear_blocks = 0, samples = 0;
            for (int r = 0; r < 2000; ++r) {
                const Ray ray = ray_into_unit_cube(rng, n_cascades);
                const Vec3 origin = ray.origin, dir = ray.direction;
                const float jitter = rng.next_float();
                std::vector<float> plain, skipping;
                march_ray(origin, dir, bounds, jitter, bits.data(), m, [&](Vec3, float t, float) { plain.push_back(t); });
                bool clear_block = false;
                march_ray(origin, dir, bounds, jitter, bits.data(), m, [&](Vec3, float t, float) { skipping.push_back(t); },
                          mask.data());
                // Whether the ray meets a clear block at all (the mask has work to do).
                MarchCursor c = march_start(origin, dir, bounds, jitter, m);
                for (float t = c.t; t <= c.t1 && !clear_block; t += 0.02f) {
                    const Vec3 p = ray_point(origin, dir, t);
                    const int k = cascade_of(p);
                    clear_block = k < n_cascades && mask[skip_block_index(k, block_of(cell_of(p, k)))] == 0;
                }
                ASSERT_EQ(skipping, plain) << "ray " << r;
                rays_with_samples += !plain.empty();
                rays_past_clear_blocks += clear_block;
                samples += plain.size();
            }
            EXPECT_GT(rays_with_samples, 200u);
            EXPECT_GT(rays_past_clear_blocks, 1000u);
            EXPECT_GT(samples, 5000u);
        }
    }
}
