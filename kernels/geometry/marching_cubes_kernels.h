// Launchers of the isosurface kernels (kernels/geometry/marching_cubes.cu),
// each one loop of the CPU extraction over geometry/isosurface_math.h; the
// slab loop that calls them is gpu/geometry/marching_cubes_device.cpp. Kept
// free of Eigen (core/common.h) so nvcc never compiles it.
#pragma once

#include "geometry/isosurface_math.h"
#include "gpu/components/device_buffer.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu::iso_kernels {

// Points [count][3] of lattice planes first_plane.. (x fastest).
void lattice_points(Vec3 lo, Vec3 hi, uint32_t res, uint32_t first_plane, uint32_t count, float* points, cudaStream_t stream);

// masks[p], counts[p] for the `count` points of planes z0..; counts[count] = 0.
void classify_points(const iso::SlabValues& s, uint32_t z0, uint32_t count, uint8_t* masks, uint32_t* counts, cudaStream_t stream);

// The vertices of the first `owned` points, at their offsets.
void point_vertices(const iso::SlabValues& s, uint32_t z0, uint32_t owned, const uint8_t* masks, const uint32_t* offsets,
                    Vec3* positions, Vec3* normals, cudaStream_t stream);

// Triangles per cell of cells z0.. (n_cells of them); counts[n_cells] = 0.
void cell_counts(const iso::SlabValues& s, uint32_t z0, uint32_t n_cells, uint32_t* counts, cudaStream_t stream);

// The cells' triangles, at their offsets, with ids from `ids`.
void cell_triangles(const iso::SlabValues& s, const iso::VertexIds& ids, uint32_t n_cells, const uint32_t* counts,
                    const uint32_t* offsets, iso::Triangle* triangles, cudaStream_t stream);

// Exclusive prefix sum of `count` entries (CUB); grows `scratch` as needed.
void exclusive_sum(const uint32_t* in, uint32_t* out, uint32_t count, DeviceBuffer<uint8_t>& scratch, cudaStream_t stream);

} // namespace fusedngp::gpu::iso_kernels
