// Occupied cells that no training ray sees: the inside of solid objects and
// what lies behind opaque surfaces from every training view. The training
// march can skip them (sampling.cull_occluded_cells), because a sample there
// arrives with transmittance below the early-termination threshold
// (volume_rendering.h, kDefaultMinTransmittance), so rendering drops it
// anyway: the density pass that finds that out is the step's largest cost.
//
// Bookkeeping, per cell (the occupancy grid's addressing and bit layout):
//   visited  a training sample was marched in the cell since the last update
//   seen     one of them arrived with T >= the threshold (composited)
//   recent   update periods left before the cell may be culled: set to
//            kOcclusionMemory when seen, else counts down to 0
//   culled   the training march skips the cell
// At each occupancy update after the grid's warm-up:
//   recent = seen ? kOcclusionMemory : max(recent - 1, 0)
//   culled = (culled | visited) & (recent == 0),  then visited = seen = 0,
// so a cell is culled once samples have been marched in it and none was seen
// over kOcclusionMemory update periods, and stays culled until a sample sees
// it again. A cell visible from some views only is seen by one of the many
// rays of so many periods; a single period (16 steps) could cull a surface
// cell whose few rays all came from behind it, and the rays through it would
// then miss the surface (measured: lego on the CPU fell from 27.0 to 22.7 dB).
// Culled cells are reached only by probe rays (occlusion_probe_ray): one
// training ray in kOcclusionProbeEvery marches the full occupancy bits, so a
// cell that becomes visible (a surface in front of it thins out, a view sees
// it from a new side) is seen and released.
// The viewer, evaluation and export march the full bits: a culled cell is
// occluded from the training views, not from every camera.
// A sample's cell is the one its march step tested: march_cascade(p, dt).
#pragma once

#include "geometry/vec3.h"
#include "nerf/ray_marching_math.h"

#include <cstdint>
#include <vector>

namespace fusedngp::nerf {

constexpr uint32_t kOcclusionProbeEvery = 16;
constexpr uint8_t kOcclusionMemory = 8;  // update periods

// Ray r of a training batch marches the full occupancy bits.
FUSEDNGP_HD bool occlusion_probe_ray(uint32_t ray) { return ray % kOcclusionProbeEvery == 0; }

// The update rule on the 8 cells of one byte of each bitfield; recent[0..7]
// are their counters (updated in place).
FUSEDNGP_HD uint8_t next_culled_cells(uint8_t culled, uint8_t visited, uint8_t seen, uint8_t* recent) {
    uint8_t out = 0;
    for (int b = 0; b < 8; ++b) {
        const bool was_seen = (seen >> b) & 1u;
        recent[b] = was_seen ? kOcclusionMemory : (uint8_t)(recent[b] > 0 ? recent[b] - 1 : 0);
        const bool candidate = ((culled | visited) >> b) & 1u;
        if (candidate && recent[b] == 0) out |= (uint8_t)(1u << b);
    }
    return out;
}

// The training march's bits: occupied and not culled.
FUSEDNGP_HD uint8_t training_march_cells(uint8_t occupied, uint8_t culled) { return (uint8_t)(occupied & ~culled); }

// The grid index of the cell a march step of length dt at p tested;
// kNoGridCell where p lies outside the grid.
constexpr uint32_t kNoGridCell = 0xFFFFFFFFu;
FUSEDNGP_HD uint32_t marched_cell(Vec3 p, float dt, int n_cascades) {
    const int k = march_cascade(p, dt, n_cascades);
    return k < n_cascades ? grid_index(k, cell_of(p, k)) : kNoGridCell;
}

class OcclusionMask {
public:
    explicit OcclusionMask(int n_cascades);

    // A training sample marched at (p, dt); seen: it arrived with T >= the
    // threshold (its index along the ray < render_ray's `used`).
    void note_sample(Vec3 p, float dt, bool seen);
    // The update rule above; clears visited and seen.
    void update();
    // Forgets the samples noted since the last update (before the warm-up
    // ends, the grid's bits are not yet the scene's).
    void clear_marks();
    // occupied & ~culled, byte for byte (resized).
    void training_bits(const std::vector<uint8_t>& occupied, std::vector<uint8_t>& out) const;
    // A given culled bitfield (tests, and the GPU twin's comparisons); throws
    // InputError on a size mismatch. The counters stay as they are.
    void set_culled(const std::vector<uint8_t>& culled);

    const std::vector<uint8_t>& culled() const { return culled_; }
    const std::vector<uint8_t>& recent() const { return recent_; }  // a byte per cell
    const std::vector<uint8_t>& visited() const { return visited_; }
    const std::vector<uint8_t>& seen() const { return seen_; }
    float fraction_culled() const;  // over all cascades' cells

private:
    int n_cascades_;
    std::vector<uint8_t> culled_, visited_, seen_, recent_;
};

} // namespace fusedngp::nerf
