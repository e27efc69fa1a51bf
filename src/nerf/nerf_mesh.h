// Meshes of a trained NeRF (`fusedngp mesh` on a NeRF model): marching cubes
// of the density iso-surface sigma = density, coloured per vertex, mapped back
// to the scene's world frame. Uses only the NerfTraining interface (the host
// models and their inference parameters, the occupancy grid), evaluated on the
// CPU, so it works on a model opened on either backend.
//
// - Field: sigma = trunc_exp(density output 0) on the lattice of
//   geometry/marching_cubes.h over `box` (z-slabs: memory stays bounded at
//   any resolution); inside is sigma > density. With skip_empty, lattice
//   points whose occupancy-grid cell and its 26 neighbours are all empty get
//   sigma = 0 without evaluating the model: the grid already says nothing is
//   there, and the one-cell margin keeps a surface that grazes an empty cell.
//   The box's faces count as empty too, so a surface that reaches the box is
//   capped there: the mesh is always closed (watertight).
// - Colour: at each vertex the density model's 16 outputs and the direction
//   -normal (looking at the surface from outside along its normal, as
//   instant-ngp colours its meshes), encoded (dir + 1) / 2 as in training;
//   rgb = sigmoid(colour outputs), rounded to 8 bits.
// - World: nerf_mesh_to_world applies nerf_unit_to_world to the vertices and
//   nerf_direction_to_world to the normals; P is a rotation and scale > 0, so
//   triangles keep their counter-clockwise-from-outside winding.
#pragma once

#include "geometry/triangle_mesh.h"
#include "nerf/nerf_training.h"

#include <cstdint>
#include <functional>

namespace fusedngp::nerf {

struct NerfMeshSettings {
    uint32_t resolution = 512;             // cells per axis over `box` (2..1024)
    float density = 2.5f;                  // the iso value of sigma (instant-ngp's default)
    Box3 box{{0, 0, 0}, {1, 1, 1}};        // model space: nerf_scene_box for aabb_scale > 1
    // extract_nerf_world_mesh: only the common part of the scene's box and
    // this (model space; the app's crop box, `mesh --crop`).
    Box3 crop = unbounded_box();
    bool skip_empty = true;                // sigma = 0 away from occupied grid cells
    std::function<void(double)> progress;  // fraction of lattice points done, 0..1
};

// The coloured iso-surface in model (unit cube) coordinates, with outward
// normals. Throws InputError for a density that is not positive and finite,
// or a bad resolution. An empty surface gives an empty mesh.
TriangleMesh extract_nerf_mesh(const NerfTraining& training, const NerfMeshSettings& settings);

// Per-vertex colours of a model-space mesh with normals (see the top).
void colour_nerf_mesh(const NerfTraining& training, TriangleMesh& mesh);

// Model space -> the scene's world frame (vertices and normals).
void nerf_mesh_to_world(TriangleMesh& mesh, float scale, Vec3 offset);

// What `fusedngp mesh` and the app write: extract_nerf_mesh over `scene`'s
// box (nerf_scene_box) within settings.crop (settings.box is replaced), in
// its world frame. Empty when no surface crosses the box; InputError when
// the crop misses the scene's box.
TriangleMesh extract_nerf_world_mesh(const NerfTraining& training, NerfMeshSettings settings, const NerfDataset& scene);

// The occupancy grid's bits with every occupied cell's 26 neighbours (same
// cascade) set too; grid_index layout, as OccupancyGrid::bits().
std::vector<uint8_t> dilated_occupancy_bits(const OccupancyGrid& grid);

} // namespace fusedngp::nerf
