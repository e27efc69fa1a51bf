#include "gpu/components/device_buffer.h"
#include "gpu/geometry/analytic_fields.h"

namespace fusedngp::gpu {
namespace {

__global__ void sphere_sdf_kernel(const float* points, uint32_t n, Vec3 center, float radius, float* values) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3 p{points[3 * i], points[3 * i + 1], points[3 * i + 2]};
    values[i] = length(p - center) - radius;
}

__global__ void torus_sdf_kernel(const float* points, uint32_t n, Vec3 center, float major, float minor, float* values) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3 d = Vec3{points[3 * i], points[3 * i + 1], points[3 * i + 2]} - center;
    float ring = sqrtf(d.x * d.x + d.z * d.z) - major;
    values[i] = sqrtf(ring * ring + d.y * d.y) - minor;
}

uint32_t blocks_for(uint32_t n) { return (n + 255) / 256; }

} // namespace

DeviceSdfFn device_sphere_sdf(Vec3 center, float radius) {
    return [=](const float* points, uint32_t n, float* values, cudaStream_t stream) {
        if (n == 0) return;
        sphere_sdf_kernel<<<blocks_for(n), 256, 0, stream>>>(points, n, center, radius, values);
        FUSEDNGP_GPU_CHECK_LAUNCH();
    };
}

DeviceSdfFn device_torus_sdf(Vec3 center, float major_radius, float minor_radius) {
    return [=](const float* points, uint32_t n, float* values, cudaStream_t stream) {
        if (n == 0) return;
        torus_sdf_kernel<<<blocks_for(n), 256, 0, stream>>>(points, n, center, major_radius, minor_radius, values);
        FUSEDNGP_GPU_CHECK_LAUNCH();
    };
}

} // namespace fusedngp::gpu
