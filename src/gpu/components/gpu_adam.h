// Adam on the GPU: the update of src/optimizers/adam.h, element for element
// (same float expressions, same double bias corrections), including
// skip_zero_gradient_rows and l2_reg. One thread per row. By default one
// launch per step for all groups (the fused update: the begin-step scalars
// computed in it, sparse rows and MLP fragment outputs written by it); the
// per-group launches after a one-thread begin-step kernel with
// set_fused_update(false) (CudaBackend: FUSEDNGP_UNFUSED_UPDATE=1).
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
    // "first_moment" (m) and "second_moment" (v), indexed like the params;
    // "row_steps" with per-row bias correction (AdamOptimizer::state).
    std::vector<GpuStateBuffer> state() override;
    bool set_sparse_group(const std::string& group, __half* half_mirror) override;
    void set_fused_update(bool on) override;
    bool set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) override;
    bool fused_update() const { return fused_; }

private:
    bool skips_rows_of(const ParamGroup& group) const;
    float* row_steps_of(size_t group);
    bool fused_applies() const;
    void step_per_group(float* d_params, const float* d_grads, cudaStream_t stream);
    void step_fused(float* d_params, const float* d_grads, cudaStream_t stream);
    std::string sparse_group_;
    __half* half_mirror_ = nullptr;
    bool fused_ = true;
    unsigned int resident_blocks_ = 0;  // one wave of the fused kernel (allocate)
    std::string fragment_group_;
    MlpFragmentTargets fragments_;

    AdamSettings settings_;
    std::vector<ParamGroup> groups_;
    DeviceBuffer<float> first_moment_, second_moment_;
    DeviceBuffer<float> row_steps_;
    std::vector<size_t> row_steps_offset_;  // per group, kNoRowSteps where it has none
    DeviceBuffer<double> bias_corrections_;
};

} // namespace fusedngp::gpu
