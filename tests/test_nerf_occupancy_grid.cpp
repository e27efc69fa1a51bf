// The NeRF occupancy grid: its addressing and marching math
// (nerf/ray_marching_math.h: Morton order, cascades, cells, step sizes, the
// march that skips empty cells) and the host grid (nerf/occupancy_grid.h:
// bits of an analytic density, cascades, EMA decay, determinism).
#include "nerf/occupancy_grid.h"
#include "nerf/ray_marching_math.h"

#include "core/errors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace fusedngp;
using namespace fusedngp::nerf;

namespace {

std::vector<uint8_t> all_occupied(int n_cascades) { return std::vector<uint8_t>((size_t)n_cascades * kGridCells / 8, 0xFF); }

void set_bit(std::vector<uint8_t>& bits, uint32_t index) { bits[index >> 3] |= (uint8_t)(1u << (index & 7)); }

bool box_contains(const Box3& b, Vec3 p) {
    return p.x >= b.lo.x && p.x <= b.hi.x && p.y >= b.lo.y && p.y <= b.hi.y && p.z >= b.lo.z && p.z <= b.hi.z;
}

// Distance from p to the box's nearest point and to its farthest corner.
float box_min_distance(const Box3& b, Vec3 p) { return length(max(max(b.lo - p, p - b.hi), Vec3{0, 0, 0})); }
float box_max_distance(const Box3& b, Vec3 p) { return length(max(p - b.lo, b.hi - p)); }

DensityBatchFn sphere_density(Vec3 center, float radius, float density) {
    return [=](const Matrix<float>& pts, Matrix<float>& out) {
        for (Eigen::Index i = 0; i < pts.rows(); ++i) {
            Vec3 p{pts(i, 0), pts(i, 1), pts(i, 2)};
            out(i, 0) = length(p - center) < radius ? density : 0.f;
        }
    };
}

struct Sample {
    Vec3 p;
    float t, dt;
};

std::vector<Sample> march(Vec3 o, Vec3 d, const std::vector<uint8_t>& bits, const MarchSettings& m, float jitter = 0.f) {
    std::vector<Sample> out;
    march_ray(o, normalize(d), cascade_box(m.n_cascades - 1), jitter, bits.data(), m,
              [&](Vec3 p, float t, float dt) { out.push_back({p, t, dt}); });
    return out;
}

} // namespace

// ---- Addressing ----------------------------------------------------------

TEST(NerfGridMath, MortonRoundTripAndKnownCodes) {
    EXPECT_EQ(morton3(1, 0, 0), 1u);
    EXPECT_EQ(morton3(0, 1, 0), 2u);
    EXPECT_EQ(morton3(0, 0, 1), 4u);
    EXPECT_EQ(morton3(2, 0, 0), 8u);
    EXPECT_EQ(morton3(127, 127, 127), kGridCells - 1);
    std::vector<uint8_t> seen(kGridCells, 0);
    for (uint32_t z = 0; z < 128; ++z)
        for (uint32_t y = 0; y < 128; ++y)
            for (uint32_t x = 0; x < 128; ++x) {
                const uint32_t m = morton3(x, y, z);
                ASSERT_LT(m, kGridCells);
                seen[m] = 1;
                const Cell3 c = morton3_decode(m);
                ASSERT_TRUE(c.x == x && c.y == y && c.z == z);
            }
    for (uint8_t s : seen) ASSERT_EQ(s, 1);  // a bijection onto [0, 128^3)
}

TEST(NerfGridMath, CascadesFromAabbScale) {
    EXPECT_EQ(cascades_for_aabb_scale(1), 1);
    EXPECT_EQ(cascades_for_aabb_scale(2), 2);
    EXPECT_EQ(cascades_for_aabb_scale(16), 5);
    EXPECT_EQ(cascades_for_aabb_scale(128), 8);
    EXPECT_EQ(cascades_for_aabb_scale(0), 0);
    EXPECT_EQ(cascades_for_aabb_scale(3), 0);
    EXPECT_EQ(cascades_for_aabb_scale(256), 0);
    EXPECT_THROW(OccupancyGrid(3), InputError);
    EXPECT_EQ(OccupancyGrid(8).n_cascades(), 4);
}

TEST(NerfGridMath, CascadeOfKnownPoints) {
    EXPECT_EQ(cascade_of({0.5f, 0.5f, 0.5f}), 0);
    EXPECT_EQ(cascade_of({0.f + 1e-6f, 0.99f, 0.3f}), 0);
    EXPECT_EQ(cascade_of({1.f, 0.5f, 0.5f}), 0);  // max |p - 0.5| = 0.5: closed boxes
    EXPECT_EQ(cascade_of({0.f, 0.5f, 0.5f}), 0);
    EXPECT_EQ(cascade_of({1.0001f, 0.5f, 0.5f}), 1);
    EXPECT_EQ(cascade_of({1.5f, 0.5f, 0.5f}), 1);
    EXPECT_EQ(cascade_of({0.5f, -0.49f, 0.5f}), 1);
    EXPECT_EQ(cascade_of({0.5f, 0.5f, 1.6f}), 2);   // |1.1| in [1, 2)
    EXPECT_EQ(cascade_of({-63.4f, 0.5f, 0.5f}), 7);
    EXPECT_EQ(cascade_of({64.5f, 0.5f, 0.5f}), 7);
    EXPECT_EQ(cascade_of({64.6f, 0.5f, 0.5f}), 8);  // outside every cascade
    EXPECT_EQ(cascade_of({1000.f, 0.5f, 0.5f}), kMaxCascades);
    // Cascade k holds the points with 2^(k-2) < max |p - 0.5| <= 2^(k-1), inside its box B_k.
    Rng rng(3);
    for (int i = 0; i < 20000; ++i) {
        Vec3 p{rng.uniform(-70.f, 70.f), rng.uniform(-3.f, 3.f), rng.uniform(-1.f, 2.f)};
        if (i % 2) p = p * 0.02f + Vec3{0.5f, 0.5f, 0.5f};
        const int k = cascade_of(p);
        const float m = std::max(std::abs(p.x - 0.5f), std::max(std::abs(p.y - 0.5f), std::abs(p.z - 0.5f)));
        if (k == kMaxCascades) {
            EXPECT_GT(m, 64.f);
            continue;
        }
        EXPECT_LE(m, std::ldexp(1.f, k - 1));
        if (k > 0) {
            EXPECT_GT(m, std::ldexp(1.f, k - 2));
        }
        EXPECT_TRUE(box_contains(cascade_box(k), p));
    }
}

TEST(NerfGridMath, CellOfAndCellBoxAgree) {
    Rng rng(4);
    for (int i = 0; i < 20000; ++i) {
        const int k = (int)(rng.next_u64() % 4);
        const Box3 cb = cascade_box(k);
        Vec3 p{rng.uniform(cb.lo.x, cb.hi.x), rng.uniform(cb.lo.y, cb.hi.y), rng.uniform(cb.lo.z, cb.hi.z)};
        const Cell3 c = cell_of(p, k);
        const Box3 b = cell_box(k, c);
        ASSERT_TRUE(box_contains(b, p));
        EXPECT_NEAR(b.extent().x, cascade_scale(k) / 128.f, 1e-6f * cascade_scale(k));
        EXPECT_EQ(grid_index(k, c), (uint32_t)k * kGridCells + morton3(c.x, c.y, c.z));
    }
    EXPECT_EQ(cell_of({0.f, 0.f, 0.f}, 0).x, 0u);
    EXPECT_EQ(cell_of({1.f, 1.f, 1.f}, 0).x, 127u);  // clamped onto the last cell
    EXPECT_EQ(cell_of({0.5f, 0.5f, 0.5f}, 3).x, 64u);
    EXPECT_EQ(cell_of({-0.5f, 0.5f, 0.5f}, 1).x, 0u);
}

// cell_of multiplies by 2^-k instead of dividing by 2^k: the same float, so
// the same cell, for points inside and far outside every cascade.
TEST(NerfGridMath, CellOfMatchesTheDivisionByTheCascadeScale) {
    Rng rng(5);
    for (int k = 0; k < kMaxCascades; ++k) {
        EXPECT_EQ(inverse_cascade_scale(k) * cascade_scale(k), 1.f) << k;
        for (int i = 0; i < 20000; ++i) {
            const float p = i % 2 ? rng.uniform(-0.5f, 1.5f) * cascade_scale(k) : rng.uniform(-300.f, 300.f);
            const float q = ((p - 0.5f) / cascade_scale(k) + 0.5f) * (float)kGridResolution;
            const int c = (int)std::floor(q);
            const uint32_t want = (uint32_t)std::clamp(c, 0, kGridResolution - 1);
            ASSERT_EQ(cell_of(Vec3{p, p, p}, k).x, want) << "p " << p << " cascade " << k;
        }
    }
}

TEST(NerfGridMath, StepSizes) {
    EXPECT_NEAR(kMinStep, std::sqrt(3.f) / 1024.f, 1e-9f);
    for (float t : {0.f, 0.5f, 3.f, 100.f}) EXPECT_EQ(march_step(t, 0.f, 8), kMinStep);  // synthetic: fixed step
    const float cone = 1.f / 256;
    EXPECT_EQ(march_step(0.1f, cone, 8), kMinStep);      // 0.00039 < min
    EXPECT_FLOAT_EQ(march_step(1.f, cone, 8), 1.f / 256);  // cone-traced
    EXPECT_FLOAT_EQ(max_step(1), std::sqrt(3.f) / 128.f);
    EXPECT_FLOAT_EQ(max_step(8), std::sqrt(3.f));
    EXPECT_FLOAT_EQ(march_step(1000.f, cone, 8), std::sqrt(3.f));   // capped at a coarsest cell diagonal
    EXPECT_FLOAT_EQ(march_step(1000.f, cone, 3), std::sqrt(3.f) * 4 / 128);
}

TEST(NerfGridMath, RayBoxInterval) {
    float t0, t1;
    const Box3 unit = cascade_box(0);
    ASSERT_TRUE(ray_box_interval({-1, 0.5f, 0.5f}, safe_inverse({1, 0, 0}), unit, t0, t1));
    EXPECT_FLOAT_EQ(t0, 1.f);
    EXPECT_FLOAT_EQ(t1, 2.f);
    ASSERT_TRUE(ray_box_interval({0.5f, 0.5f, 0.5f}, safe_inverse({0, 0, -1}), unit, t0, t1));  // inside
    EXPECT_EQ(t0, 0.f);
    EXPECT_FLOAT_EQ(t1, 0.5f);
    EXPECT_FALSE(ray_box_interval({-1, 2, 0.5f}, safe_inverse({1, 0, 0}), unit, t0, t1));  // misses
    EXPECT_FALSE(ray_box_interval({2, 0.5f, 0.5f}, safe_inverse({1, 0, 0}), unit, t0, t1));  // behind
}

// ---- Marching ------------------------------------------------------------

TEST(NerfRayMarch, DenseGridGivesTheFixedLattice) {
    MarchSettings m;
    std::vector<Sample> s = march({-1, 0.3f, 0.6f}, {1, 0, 0}, all_occupied(1), m);
    // t = 1 + j * min step: 591 or 592 points (the last lands within rounding of x = 1).
    ASSERT_GE(s.size(), 591u);
    ASSERT_LE(s.size(), 592u);
    for (size_t i = 0; i < s.size(); ++i) {
        EXPECT_EQ(s[i].dt, kMinStep);
        EXPECT_NEAR(s[i].t, 1.f + i * kMinStep, 1e-5f);
    }
    // Jitter shifts the lattice by jitter * dt; max_samples caps it.
    std::vector<Sample> j = march({-1, 0.3f, 0.6f}, {1, 0, 0}, all_occupied(1), m, 0.5f);
    EXPECT_FLOAT_EQ(j[0].t, 1.f + 0.5f * kMinStep);
    m.max_samples = 10;
    EXPECT_EQ(march({-1, 0.3f, 0.6f}, {1, 0, 0}, all_occupied(1), m).size(), 10u);
    // No grid, no samples; a ray missing the box, no samples.
    m.max_samples = 1024;
    EXPECT_TRUE(march({-1, 0.3f, 0.6f}, {1, 0, 0}, std::vector<uint8_t>(kGridCells / 8, 0), m).empty());
    EXPECT_TRUE(march({-1, 3.f, 0.6f}, {1, 0, 0}, all_occupied(1), m).empty());
}

// One occupied cell (pooled into the coarser cascades as OccupancyGrid does):
// the sparse march emits a subset of the dense (all-occupied) lattice, every
// lattice point inside the cell, and nothing outside the cells its bit
// reaches: the cell itself for cone 0, a coarser cell holding it where a long
// step tests a coarser cascade. A point within rounding of a face may go
// either way.
TEST(NerfRayMarch, OneOccupiedCellGetsOnlyItsLatticePoints) {
    struct Case {
        int n_cascades, k;
        Cell3 cell;
        float cone;
    };
    const Case cases[] = {{1, 0, {70, 40, 90}, 0.f}, {3, 0, {3, 120, 64}, 1.f / 256}, {3, 2, {100, 70, 20}, 1.f / 256},
                          {2, 1, {10, 64, 64}, 0.f}};
    Rng rng(11);
    for (const Case& c : cases) {
        SCOPED_TRACE("cascade " + std::to_string(c.k) + " cone " + std::to_string(c.cone));
        const Box3 cell = cell_box(c.k, c.cell);
        std::vector<uint8_t> bits((size_t)c.n_cascades * kGridCells / 8, 0);
        set_bit(bits, grid_index(c.k, c.cell));
        pool_cascade_bits(bits, c.n_cascades);
        MarchSettings m;
        m.n_cascades = c.n_cascades;
        m.cone_angle = c.cone;
        m.max_samples = 1 << 20;
        const float tol = 1e-5f * cascade_scale(c.n_cascades - 1);
        Box3 interior = cell;
        interior.lo += Vec3{tol, tol, tol};
        interior.hi -= Vec3{tol, tol, tol};
        int rays_with_samples = 0;
        for (int r = 0; r < 200; ++r) {
            // From a random point at 1.5 cascade sizes towards a random point of the cell.
            const Vec3 target{rng.uniform(cell.lo.x, cell.hi.x), rng.uniform(cell.lo.y, cell.hi.y),
                              rng.uniform(cell.lo.z, cell.hi.z)};
            const Vec3 origin = target + normalize(Vec3{rng.uniform(-1.f, 1.f), rng.uniform(-1.f, 1.f),
                                                        rng.uniform(-1.f, 1.f)}) * 1.5f * cascade_scale(c.k);
            const Vec3 dir = target - origin;
            const float jitter = rng.next_float();
            std::vector<Sample> sparse = march(origin, dir, bits, m, jitter);
            std::vector<Sample> dense = march(origin, dir, all_occupied(c.n_cascades), m, jitter);
            for (const Sample& s : sparse) {
                bool on_lattice = false;
                for (const Sample& d : dense) on_lattice = on_lattice || (d.t == s.t && d.dt == s.dt);
                EXPECT_TRUE(on_lattice) << s.t;
                const int k = march_cascade(s.p, s.dt, c.n_cascades);
                if (c.cone == 0.f) {
                    EXPECT_EQ(k, cascade_of(s.p));
                }
                // The tested cell is the occupied one or a coarser cell holding it.
                const Box3 tested = cell_box(k, cell_of(s.p, k));
                EXPECT_LE(box_min_distance(tested, s.p), tol);
                EXPECT_TRUE(tested.lo.x <= cell.lo.x + tol && tested.lo.y <= cell.lo.y + tol &&
                            tested.lo.z <= cell.lo.z + tol && tested.hi.x >= cell.hi.x - tol &&
                            tested.hi.y >= cell.hi.y - tol && tested.hi.z >= cell.hi.z - tol)
                    << "sample at t=" << s.t << " outside the cells the occupied bit reaches";
            }
            int missing = 0, expected = 0;
            for (const Sample& d : dense) {
                const int k = march_cascade(d.p, d.dt, c.n_cascades);
                if (!grid_bit(bits.data(), grid_index(k, cell_of(d.p, k)))) continue;
                ++expected;
                bool found = false;
                for (const Sample& s : sparse) found = found || s.t == d.t;
                if (found) continue;
                ++missing;
                EXPECT_FALSE(box_contains(interior, d.p)) << "interior lattice point skipped at t=" << d.t;
            }
            EXPECT_LE(missing, 1);
            if (expected > 0) ++rays_with_samples;
        }
        EXPECT_GT(rays_with_samples, 100);  // most rays do cross lattice points in the cell
    }
}

// The fixed-step walk skips empty cells, yet emits the lattice points
// lattice_t(t_start, k) whose tested cell is occupied, each tested on its own
// (what the GPU's warp march does, 32 at a time).
TEST(NerfRayMarch, FixedStepWalkEmitsEveryOccupiedLatticePoint) {
    const MarchSettings m{0.f, 2, 1024};
    std::vector<uint8_t> bits((size_t)m.n_cascades * kGridCells / 8, 0);
    Rng rng(11);
    for (uint32_t i = 0; i < m.n_cascades * kGridCells; ++i)
        if (rng.uniform(0.f, 1.f) < 0.05f) set_bit(bits, i);
    const Box3 bounds = cascade_box(m.n_cascades - 1);
    int same = 0, with_samples = 0;
    const int n_rays = 2000;
    for (int r = 0; r < n_rays; ++r) {
        const Vec3 o{rng.uniform(-1.f, 2.f), rng.uniform(-1.f, 2.f), 3.f};
        const Vec3 d = normalize(Vec3{0.5f, 0.5f, 0.5f} + Vec3{rng.uniform(-.3f, .3f), rng.uniform(-.3f, .3f), 0} - o);
        const float jitter = rng.uniform(0.f, 1.f);
        std::vector<Sample> walk, each;
        march_ray(o, d, bounds, jitter, bits.data(), m, [&](Vec3 p, float t, float dt) { walk.push_back({p, t, dt}); });
        const MarchCursor c = march_start(o, d, bounds, jitter, m);
        for (uint32_t k = 0; (int)each.size() < m.max_samples; ++k) {
            const float t = lattice_t(c.t_start, k);
            if (!(t <= c.t1)) break;
            const Vec3 p = ray_point(o, d, t);
            if (lattice_point_occupied(p, kMinStep, bits.data(), m)) each.push_back({p, t, kMinStep});
        }
        bool equal = walk.size() == each.size();
        for (size_t i = 0; equal && i < walk.size(); ++i) equal = walk[i].t == each[i].t && walk[i].dt == each[i].dt;
        same += equal;
        with_samples += !each.empty();
    }
    EXPECT_GT(with_samples, n_rays / 2);
    // A lattice point within float rounding of a cell face may be skipped
    // with the cell before it: allow one ray in 500.
    EXPECT_GE(same, n_rays - n_rays / 500) << same << " of " << n_rays;
}

TEST(NerfRayMarch, LongStepsTestCoarserCascades) {
    EXPECT_EQ(dt_cascade(kMinStep, 8), 0);            // 2 dt < 1/128
    EXPECT_EQ(dt_cascade(1.f / 256, 8), 0);           // 2 dt = 1/128: still cascade 0
    EXPECT_EQ(dt_cascade(1.f / 200, 8), 1);
    EXPECT_EQ(dt_cascade(0.1f, 8), 5);                // 2^5/128 = 0.25 >= 0.2
    EXPECT_EQ(dt_cascade(0.1f, 3), 2);                // at most the coarsest cascade
    EXPECT_EQ(march_cascade({0.5f, 0.5f, 0.5f}, 0.1f, 8), 5);
    EXPECT_EQ(march_cascade({5.f, 0.5f, 0.5f}, kMinStep, 8), 4);
    EXPECT_EQ(march_cascade({5.f, 0.5f, 0.5f}, kMinStep, 4), 4);  // outside the grid stays outside
}

TEST(NerfRayMarch, PoolingMarksTheCoarseCellsHoldingAnOccupiedCell) {
    std::vector<uint8_t> bits(3 * (size_t)kGridCells / 8, 0);
    const Cell3 fine{77, 13, 100};
    set_bit(bits, grid_index(0, fine));
    pool_cascade_bits(bits, 3);
    const Vec3 p = cell_box(0, fine).center();
    for (int k = 0; k < 3; ++k) {
        EXPECT_TRUE(grid_bit(bits.data(), grid_index(k, cell_of(p, k)))) << k;
        size_t set = 0;
        for (uint32_t i = 0; i < kGridCells; ++i) set += grid_bit(bits.data(), (uint32_t)k * kGridCells + i);
        EXPECT_EQ(set, 1u) << k;  // exactly one cell per cascade
    }
}

// ---- The host grid ---------------------------------------------------------

TEST(NerfOccupancyGrid, StartsFullyOccupied) {
    OccupancyGrid grid(2);
    EXPECT_EQ(grid.fraction_occupied(), 1.f);
    EXPECT_TRUE(grid.occupied({0.5f, 0.5f, 0.5f}));
    EXPECT_TRUE(grid.occupied({-0.4f, 1.4f, 0.5f}));
    EXPECT_FALSE(grid.occupied({-0.6f, 0.5f, 0.5f}));  // outside the 2 cascades ([-0.5, 1.5]^3)
}

TEST(NerfOccupancyGrid, SampleCountsPerUpdate) {
    OccupancyGrid grid(2);
    size_t rows = 0;
    auto counting = [&](const Matrix<float>& pts, Matrix<float>& out) {
        rows += (size_t)pts.rows();
        out.setConstant(1.f);
    };
    Rng rng(1);
    grid.update(counting, 0, rng);
    EXPECT_EQ(rows, 2 * (size_t)kGridCells);  // warm-up: every cell of both cascades
    rows = 0;
    grid.update(counting, 256, rng);
    EXPECT_EQ(rows, (size_t)kGridCells);      // then 1/4 uniform + 1/4 occupied per cascade
}

TEST(NerfOccupancyGrid, SphereSetsExactlyTheCellsItTouches) {
    const Vec3 center{0.4f, 0.55f, 0.5f};
    const float radius = 0.25f;
    OccupancyGrid grid(1);
    Rng rng(2);
    grid.update(sphere_density(center, radius, 100.f), 0, rng);
    EXPECT_FLOAT_EQ(grid.threshold(), kOccupancyDensity);  // the mean (~6.5) is above 5.91
    EXPECT_NEAR(kOccupancyDensity, 0.01f * 1024.f / std::sqrt(3.f), 1e-4f);
    size_t inside = 0, boundary_set = 0, boundary = 0;
    for (uint32_t m = 0; m < kGridCells; ++m) {
        const Box3 b = cell_box(0, morton3_decode(m));
        const bool bit = grid_bit(grid.bits().data(), m);
        if (box_max_distance(b, center) < radius) {
            ASSERT_TRUE(bit);
            ++inside;
        } else if (box_min_distance(b, center) >= radius) {
            ASSERT_FALSE(bit);
        } else {
            ++boundary;
            boundary_set += bit;
        }
    }
    EXPECT_GT(inside, 100000u);
    EXPECT_GT(boundary_set, 0u);        // a boundary cell is set when its jittered point falls inside
    EXPECT_LT(boundary_set, boundary);
    EXPECT_NEAR(grid.fraction_occupied(), (inside + boundary_set) / (double)kGridCells, 1e-6);
    EXPECT_TRUE(grid.occupied(center));
    EXPECT_FALSE(grid.occupied({0.95f, 0.95f, 0.95f}));
}

TEST(NerfOccupancyGrid, CascadesCoverTheirBoxes) {
    const Vec3 center{0.5f, 0.5f, 0.5f};
    const float radius = 1.3f;  // reaches into cascade 2 ([-1.5, 2.5]^3)
    OccupancyGrid grid(4);
    Rng rng(3);
    grid.update(sphere_density(center, radius, 100.f), 0, rng);
    for (int k = 0; k < 3; ++k) EXPECT_GT(grid.fraction_occupied(k), 0.f);
    EXPECT_EQ(grid.fraction_occupied(0), 1.f);  // the unit cube is inside the sphere
    Rng points(4);
    int checked = 0;
    for (int i = 0; i < 20000; ++i) {
        const Vec3 p{points.uniform(-2.f, 3.f), points.uniform(-2.f, 3.f), points.uniform(-2.f, 3.f)};
        const int k = cascade_of(p);
        const float d = length(p - center);
        if (k >= 3) {
            EXPECT_FALSE(grid.occupied(p));
            continue;
        }
        const float cell_diagonal = std::sqrt(3.f) * cascade_scale(k) / 128.f;
        if (d < radius - cell_diagonal) {
            EXPECT_TRUE(grid.occupied(p)) << p.x << " " << p.y << " " << p.z;
        } else if (d > radius + cell_diagonal) {
            EXPECT_FALSE(grid.occupied(p)) << p.x << " " << p.y << " " << p.z;
        } else {
            continue;
        }
        ++checked;
    }
    EXPECT_GT(checked, 8000);
}

TEST(NerfOccupancyGrid, VanishedObjectDecaysBelowTheThreshold) {
    // A stays (density 100, mean ~11 keeps the threshold at 5.91); B (density
    // 10) vanishes after the warm-up: 10 * 0.95^10 = 5.99 is still above the
    // threshold, 10 * 0.95^11 = 5.69 is not.
    const Vec3 a_center{0.4f, 0.4f, 0.4f}, b_center{0.85f, 0.85f, 0.85f};
    DensityBatchFn a = sphere_density(a_center, 0.3f, 100.f);
    DensityBatchFn b = sphere_density(b_center, 0.08f, 10.f);
    auto both = [&](const Matrix<float>& pts, Matrix<float>& out) {
        Matrix<float> tmp(pts.rows(), 1);
        a(pts, out);
        b(pts, tmp);
        out = out.cwiseMax(tmp);
    };
    OccupancyGrid grid(1);
    Rng rng(5);
    grid.update(both, 0, rng);
    ASSERT_TRUE(grid.occupied(b_center));
    for (int m = 1; m <= 11; ++m) {
        grid.update(a, 256 + 16 * m, rng);
        EXPECT_FLOAT_EQ(grid.threshold(), kOccupancyDensity) << m;
        EXPECT_EQ(grid.occupied(b_center), m <= 10) << m;
        EXPECT_TRUE(grid.occupied(a_center));
    }
}

TEST(NerfOccupancyGrid, DeterministicForASeed) {
    auto smooth = [](const Matrix<float>& pts, Matrix<float>& out) {
        for (Eigen::Index i = 0; i < pts.rows(); ++i) {
            Vec3 p{pts(i, 0), pts(i, 1), pts(i, 2)};
            out(i, 0) = 100.f * std::exp(-length_squared(p - Vec3{0.5f, 0.5f, 0.5f}) / 0.02f);
        }
    };
    auto run = [&](uint64_t seed) {
        OccupancyGrid grid(1);
        Rng rng(seed);
        grid.update(smooth, 0, rng);
        grid.update(smooth, 300, rng);
        return grid.density();
    };
    const std::vector<float> first = run(7);
    EXPECT_EQ(first, run(7));
    EXPECT_NE(first, run(8));
}
