// Isosurface extraction from a signed distance field (`fusedngp mesh`).
// The field is sampled on a (resolution+1)^3 lattice over `box`, a z-slab of
// cells at a time, so memory stays bounded at any resolution; vertices on
// lattice edges are shared between neighbouring cells (a watertight mesh for
// a closed level set inside the box) and carry normals from the field's
// gradient. The GPU twin: gpu/geometry/marching_cubes_device.h.
#pragma once

#include "geometry/sdf_field.h"
#include "geometry/triangle_mesh.h"

#include <cstdint>

namespace fusedngp {

struct IsosurfaceSettings {
    uint32_t resolution = 256;  // cells per axis (2..1024)
    float level = 0.f;          // the iso value; inside is below it
    Box3 box{{0, 0, 0}, {1, 1, 1}};
    uint32_t slab_cells = 0;    // cells per slab along z (0: chosen for ~64 MiB of field values)
};

// Throws InputError for a resolution outside [2, 1024].
TriangleMesh extract_isosurface(const SdfBatchFn& field, const IsosurfaceSettings& settings);

} // namespace fusedngp
