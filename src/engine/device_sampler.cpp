#include "engine/device_sampler.h"

#include "gpu/geometry/device_bvh.h"
#include "gpu/geometry/sdf_sampling_device.h"
#include "modes/sdf_mode.h"

namespace fusedngp {
namespace {

// SDF: instant-ngp's sample mix generated on the device, distances from the
// mesh's BVH on the device (the same math as SdfTrainingData::sample).
class SdfDeviceSampler : public DeviceSampler {
public:
    explicit SdfDeviceSampler(const SdfTrainingData& data)
        : settings_(data.sampling()), bvh_(data.truth().bvh()), sampler_(data.surface()),
          sign_rays_(data.truth().sign_rays()), sign_(data.target_sign()) {}

    void sample(uint64_t seed, uint64_t step, uint32_t batch, float* d_inputs, float* d_targets,
                cudaStream_t stream) override {
        sampler_.sample(settings_, seed, step, batch, d_inputs, d_targets, bvh_.field(sign_rays_, sign_), stream);
    }

private:
    SdfSamplingSettings settings_;
    gpu::DeviceBvh bvh_;
    gpu::DeviceSdfSampler sampler_;
    uint32_t sign_rays_;
    SignMethod sign_;
};

} // namespace

std::unique_ptr<DeviceSampler> make_device_sampler(const TrainingData& data) {
    if (auto* sdf = dynamic_cast<const SdfTrainingData*>(&data)) return std::make_unique<SdfDeviceSampler>(*sdf);
    return nullptr;
}

} // namespace fusedngp
