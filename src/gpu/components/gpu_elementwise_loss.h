// The GpuLoss of every CPU loss: they are all elementwise (ElementwiseLoss),
// so one class with a kind selects the per-element formula.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_loss.h"
#include "losses/loss.h"

namespace fusedngp::gpu {

struct GpuLossArgs;

class GpuElementwiseLoss : public GpuLoss {
public:
    // Takes the kind (and Huber's delta) from the CPU loss.
    explicit GpuElementwiseLoss(const Loss<float>& cpu);
    ~GpuElementwiseLoss() override;

    std::string otype() const override { return otype_; }
    void evaluate(const float* d_pred, const float* d_target, uint32_t batch, uint32_t n_dims, float loss_scale,
                  float* d_dpred, float* d_mean_loss, cudaStream_t stream) const override;

private:
    std::string otype_;
    std::unique_ptr<GpuLossArgs> args_;
    mutable DeviceBuffer<double> partials_;  // per-block partial sums
};

} // namespace fusedngp::gpu
