// ExponentialDecay on the GPU (src/optimizers/exponential_decay.h). The
// schedule is a closed form of the step count, so it is handed down to the
// optimizer that owns the learning rate, whose per-step kernel evaluates it
// from the device step counter: lr(s) = lr0 * decay_base^n(s).
#pragma once

#include "gpu/components/gpu_optimizer.h"
#include "optimizers/exponential_decay.h"

namespace fusedngp::gpu {

class GpuExponentialDecay : public GpuOptimizer {
public:
    GpuExponentialDecay(const ExponentialDecaySettings& settings, std::unique_ptr<GpuOptimizer> nested);

    std::string otype() const override { return "ExponentialDecay"; }
    void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) override {
        nested_->allocate(groups, stream);
    }
    void step(float* d_params, const float* d_grads, cudaStream_t stream) override {
        nested_->step(d_params, d_grads, stream);
    }

    uint64_t step_count(cudaStream_t stream) const override { return nested_->step_count(stream); }
    void set_step_count(uint64_t step, cudaStream_t stream) override { nested_->set_step_count(step, stream); }
    // lr0, the schedule's base (as the CPU's learning_rate()).
    double learning_rate() const override { return nested_->learning_rate(); }
    void set_learning_rate(double lr, cudaStream_t stream) override { nested_->set_learning_rate(lr, stream); }

    const float* inference_params(const float* d_params) const override {
        return nested_->inference_params(d_params);
    }
    std::vector<GpuStateBuffer> state() override;
    bool set_sparse_group(const std::string& group, __half* half_mirror) override {
        return nested_->set_sparse_group(group, half_mirror);
    }

    void set_fused_update(bool on) override { nested_->set_fused_update(on); }
    void note_replayed_step() override { nested_->note_replayed_step(); }
    bool set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) override {
        return nested_->set_fragment_outputs(group, targets);
    }

    // Two schedules cannot be combined: throws std::invalid_argument.
    void set_schedule(const LearningRateSchedule& schedule) override;
    const OptimizerCounters* device_counters() const override { return nested_->device_counters(); }

private:
    std::unique_ptr<GpuOptimizer> nested_;
};

} // namespace fusedngp::gpu
