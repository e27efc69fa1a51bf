#include "gpu/geometry/sdf_sampling_device.h"

#include "core/errors.h"
#include "geometry/launch_sdf_sampling.h"
#include "geometry/sdf_sampling.h"

namespace fusedngp::gpu {

DeviceSdfSampler::DeviceSdfSampler(const SurfaceSampler& surface)
    : corners_(surface.corners().size()), cdf_(surface.cdf().size()) {
    corners_.upload(surface.corners());
    cdf_.upload(surface.cdf());
}

void DeviceSdfSampler::sample_points(const SdfSamplingSettings& settings, uint64_t seed, uint64_t step,
                                     uint32_t batch, float* d_points, cudaStream_t stream) const {
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    if (layout.n_uniform < batch && empty()) {
        throw InputError("SDF sampling: surface samples were asked for but the mesh has no triangles");
    }
    launch_sdf_training_points(view(), layout, sdf_random_key(seed, step, SdfRandomPurpose::Training), d_points,
                               stream);
}

void DeviceSdfSampler::sample(const SdfSamplingSettings& settings, uint64_t seed, uint64_t step, uint32_t batch,
                              float* d_points, float* d_targets, const DeviceSdfFn& truth, cudaStream_t stream) const {
    sample_points(settings, seed, step, batch, d_points, stream);
    // As generate_sdf_batch: exact surface points have distance 0, the rest get the truth.
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    const uint32_t n_uniform = layout.n_uniform, n_surface = layout.n_surface;
    const uint32_t n_rest = batch - n_uniform - n_surface;
    if (n_surface) FUSEDNGP_GPU_CHECK(cudaMemsetAsync(d_targets + n_uniform, 0, n_surface * sizeof(float), stream));
    if (n_uniform) truth(d_points, n_uniform, d_targets, stream);
    const size_t rest = (size_t)n_uniform + n_surface;
    if (n_rest) truth(d_points + 3 * rest, n_rest, d_targets + rest, stream);
}

} // namespace fusedngp::gpu
