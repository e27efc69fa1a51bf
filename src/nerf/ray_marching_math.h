// Per-ray marching math of the NeRF mode, shared by the CPU reference and the
// future CUDA kernels (FUSEDNGP_HD): the cascaded occupancy grid's addressing,
// the step size rule and the march that skips empty cells.
//
// Coordinates. The scene lives in model space, the unit cube [0,1]^3 centred
// at 0.5 (as instant-ngp). Cascade k (k = 0 .. n_cascades-1, at most 8) is a
// 128^3 grid over the box
//
//   B_k = [0.5 - 2^(k-1), 0.5 + 2^(k-1)]^3      (B_0 = [0,1]^3, B_1 = [-0.5,1.5]^3, ...)
//
// so its cells have side 2^k / 128. A point belongs to the finest cascade that
// holds it: cascade_of(p) = the smallest k with max_a |p_a - 0.5| <= 2^(k-1)
// (closed boxes: the faces of [0,1]^3 belong to cascade 0), or kMaxCascades
// where no cascade does.
//
// Cell index. Within cascade k, the point's cell is
//   q = (p - 0.5) / 2^k + 0.5,   cell_a = clamp(floor(128 q_a), 0, 127)
// (the clamp puts the closed box's upper faces into the last cells)
// and its index in the grid's arrays (density, bits) is
//   index = k * 128^3 + morton3(cell_x, cell_y, cell_z)
// with morton3 interleaving the 7 bits of each axis (bit 3i: x_i, 3i+1: y_i,
// 3i+2: z_i). The bitfield holds one bit per cell: bit (index % 8) of byte
// (index / 8), so a byte covers a 2x2x2 block (Morton order).
//
// Step size (cone tracing, instant-ngp's rule):
//   dt(t) = clamp(t * cone_angle, kMinStep, max_step(n_cascades))
//   kMinStep = sqrt(3) / 1024         (1024 steps across the unit cube's diagonal)
//   max_step(n) = sqrt(3) * 2^(n-1) / 128   (a cell diagonal of the coarsest cascade)
// cone_angle 0 (synthetic scenes) gives the fixed step kMinStep; instant-ngp
// uses 1/256 for real scenes with a large aabb_scale. Instant-ngp caps at the
// 8-cascade value sqrt(3) whatever the scene; we cap at the coarsest cascade in
// use (the same for aabb_scale 128), so small scenes never take steps longer
// than their coarsest cell's diagonal.
// `dir` is unit length throughout, so t and dt are model-space distances.
//
// Sample positions. A ray enters the marching box at t0 (>= 0) and the march
// starts at t = t0 + jitter * dt(t0), jitter in [0,1) from the caller (0 for a
// fixed lattice, random in training against aliasing). The candidate samples
// are one fixed lattice per ray. With cone 0 it is closed-form,
// t_k = fma(k, kMinStep, t_start) (lattice_t), so any lattice point can be
// computed on its own: the GPU marches a ray with a warp, 32 lattice points at
// a time, and gets the same points as this sequential walk. With a cone t
// advances by the plain recurrence t <- t + dt(t) (instant-ngp's cone lattice
// is the closed form of the same recurrence in its "stepping space"). Points
// are p = fma(dir, t, origin) per axis (ray_point), one rounding on every
// backend.
// At each lattice point p = o + t dir the march tests p's cell bit in the
// lookup cascade
//   march_cascade(p, dt) = max(cascade_of(p), dt_cascade(dt)),
//   dt_cascade(dt) = the smallest k with 2^k / 128 >= 2 dt (at most n_cascades-1)
// so a step is never longer than half the cell it tests (instant-ngp's
// mip_from_dt; with cone 0 it is always cascade_of(p)), except in the coarsest
// cascade, where dt may grow to max_step. An occupied cell
// emits the sample (p, t, dt(t)); an empty cell is skipped by advancing t
// along the lattice until it passes the cell's exit (t_exit = where the ray
// leaves the axis-aligned cell). The coarse cascades' inner region must then
// be conservative: OccupancyGrid ORs every cascade's bits into the next
// coarser one's inner octant (pool_cascade_bit below). Skipping never moves
// off the lattice, so the samples of a sparse grid are exactly the lattice
// points of a dense (all-occupied) grid whose tested cell is occupied, except a
// lattice point within float rounding of a cell face, which may be attributed
// to either side. The march ends at the box's exit or at max_samples.
#pragma once

#include "geometry/vec3.h"

#include <cstdint>

namespace fusedngp::nerf {

constexpr int kGridResolution = 128;
constexpr uint32_t kGridCells = 128u * 128u * 128u;  // cells per cascade
constexpr int kMaxCascades = 8;
constexpr float kMinStep = 1.7320508075688772f / 1024.f;
// The occupancy grid's density threshold cap (occupancy_grid.h): an optical
// thickness of 0.01 over one minimum step.
constexpr float kOccupancyDensity = 0.01f / kMinStep;

// n_cascades = log2(aabb_scale) + 1 for aabb_scale a power of two in [1, 128];
// 0 where aabb_scale is not one.
FUSEDNGP_HD int cascades_for_aabb_scale(int aabb_scale) {
    for (int k = 0; k < kMaxCascades; ++k)
        if (aabb_scale == (1 << k)) return k + 1;
    return 0;
}

FUSEDNGP_HD float cascade_scale(int k) { return (float)(1u << k); }  // 2^k, exact

FUSEDNGP_HD Box3 cascade_box(int k) {
    const float half = 0.5f * cascade_scale(k);
    Box3 b;
    b.lo = {0.5f - half, 0.5f - half, 0.5f - half};
    b.hi = {0.5f + half, 0.5f + half, 0.5f + half};
    return b;
}

FUSEDNGP_HD float max_step(int n_cascades) {
    return 1.7320508075688772f * cascade_scale(n_cascades - 1) / (float)kGridResolution;
}

FUSEDNGP_HD float march_step(float t, float cone_angle, int n_cascades) {
    const float dt = t * cone_angle;
    const float hi = max_step(n_cascades);
    return dt < kMinStep ? kMinStep : (dt > hi ? hi : dt);
}

// The finest cascade holding p, kMaxCascades where none does. Comparing with
// exact powers of two keeps the boundaries exact in float.
FUSEDNGP_HD int cascade_of(Vec3 p) {
    const float m = fmaxf(fabsf(p.x - 0.5f), fmaxf(fabsf(p.y - 0.5f), fabsf(p.z - 0.5f)));
    float half = 0.5f;
    int k = 0;
    while (k < kMaxCascades && !(m <= half)) {
        half *= 2.f;
        ++k;
    }
    return k;
}

// ---- Morton order of a 128^3 cell ------------------------------------------

// Spreads the low 7 bits of v to bits 0, 3, 6, ..., 18 (the usual shift-and-
// mask ladder: every lattice point of a march computes one index, so no loop).
FUSEDNGP_HD uint32_t morton_spread7(uint32_t v) {
    v &= 0x7Fu;
    v = (v | (v << 8)) & 0x0300F00Fu;
    v = (v | (v << 4)) & 0x030C30C3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}
FUSEDNGP_HD uint32_t morton_compact7(uint32_t m) {
    m &= 0x09249249u;
    m = (m ^ (m >> 2)) & 0x030C30C3u;
    m = (m ^ (m >> 4)) & 0x0300F00Fu;
    m = (m ^ (m >> 8)) & 0xFF0000FFu;
    return m & 0x7Fu;
}
FUSEDNGP_HD uint32_t morton3(uint32_t x, uint32_t y, uint32_t z) {
    return morton_spread7(x) | (morton_spread7(y) << 1) | (morton_spread7(z) << 2);
}
struct Cell3 {
    uint32_t x = 0, y = 0, z = 0;
};
FUSEDNGP_HD Cell3 morton3_decode(uint32_t m) {
    return {morton_compact7(m), morton_compact7(m >> 1), morton_compact7(m >> 2)};
}

// ---- Cells of a cascade ----------------------------------------------------

// 2^-k, exact. (p - 0.5) / 2^k and (p - 0.5) * 2^-k are the same float (a
// power-of-two scale only moves the exponent), and a division costs about ten
// instructions on the GPU, per axis of every lattice point a march tests.
FUSEDNGP_HD float inverse_cascade_scale(int k) {
    float r = 1.f;
    for (int i = 0; i < k; ++i) r *= 0.5f;
    return r;
}

// The cell coordinate of p along one axis of the cascade whose
// inverse_cascade_scale is `inverse_scale`.
FUSEDNGP_HD uint32_t cell_coord(float p, float inverse_scale) {
    const float q = ((p - 0.5f) * inverse_scale + 0.5f) * (float)kGridResolution;
    const int i = (int)floorf(q);
    return (uint32_t)(i < 0 ? 0 : (i > kGridResolution - 1 ? kGridResolution - 1 : i));
}

FUSEDNGP_HD Cell3 cell_of(Vec3 p, int k) {
    const float inverse = inverse_cascade_scale(k);
    return {cell_coord(p.x, inverse), cell_coord(p.y, inverse), cell_coord(p.z, inverse)};
}

FUSEDNGP_HD uint32_t grid_index(int k, Cell3 c) { return (uint32_t)k * kGridCells + morton3(c.x, c.y, c.z); }

// Model-space box of a cell: lo_a = 0.5 + (cell_a / 128 - 0.5) * 2^k.
FUSEDNGP_HD Box3 cell_box(int k, Cell3 c) {
    const float s = cascade_scale(k);
    const float side = s / (float)kGridResolution;
    Box3 b;
    b.lo = {0.5f + ((float)c.x / kGridResolution - 0.5f) * s, 0.5f + ((float)c.y / kGridResolution - 0.5f) * s,
            0.5f + ((float)c.z / kGridResolution - 0.5f) * s};
    b.hi = b.lo + Vec3{side, side, side};
    return b;
}

FUSEDNGP_HD bool grid_bit(const uint8_t* bits, uint32_t index) { return (bits[index >> 3] >> (index & 7u)) & 1u; }

// Whether p lies in an occupied cell of its cascade; false outside the grid.
FUSEDNGP_HD bool grid_occupied(const uint8_t* bits, int n_cascades, Vec3 p) {
    const int k = cascade_of(p);
    return k < n_cascades && grid_bit(bits, grid_index(k, cell_of(p, k)));
}

FUSEDNGP_HD int dt_cascade(float dt, int n_cascades) {
    int k = 0;
    while (k < n_cascades - 1 && cascade_scale(k) / (float)kGridResolution < 2.f * dt) ++k;
    return k;
}

// The cascade whose bit a march step of length dt at p tests (>= n_cascades:
// p is outside the grid).
FUSEDNGP_HD int march_cascade(Vec3 p, float dt, int n_cascades) {
    const int k = cascade_of(p);
    if (k >= n_cascades) return k;
    const int kd = dt_cascade(dt, n_cascades);
    return k > kd ? k : kd;
}

// Coarse cell c of cascade k (k >= 1) in the inner octant (c_a in [32, 96))
// covers the fine cells 2 (c_a - 32) + {0, 1} of cascade k-1. Sets the coarse
// bit when any of those 8 fine bits is set, for k = 1 .. n_cascades-1 in
// order, so occupancy propagates to every coarser cascade. The 8 fine cells
// of one coarse cell are one Morton-aligned block: one byte.
FUSEDNGP_HD void pool_cascade_bit(uint8_t* bits, int k, Cell3 coarse) {
    const Cell3 fine0{2 * (coarse.x - 32), 2 * (coarse.y - 32), 2 * (coarse.z - 32)};
    const uint32_t fine_index = grid_index(k - 1, fine0);  // a multiple of 8
    if (bits[fine_index >> 3] != 0) {
        const uint32_t i = grid_index(k, coarse);
        bits[i >> 3] |= (uint8_t)(1u << (i & 7u));
    }
}

// ---- Blocks of the skip mask -------------------------------------------------
//
// A block is 8^3 cells of one cascade (the cells with the same cell_a / 8).
// In Morton order its cells are one aligned run of 512 bits (64 bytes of the
// bitfield), and its index k * 4096 + morton3(block) is a cell's grid index
// / 512. The skip mask (nerf/march_skip_mask.h) holds one byte per block:
// nonzero where the block or one of its 26 neighbours holds an occupied cell.
constexpr uint32_t kSkipBlockCells = 8;                         // cells per block edge
constexpr uint32_t kSkipBlocksPerAxis = 128 / kSkipBlockCells;  // 16
constexpr uint32_t kSkipBlocks = 16u * 16u * 16u;               // blocks per cascade

FUSEDNGP_HD uint32_t skip_block_index(int k, Cell3 block) {
    return (uint32_t)k * kSkipBlocks + morton3(block.x, block.y, block.z);
}
FUSEDNGP_HD Cell3 block_of(Cell3 c) { return {c.x / kSkipBlockCells, c.y / kSkipBlockCells, c.z / kSkipBlockCells}; }

// Model-space box of a block: from its first cell's low corner to its last
// cell's high corner.
FUSEDNGP_HD Box3 block_box(int k, Cell3 block) {
    const uint32_t n = kSkipBlockCells;
    Box3 b;
    b.lo = cell_box(k, Cell3{n * block.x, n * block.y, n * block.z}).lo;
    b.hi = cell_box(k, Cell3{n * block.x + n - 1, n * block.y + n - 1, n * block.z + n - 1}).hi;
    return b;
}

// ---- Rays --------------------------------------------------------------------

// Distance from p (on the ray) to where the ray leaves the axis-aligned box.
FUSEDNGP_HD float distance_to_exit(Vec3 p, Vec3 dir, Vec3 inv_dir, const Box3& box) {
    float d = 3.4e38f;
    for (int a = 0; a < 3; ++a) {
        const float face = dir[a] >= 0 ? box.hi[a] : box.lo[a];
        d = fminf(d, (face - p[a]) * inv_dir[a]);
    }
    return fmaxf(d, 0.f);
}

// Where the ray through p = origin + t dir leaves p's cell of cascade k.
FUSEDNGP_HD float cell_exit_t(float t, Vec3 p, Vec3 dir, Vec3 inv_dir, int k) {
    return t + distance_to_exit(p, dir, inv_dir, cell_box(k, cell_of(p, k)));
}

// Advances t along the cone lattice, at least one step, until it reaches t_exit.
FUSEDNGP_HD float advance_past(float t, float t_exit, float cone_angle, int n_cascades) {
    do {
        t += march_step(t, cone_angle, n_cascades);
    } while (t < t_exit);
    return t;
}


// ---- The fixed-step lattice (cone 0) ---------------------------------------

// Lattice point k of a march that starts at t_start; fmaf rounds once on the
// host and on the device alike.
FUSEDNGP_HD float lattice_t(float t_start, uint32_t k) { return fmaf((float)k, kMinStep, t_start); }

FUSEDNGP_HD Vec3 ray_point(Vec3 origin, Vec3 dir, float t) {
    return {fmaf(dir.x, t, origin.x), fmaf(dir.y, t, origin.y), fmaf(dir.z, t, origin.z)};
}

// The first lattice index >= k_min whose point lies at or past t_target.
FUSEDNGP_HD uint32_t first_lattice_index_at(float t_start, float t_target, uint32_t k_min) {
    const float guess = ceilf((t_target - t_start) / kMinStep);
    uint32_t k = guess > (float)k_min ? (guess < 1.6e7f ? (uint32_t)guess : 16000000u) : k_min;
    while (k > k_min && lattice_t(t_start, k - 1) >= t_target) --k;
    while (lattice_t(t_start, k) < t_target) ++k;
    return k;
}

struct MarchSettings {
    float cone_angle = 0.f;  // 0: fixed step kMinStep
    int n_cascades = 1;
    int max_samples = 1024;  // per ray
};

FUSEDNGP_HD bool fixed_step(const MarchSettings& m) { return m.cone_angle == 0.f; }

// Whether the lattice point p (a step dt) emits a sample: its cell in the
// lookup cascade is occupied.
FUSEDNGP_HD bool lattice_point_occupied(Vec3 p, float dt, const uint8_t* bits, const MarchSettings& m) {
    const int k = march_cascade(p, dt, m.n_cascades);
    return k < m.n_cascades && grid_bit(bits, grid_index(k, cell_of(p, k)));
}

// Where a march resumes: the next lattice point `t` (index `k` of the fixed
// lattice that starts at t_start) and the box's exit `t1`. A march in
// segments (march_start, then march_segment until it finishes) visits
// exactly the lattice of one march_ray call.
struct MarchCursor {
    float t = 0, t1 = -1;  // t1 < t: finished (or the ray misses the box)
    int emitted = 0;       // samples emitted so far (max_samples caps them)
    float t_start = 0;     // fixed step: t = lattice_t(t_start, k)
    uint32_t k = 0;
};

// The cursor at the first lattice point, jitter in [0, 1) of a step past the
// box entry. A ray that misses the box gets a finished cursor.
FUSEDNGP_HD MarchCursor march_start(Vec3 origin, Vec3 dir, const Box3& bounds, float jitter, const MarchSettings& m) {
    MarchCursor c;
    float t0, t1;
    if (!ray_box_interval(origin, safe_inverse(dir), bounds, t0, t1)) return c;
    c.t = t0 + jitter * march_step(t0, m.cone_angle, m.n_cascades);
    c.t1 = t1;
    c.t_start = c.t;
    return c;
}

FUSEDNGP_HD bool march_finished(const MarchCursor& c, const MarchSettings& m) {
    return !(c.t <= c.t1) || c.emitted >= m.max_samples;
}

// Where a march may resume past the empty cell `cell` of cascade k holding
// p = origin + t dir: the cell's exit, or, where the skip mask clears the
// cell's block and no point before the block's exit tests a cascade coarser
// than k (the step there is short enough), the block's exit. The points
// passed over then test cells of k or finer cascades within the block, all
// empty: a finer occupied cell would be pooled into k's block or, within
// rounding of a face, a neighbour, and the mask would not be clear.
FUSEDNGP_HD float empty_run_exit(float t, Vec3 p, Vec3 dir, Vec3 inv_dir, int k, Cell3 cell, const uint8_t* skip_mask,
                                 const MarchSettings& m) {
    if (skip_mask != nullptr) {
        const Cell3 block = block_of(cell);
        if (skip_mask[skip_block_index(k, block)] == 0) {
            const float t_block = t + distance_to_exit(p, dir, inv_dir, block_box(k, block));
            if (dt_cascade(march_step(t_block, m.cone_angle, m.n_cascades), m.n_cascades) <= k) return t_block;
        }
    }
    return cell_exit_t(t, p, dir, inv_dir, k);
}

// Continues a march from `c`, calling emit(Vec3 p, float t, float dt) for
// each sample in an occupied cell, in order, until the march finishes or
// max_emit samples are out; advances `c`. Returns the samples emitted.
// skip_mask (optional): the grid's (nerf/march_skip_mask.h), built from
// bits or a superset of them; empty space is then passed a block at a time
// where it can be, with the same samples.
template <typename Emit>
FUSEDNGP_HD int march_segment(Vec3 origin, Vec3 dir, MarchCursor& c, int max_emit, const uint8_t* bits,
                              const MarchSettings& m, Emit&& emit, const uint8_t* skip_mask = nullptr) {
    const Vec3 inv_dir = safe_inverse(dir);
    const bool fixed = fixed_step(m);
    float t = c.t;
    uint32_t k = c.k;
    int n = 0;
    // One lattice step (fixed: the next index; the cone: the recurrence).
    auto advance = [&](float dt) {
        if (fixed) t = lattice_t(c.t_start, ++k);
        else t += dt;
    };
    // The last cell tested and its bit: consecutive lattice points in one
    // occupied cell (about four at the finest step) read the bitfield once.
    uint32_t last_index = 0xFFFFFFFFu;
    bool last_bit = false;
    while (t <= c.t1 && c.emitted + n < m.max_samples && n < max_emit) {
        const Vec3 p = ray_point(origin, dir, t);
        const float dt = march_step(t, m.cone_angle, m.n_cascades);
        const int kc = march_cascade(p, dt, m.n_cascades);
        if (kc >= m.n_cascades) {  // bounds larger than the grid: nothing there
            advance(dt);
            continue;
        }
        const Cell3 cell = cell_of(p, kc);
        const uint32_t index = grid_index(kc, cell);
        if (index != last_index) {
            last_index = index;
            last_bit = grid_bit(bits, index);
        }
        if (last_bit) {
            emit(p, t, dt);
            ++n;
            advance(dt);
            continue;
        }
        const float t_exit = empty_run_exit(t, p, dir, inv_dir, kc, cell, skip_mask, m);
        if (fixed) {
            k = first_lattice_index_at(c.t_start, t_exit, k + 1);
            t = lattice_t(c.t_start, k);
        } else {
            t = advance_past(t, t_exit, m.cone_angle, m.n_cascades);
        }
    }
    c.t = t;
    c.k = k;
    c.emitted += n;
    return n;
}

// Marches one ray through `bounds` (usually cascade_box(n_cascades - 1) or a
// tighter scene box), calling emit(Vec3 p, float t, float dt) for each sample
// in an occupied cell, in order. Returns the number of samples emitted.
// `dir` must be unit length; t must stay below ~1e4 so t + kMinStep != t.
template <typename Emit>
FUSEDNGP_HD int march_ray(Vec3 origin, Vec3 dir, const Box3& bounds, float jitter, const uint8_t* bits,
                          const MarchSettings& m, Emit&& emit, const uint8_t* skip_mask = nullptr) {
    MarchCursor c = march_start(origin, dir, bounds, jitter, m);
    return march_segment(origin, dir, c, m.max_samples, bits, m, emit, skip_mask);
}

} // namespace fusedngp::nerf
