// Adam on the GPU: the update of src/optimizers/adam.h, element for element
// (same float expressions, same double bias corrections), including
// skip_zero_gradient_rows and l2_reg. One thread per row.
#pragma once

#include "gpu/components/gpu_leaf_optimizer.h"
#include "optimizers/adam.h"

namespace fusedngp::gpu {

class GpuAdam : public GpuLeafOptimizer {
public:
    explicit GpuAdam(const AdamSettings& settings);

    std::string otype() const override { return "Adam"; }
    void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) override;
    void step(float* d_params, const float* d_grads, cudaStream_t stream) override;
    // "first_moment" (m) and "second_moment" (v), indexed like the params.
    std::vector<GpuStateBuffer> state() override;
    bool set_sparse_group(const std::string& group, __half* half_mirror) override;

private:
    bool skips_rows_of(const ParamGroup& group) const;
    std::string sparse_group_;
    __half* half_mirror_ = nullptr;

    AdamSettings settings_;
    std::vector<ParamGroup> groups_;
    DeviceBuffer<float> first_moment_, second_moment_;
};

} // namespace fusedngp::gpu
