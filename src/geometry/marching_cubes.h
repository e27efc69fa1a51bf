// Isosurface extraction from a signed distance field (`fusedngp mesh`).
// The field is sampled on a (resolution+1)^3 lattice over `box`, a z-slab of
// cells at a time, so memory stays bounded at any resolution; vertices on
// lattice edges are shared between neighbouring cells (a watertight mesh for
// a closed level set inside the box) and carry normals from the field's
// gradient. The GPU twin: gpu/geometry/marching_cubes_device.h.
//
// Called "marching cubes" for the user; the method is marching tetrahedra on
// the Kuhn triangulation of each cell (6 tetrahedra around the main
// diagonal; geometry/isosurface_math.h), which needs no case table and is
// watertight by construction, at the cost of about twice as many triangles.
//
// Output: shared vertices, one per crossed lattice edge, placed by linear
// interpolation of the two values; triangles counter-clockwise seen from
// outside (outside: value >= level); per-vertex normals are the lattice's
// central-difference gradient interpolated along the edge and normalised.
// Vertex and triangle order depend only on the lattice (not on slab_cells,
// nor on CPU or GPU).
#pragma once

#include "geometry/sdf_field.h"
#include "geometry/triangle_mesh.h"

#include <cstdint>
#include <vector>

namespace fusedngp {

struct IsosurfaceSettings {
    uint32_t resolution = 256;  // cells per axis (2..1024)
    float level = 0.f;          // the iso value; inside is below it
    Box3 box{{0, 0, 0}, {1, 1, 1}};
    uint32_t slab_cells = 0;    // cells per slab along z (0: chosen for ~64 MiB of field values)
};

// Throws InputError for a resolution outside [2, 1024].
TriangleMesh extract_isosurface(const SdfBatchFn& field, const IsosurfaceSettings& settings);

// ---- Shared by the CPU and GPU drivers ------------------------------------

// One z-slab of cells [z0, z1). It holds the value planes plane_lo..plane_hi
// (z0-1..z1+1 clamped to the lattice: the halo planes feed the normals);
// planes below first_new_plane are the previous slab's, carried over rather
// than evaluated again, so every lattice point is evaluated exactly once and
// both slabs see the same values on their shared planes.
struct IsosurfaceSlab {
    uint32_t z0 = 0, z1 = 0;
    uint32_t plane_lo = 0, plane_hi = 0;
    uint32_t first_new_plane = 0;
    bool last = false;

    uint32_t n_planes() const { return plane_hi - plane_lo + 1; }
    // Lattice points whose edges the slab classifies (planes z0..z1) and those
    // whose vertices it emits (z0..z1-1; the last slab also owns plane z1).
    uint32_t points_classified(uint32_t res) const { return (z1 - z0 + 1) * (res + 1) * (res + 1); }
    uint32_t points_owned(uint32_t res) const { return (z1 - z0 + (last ? 1 : 0)) * (res + 1) * (res + 1); }
    uint32_t cells(uint32_t res) const { return (z1 - z0) * res * res; }
};

// Throws InputError for bad settings (resolution outside [2, 1024], an empty box).
void validate_isosurface_settings(const IsosurfaceSettings& settings);

// settings.slab_cells, or for 0 the most cells whose value planes (with the
// halo) fit in ~64 MiB; at least 1, at most resolution.
uint32_t isosurface_slab_cells(const IsosurfaceSettings& settings);

// The slabs bottom to top (validates the settings).
std::vector<IsosurfaceSlab> plan_isosurface_slabs(const IsosurfaceSettings& settings);

} // namespace fusedngp
