// Isosurface extraction kernels: each one loop of
// src/geometry/marching_cubes.cpp over geometry/isosurface_math.h, one
// thread per lattice point or cell.
#include "geometry/marching_cubes_kernels.h"

#include <cub/cub.cuh>

namespace fusedngp::gpu::iso_kernels {
namespace {

constexpr uint32_t kBlock = 256;

uint32_t blocks_for(uint32_t n) { return (n + kBlock - 1) / kBlock; }

__global__ void lattice_points_kernel(Vec3 lo, Vec3 hi, uint32_t res, uint32_t first_plane, uint32_t count, float* points) {
    const uint32_t q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    const uint32_t n = res + 1;
    const Vec3 p = iso::lattice_point(lo, hi, res, q % n, (q / n) % n, first_plane + q / (n * n));
    points[3 * (size_t)q] = p.x;
    points[3 * (size_t)q + 1] = p.y;
    points[3 * (size_t)q + 2] = p.z;
}

__global__ void classify_points_kernel(iso::SlabValues s, uint32_t z0, uint32_t count, uint8_t* masks, uint32_t* counts) {
    const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p > count) return;
    if (p == count) {  // the sentinel: the exclusive sum's last entry becomes the total
        counts[p] = 0;
        return;
    }
    const uint32_t n = s.res + 1;
    const uint32_t mask = iso::point_edge_mask(s, p % n, (p / n) % n, z0 + p / (n * n));
    masks[p] = (uint8_t)mask;
    counts[p] = iso::popcount8(mask);
}

__global__ void point_vertices_kernel(iso::SlabValues s, uint32_t z0, uint32_t owned, const uint8_t* masks, const uint32_t* offsets,
                                      Vec3* positions, Vec3* normals) {
    const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= owned || !masks[p]) return;
    const uint32_t n = s.res + 1;
    iso::point_vertices(s, p % n, (p / n) % n, z0 + p / (n * n), masks[p], positions + offsets[p], normals + offsets[p]);
}

__global__ void cell_counts_kernel(iso::SlabValues s, uint32_t z0, uint32_t n_cells, uint32_t* counts) {
    const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c > n_cells) return;
    if (c == n_cells) {  // sentinel, as above
        counts[c] = 0;
        return;
    }
    counts[c] = iso::cell_triangle_count(s, c % s.res, (c / s.res) % s.res, z0 + c / (s.res * s.res));
}

__global__ void cell_triangles_kernel(iso::SlabValues s, iso::VertexIds ids, uint32_t n_cells, const uint32_t* counts,
                                      const uint32_t* offsets, iso::Triangle* triangles) {
    const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells || !counts[c]) return;
    iso::cell_triangles(s, ids, c % s.res, (c / s.res) % s.res, ids.z0 + c / (s.res * s.res), triangles + offsets[c]);
}

} // namespace

void lattice_points(Vec3 lo, Vec3 hi, uint32_t res, uint32_t first_plane, uint32_t count, float* points, cudaStream_t stream) {
    if (!count) return;
    lattice_points_kernel<<<blocks_for(count), kBlock, 0, stream>>>(lo, hi, res, first_plane, count, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void classify_points(const iso::SlabValues& s, uint32_t z0, uint32_t count, uint8_t* masks, uint32_t* counts, cudaStream_t stream) {
    classify_points_kernel<<<blocks_for(count + 1), kBlock, 0, stream>>>(s, z0, count, masks, counts);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void point_vertices(const iso::SlabValues& s, uint32_t z0, uint32_t owned, const uint8_t* masks, const uint32_t* offsets,
                    Vec3* positions, Vec3* normals, cudaStream_t stream) {
    if (!owned) return;
    point_vertices_kernel<<<blocks_for(owned), kBlock, 0, stream>>>(s, z0, owned, masks, offsets, positions, normals);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void cell_counts(const iso::SlabValues& s, uint32_t z0, uint32_t n_cells, uint32_t* counts, cudaStream_t stream) {
    cell_counts_kernel<<<blocks_for(n_cells + 1), kBlock, 0, stream>>>(s, z0, n_cells, counts);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void cell_triangles(const iso::SlabValues& s, const iso::VertexIds& ids, uint32_t n_cells, const uint32_t* counts,
                    const uint32_t* offsets, iso::Triangle* triangles, cudaStream_t stream) {
    if (!n_cells) return;
    cell_triangles_kernel<<<blocks_for(n_cells), kBlock, 0, stream>>>(s, ids, n_cells, counts, offsets, triangles);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void exclusive_sum(const uint32_t* in, uint32_t* out, uint32_t count, DeviceBuffer<uint8_t>& scratch, cudaStream_t stream) {
    size_t bytes = 0;
    FUSEDNGP_GPU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, count, stream));
    if (scratch.size() < bytes) scratch.resize(bytes);
    FUSEDNGP_GPU_CHECK(cub::DeviceScan::ExclusiveSum(scratch.data(), bytes, in, out, count, stream));
}

} // namespace fusedngp::gpu::iso_kernels
