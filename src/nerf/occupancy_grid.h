// The NeRF mode's occupancy grid on the host (instant-ngp's design): per
// cascade a 128^3 grid of densities (float) and its bitfield (one bit per
// cell, a uint8 per 2x2x2 Morton block), addressed as in ray_marching_math.h
// (index = k * 128^3 + morton3(cell)). The marcher reads only the bits.
//
// n_cascades = log2(aabb_scale) + 1 (aabb_scale a power of two, 1..128).
//
// update(density_fn, step, rng), called by the trainer every 16 steps:
//  1. Sample cells. Warm-up (step < warmup_steps = 256): every cell of every
//     cascade once. Afterwards, per cascade, 128^3 / 4 cells drawn uniformly
//     (with replacement) and 128^3 / 4 drawn uniformly from the cascade's
//     currently occupied cells (with replacement; drawn uniformly from all
//     cells when none is occupied), so the sample count is fixed:
//     n_cascades * 128^3 during warm-up, n_cascades * 128^3 / 2 after.
//     Each sample is one point at a jittered position in its cell:
//       p_a = cell_box.lo_a + u_a * 2^k / 128,  u ~ U[0,1)^3.
//  2. new[i] = max density_fn(p) over the samples of cell i (0 if unsampled).
//  3. EMA:  density[i] = max(decay * density[i], new[i]),  decay = 0.95,
//     every cell (unsampled cells only decay).
//  4. threshold = min(kOccupancyDensity, mean of cascade 0's densities), with
//     kOccupancyDensity = 0.01 / kMinStep = 0.01 * 1024 / sqrt(3) ~ 5.91
//     (instant-ngp's minimum optical thickness 0.01 over one minimum step);
//     bit i = density[i] > threshold.
//  5. Pool: for k = 1 .. n_cascades-1, each cell of cascade k's inner octant
//     also gets its bit when any of the 8 cascade-(k-1) cells it covers has
//     one (ray_marching_math.h pool_cascade_bit), so a march that tests a
//     coarser cascade for a long step never skips an occupied fine cell.
// Random numbers are taken from `rng` in a fixed order (per cascade: the cell
// draws, then the jitter, three floats per sample), so an update is
// deterministic for the generator's state.
//
// Before the first update every bit is set (march everything) and every
// density is 0. The inner region of cascade k > 0 (covered by cascade k-1) is
// sampled and stored like the rest; occupied(p) reads the finest cascade
// holding p, the march may read a coarser one (march_cascade).
#pragma once

#include "core/common.h"
#include "core/rng.h"
#include "geometry/vec3.h"
#include "nerf/ray_marching_math.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace fusedngp::nerf {

// points [n][3] (model space) -> densities [n][1] after the activation.
using DensityBatchFn = std::function<void(const Matrix<float>& points, Matrix<float>& densities)>;

// Step 5 of update on any bitfield [n_cascades * 128^3 / 8]: ORs each
// cascade's bits into the next coarser cascade's inner octant, finest first.
void pool_cascade_bits(std::vector<uint8_t>& bits, int n_cascades);

// The fraction of the bits set in n_bytes bytes (a bitfield's occupied or culled cells).
float fraction_of_set_bits(const uint8_t* bytes, size_t n_bytes);


struct OccupancyGridSettings {
    float decay = 0.95f;
    uint32_t warmup_steps = 256;
};

class OccupancyGrid {
public:
    // Throws InputError unless aabb_scale is a power of two in [1, 128].
    explicit OccupancyGrid(int aabb_scale, OccupancyGridSettings settings = {});

    void update(const DensityBatchFn& density_fn, uint32_t step, Rng& rng);

    bool occupied(Vec3 p) const;
    float fraction_occupied() const;           // over all cascades' cells
    float fraction_occupied(int cascade) const;

    int n_cascades() const { return n_cascades_; }
    float threshold() const { return threshold_; }
    const std::vector<float>& density() const { return density_; }  // [n_cascades * 128^3], grid_index order
    const std::vector<uint8_t>& bits() const { return bits_; }      // [n_cascades * 128^3 / 8]
    // nerf/march_skip_mask.h's mask of the bits (marches take it), rebuilt with them.
    const std::vector<uint8_t>& skip_mask() const { return skip_mask_; }
    // Lets tests and the GPU twin start from a given state; recomputes the bits.
    void set_density(const std::vector<float>& density);
    // Restores a saved grid exactly (snapshots): densities and bits as they
    // were, the threshold recomputed from the densities. Throws InputError
    // on a size mismatch.
    void set_state(const std::vector<float>& density, const std::vector<uint8_t>& bits);

private:
    std::vector<uint32_t> sample_cells(int cascade, bool warmup, Rng& rng) const;
    void assign_density(const std::vector<float>& density);  // size-checked
    void update_threshold();
    void update_bits();

    int n_cascades_ = 1;
    OccupancyGridSettings settings_;
    float threshold_ = 0.f;
    std::vector<float> density_;
    std::vector<uint8_t> bits_;
    std::vector<uint8_t> skip_mask_;
};

} // namespace fusedngp::nerf
