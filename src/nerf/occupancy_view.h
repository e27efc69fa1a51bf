// A picture of the occupancy grid: each pixel shows the first occupied cell
// its ray meets (the marcher's own traversal, one sample), coloured by the
// cell's position in the unit cube, so the grid's shape reads at a glance
// (the desktop app's "occupancy" render mode). Misses show the background.
#pragma once

#include "io/image.h"
#include "nerf/occupancy_grid.h"
#include "render/camera.h"

namespace fusedngp::nerf {

Image render_occupancy_view(const OccupancyGrid& grid, const Camera& camera, Vec3 background);

} // namespace fusedngp::nerf
