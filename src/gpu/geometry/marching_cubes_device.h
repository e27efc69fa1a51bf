// Isosurface extraction on the device: the GPU twin of
// geometry/marching_cubes.h (same settings, same slabs, same mesh).
//
// Per slab: a kernel writes the lattice points of the planes not carried over
// from the previous slab and `field` evaluates them; kernels classify the
// lattice edges and count vertices per lattice point and triangles per cell;
// CUB exclusive sums give every vertex and triangle its slot; kernels emit
// them (with global vertex ids, so the shared plane between slabs needs no
// stitching) and the slab's part is downloaded into the host mesh.
//
// Guarantee: the same vertex and triangle order as extract_isosurface, and
// identical triangles, whenever the field gives both the same inside/outside
// signs; positions and normals then agree to rounding of the field values
// (bit for bit for equal values: the per-cell math rounds alike on both sides).
#pragma once

#include "geometry/marching_cubes.h"
#include "gpu/geometry/device_sdf_fn.h"

#include <cuda_runtime_api.h>

namespace fusedngp::gpu {

// Throws InputError for a resolution outside [2, 1024]. Synchronises `stream`.
TriangleMesh extract_isosurface_device(const DeviceSdfFn& field, const IsosurfaceSettings& settings, cudaStream_t stream);

} // namespace fusedngp::gpu
