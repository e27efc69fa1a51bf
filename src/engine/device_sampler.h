// DeviceSampler: training batches drawn on the device, for data whose
// sampler has a GPU twin (SDF: surface/uniform points with ground-truth
// distances from the mesh's BVH). The CUDA backend uses one when the data
// offers it, instead of sampling on the host and uploading.
#pragma once

#include "backends/training_data.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace fusedngp {

class DeviceSampler {
public:
    virtual ~DeviceSampler() = default;
    // `batch` inputs [batch][n_input_dims] and targets [batch][n_output_dims]
    // into device memory, enqueued on `stream`; deterministic in (seed, step).
    virtual void sample(uint64_t seed, uint64_t step, uint32_t batch, float* d_inputs, float* d_targets,
                        cudaStream_t stream) = 0;
};

// A device sampler for `data`, or null when it has none (host sampling).
std::unique_ptr<DeviceSampler> make_device_sampler(const TrainingData& data);

} // namespace fusedngp
