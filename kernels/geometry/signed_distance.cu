// Ground-truth signed distance and closest-triangle kernels: one thread per
// point, each calling the geometry/bvh_queries.h function that
// GroundTruthSdf's host loop calls for the same point.
#include "geometry/bvh_queries.h"
#include "gpu/geometry/device_bvh.h"

namespace fusedngp::gpu {
namespace {

constexpr uint32_t kThreads = 128;

uint32_t blocks_for(uint32_t n) { return (n + kThreads - 1) / kThreads; }

__device__ Vec3 load_point(const float* points, uint32_t i) {
    return Vec3{points[3 * i], points[3 * i + 1], points[3 * i + 2]};
}

__global__ void signed_distance_kernel(BvhView bvh, const float* points, uint32_t n, uint32_t sign_rays,
                                       SignMethod sign, float* values) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    values[i] = signed_distance(bvh, load_point(points, i), sign_rays, sign);
}

__global__ void closest_kernel(BvhView bvh, const float* points, uint32_t n, float* distances, float* normals) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    ClosestHit hit = bvh_closest_point(bvh, load_point(points, i));
    distances[i] = sqrtf(hit.distance_squared);
    Vec3 normal = triangle_normal(bvh.triangles[hit.triangle]);
    normals[3 * i] = normal.x;
    normals[3 * i + 1] = normal.y;
    normals[3 * i + 2] = normal.z;
}

} // namespace

void launch_signed_distances(const BvhView& bvh, const float* d_points, uint32_t n, float* d_values,
                             uint32_t sign_rays, SignMethod sign, cudaStream_t stream) {
    if (n == 0) return;
    signed_distance_kernel<<<blocks_for(n), kThreads, 0, stream>>>(bvh, d_points, n, sign_rays, sign, d_values);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_closest(const BvhView& bvh, const float* d_points, uint32_t n, float* d_distances, float* d_normals,
                    cudaStream_t stream) {
    if (n == 0) return;
    closest_kernel<<<blocks_for(n), kThreads, 0, stream>>>(bvh, d_points, n, d_distances, d_normals);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
