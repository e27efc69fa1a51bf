// gpu::DeviceSdfSampler: the SDF mode's training batches drawn on the device.
// Holds the mesh's triangles and area CDF in device memory; sample() writes
// the same points as the CPU's generate_sdf_positions (geometry/sdf_sampling.h)
// for the same settings, seed and step, then asks the ground truth for the
// targets. sample() never allocates, so it can be captured in a CUDA graph.
#pragma once

#include "geometry/surface_sampler.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_sdf_fn.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp {
struct SdfSamplingSettings;
}

namespace fusedngp::gpu {

class DeviceSdfSampler {
public:
    DeviceSdfSampler() = default;  // no triangles: only uniform-cube sampling works
    explicit DeviceSdfSampler(const SurfaceSampler& surface);
    explicit DeviceSdfSampler(const TriangleMesh& mesh) : DeviceSdfSampler(SurfaceSampler(mesh)) {}

    // Device pointers, for kernels.
    SurfaceSamplerView view() const { return {corners_.data(), cdf_.data(), (uint32_t)cdf_.size()}; }
    uint32_t n_triangles() const { return (uint32_t)cdf_.size(); }
    bool empty() const { return cdf_.empty(); }

    // d_points: [batch][3] device memory. Throws ConfigError for bad settings
    // and InputError when surface points are asked for without triangles.
    void sample_points(const SdfSamplingSettings& settings, uint64_t seed, uint64_t step, uint32_t batch,
                       float* d_points, cudaStream_t stream) const;
    // sample_points, then the targets as generate_sdf_batch makes them: 0 for
    // the exact surface points, truth(...) for the others; d_targets: [batch].
    void sample(const SdfSamplingSettings& settings, uint64_t seed, uint64_t step, uint32_t batch, float* d_points,
                float* d_targets, const DeviceSdfFn& truth, cudaStream_t stream) const;

private:
    DeviceBuffer<Vec3> corners_;
    DeviceBuffer<float> cdf_;
};

} // namespace fusedngp::gpu
