// The SDF mode's training points on the device: one thread per sample, the
// per-sample math of geometry/sdf_sampling_math.h (the CPU twin is
// geometry/sdf_sampling.cpp's generate_sdf_positions).
#include "geometry/launch_sdf_sampling.h"

#include "gpu/components/device_buffer.h"

namespace fusedngp::gpu {
namespace {

__global__ void sdf_training_points_kernel(SurfaceSamplerView surface, SdfSampleLayout layout, uint64_t key,
                                           float* points) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= layout.batch()) return;
    const Vec3 p = sdf_training_point(surface, layout, key, i);
    points[3ull * i] = p.x;
    points[3ull * i + 1] = p.y;
    points[3ull * i + 2] = p.z;
}

} // namespace

void launch_sdf_training_points(const SurfaceSamplerView& surface, const SdfSampleLayout& layout, uint64_t key,
                                float* points, cudaStream_t stream) {
    const uint32_t n = layout.batch();
    if (n == 0) return;
    sdf_training_points_kernel<<<(n + 255) / 256, 256, 0, stream>>>(surface, layout, key, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
