// GpuLoss: the GPU twin of Loss<float> (src/losses/loss.h): the mean over all
// batch * n_dims elements, relative losses with stop-gradient denominators.
#pragma once

#include "core/json_fields.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace fusedngp::gpu {

class GpuLoss {
public:
    virtual ~GpuLoss() = default;
    virtual std::string otype() const = 0;

    // pred, target: dense [batch][n_dims] fp32 device arrays. Writes
    //   d_dpred[i]   = loss_scale * dL/dpred_i of the mean loss (null: skipped),
    //   *d_mean_loss = the mean loss, unscaled, as a device float (null: skipped),
    // deterministically (fixed reduction order). Asynchronous, no host sync,
    // no allocation. Calls share a scratch buffer: do not run two at once on
    // different streams.
    virtual void evaluate(const float* d_pred, const float* d_target, uint32_t batch, uint32_t n_dims,
                          float loss_scale, float* d_dpred, float* d_mean_loss, cudaStream_t stream) const = 0;
};

// All CPU losses (L2, L1, RelativeL2, RelativeL1, RelativeL2Luminance, MAPE,
// SMAPE, Huber, CrossEntropy). The config is validated by create_loss<float>,
// so errors are the CPU's ConfigErrors.
std::unique_ptr<GpuLoss> create_gpu_loss(const json& config, const std::string& path = "loss");

} // namespace fusedngp::gpu
