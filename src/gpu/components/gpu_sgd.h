// SGD on the GPU: w -= learning_rate * (grad + l2_reg * w) (src/optimizers/sgd.h).
#pragma once

#include "gpu/components/gpu_leaf_optimizer.h"
#include "optimizers/sgd.h"

namespace fusedngp::gpu {

class GpuSgd : public GpuLeafOptimizer {
public:
    explicit GpuSgd(const SgdSettings& settings) : GpuLeafOptimizer(settings.learning_rate), settings_(settings) {}

    std::string otype() const override { return "SGD"; }
    void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) override;
    void step(float* d_params, const float* d_grads, cudaStream_t stream) override;
    std::vector<GpuStateBuffer> state() override { return {}; }

private:
    SgdSettings settings_;
    std::vector<ParamGroup> groups_;
};

} // namespace fusedngp::gpu
