// The occupancy grid's skip mask: one byte per block of 8^3 cells
// (ray_marching_math.h, "Blocks of the skip mask"), nonzero where the block
// or one of its 26 neighbours in its cascade holds an occupied cell. Marches
// pass empty space with it a block at a time with the same samples:
// march_segment (ray_marching_math.h empty_run_exit) past an empty cell
// whose block is clear, and the GPU's fixed-step warp march, which tests
// lattice points in rounds of 32 (one per lane) and would otherwise spend a
// round on every 32 points of empty space: there each lane rules out a
// whole round with one lookup (lattice_round_empty), so a warp rules out the
// next 32 rounds at once.
//
// A round is the lattice points k0 .. k0 + 31 of a ray, from a (k0) to b
// (k0 + 31). Along a ray each coordinate of the lattice points, and of their
// cells, is monotone (ray_point and cell_coord round monotonically), so every
// point of the round lies between a and b axis by axis. The round is empty
// when
//   - a and b lie in the same cascade k < n_cascades: the points between them
//     lie in k's box, in cascade k or a finer one, whose occupied cells are
//     pooled into k's bits (ray_marching_math.h pool_cascade_bit);
//   - b's block is within one block of a's along each axis (always, at the
//     fixed step: a round spans 31 * kMinStep = 0.052 < 1/16, a block of
//     cascade 0), so every point's block neighbours a's;
//   - and a's mask byte is 0.
// The pooled parent of a finer cell can sit one cell off the point's cell in
// k where the point lies within float rounding of a cell face; the mask's
// one-block margin absorbs that except at a block face, the same face
// ambiguity the march itself has (ray_marching_math.h, "Sample positions").
#pragma once

#include "nerf/ray_marching_math.h"

#include <cstdint>
#include <vector>

namespace fusedngp::nerf {

constexpr uint32_t kSkipBlockBytes = 64;  // a block's bits in the bitfield

// Whether the block holds an occupied cell: its 64 bytes of the bitfield.
FUSEDNGP_HD bool skip_block_occupied(const uint8_t* bits, uint32_t block_index) {
    const uint8_t* b = bits + (size_t)block_index * kSkipBlockBytes;
    for (uint32_t i = 0; i < kSkipBlockBytes; ++i)
        if (b[i] != 0) return true;
    return false;
}

// The mask byte of block `index` (skip_block_index): 1 where it or a
// neighbour in its cascade holds an occupied cell.
FUSEDNGP_HD uint8_t skip_mask_byte(const uint8_t* bits, uint32_t index) {
    const int k = (int)(index / kSkipBlocks);
    const Cell3 c = morton3_decode(index % kSkipBlocks);
    const int n = (int)kSkipBlocksPerAxis;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                const int x = (int)c.x + dx, y = (int)c.y + dy, z = (int)c.z + dz;
                if (x < 0 || y < 0 || z < 0 || x >= n || y >= n || z >= n) continue;
                if (skip_block_occupied(bits, skip_block_index(k, Cell3{(uint32_t)x, (uint32_t)y, (uint32_t)z})))
                    return 1;
            }
    return 0;
}

FUSEDNGP_HD bool within_one_block(uint32_t cell_a, uint32_t cell_b) {
    const int d = (int)(cell_a / kSkipBlockCells) - (int)(cell_b / kSkipBlockCells);
    return d >= -1 && d <= 1;
}

// Whether lattice points k0 .. k0 + 31 of a fixed-step march starting at
// t_start are all empty (see above). The caller keeps them inside the box
// (lattice_t(t_start, k0 + 31) <= t1).
FUSEDNGP_HD bool lattice_round_empty(const uint8_t* skip_mask, Vec3 origin, Vec3 dir, float t_start, uint32_t k0,
                                     int n_cascades) {
    const Vec3 a = ray_point(origin, dir, lattice_t(t_start, k0));
    const Vec3 b = ray_point(origin, dir, lattice_t(t_start, k0 + 31));
    const int k = cascade_of(a);
    if (k >= n_cascades || cascade_of(b) != k) return false;
    const Cell3 ca = cell_of(a, k), cb = cell_of(b, k);
    if (!within_one_block(ca.x, cb.x) || !within_one_block(ca.y, cb.y) || !within_one_block(ca.z, cb.z)) return false;
    return skip_mask[skip_block_index(k, block_of(ca))] == 0;
}

// The mask of a whole grid (bits: n_cascades * kGridCells / 8 bytes).
std::vector<uint8_t> march_skip_mask(const std::vector<uint8_t>& bits, int n_cascades);

} // namespace fusedngp::nerf
