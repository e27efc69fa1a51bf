// A picture of the occupancy grid: each pixel shows the first occupied cell
// its ray meets (the marcher's own traversal, one sample), coloured by the
// cell's position in the unit cube, so the grid's shape reads at a glance
// (the desktop app's "occupancy" render mode). Misses show the background.
#pragma once

#include "io/image.h"
#include "nerf/occupancy_grid.h"
#include "nerf/ray_marching_math.h"
#include "render/camera.h"

#include <cstdint>
#include <vector>

namespace fusedngp::nerf {

// `crop`: only cells inside this box (model space) are drawn (the app's crop box).
Image render_occupancy_view(const OccupancyGrid& grid, const Camera& camera, Vec3 background,
                            const Box3& crop = unbounded_box());

// The march's cost per pixel (the "cost" render mode): how many samples the
// marcher places on each pixel's centre ray through the occupied cells (at
// most march.max_samples; before early termination, which needs the field),
// row-major. Where empty-space skipping works the counts are low.
std::vector<uint32_t> march_sample_counts(const OccupancyGrid& grid, const Camera& camera, const MarchSettings& march,
                                          const Box3& crop = unbounded_box());
// The counts as a heat ramp on a log scale, from dark blue (few) through
// orange to pale yellow (march.max_samples); rays with none show the background.
Image render_march_cost_view(const OccupancyGrid& grid, const Camera& camera, const MarchSettings& march,
                             Vec3 background, const Box3& crop = unbounded_box());

} // namespace fusedngp::nerf
