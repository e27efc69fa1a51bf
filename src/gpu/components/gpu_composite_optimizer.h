// Composite on the GPU (src/optimizers/composite.h): a nested GPU optimizer
// per parameter group (by name) or per slice (tiny-cuda-nn's form), laid out
// by the CPU's layout_composite, so both engines split the parameters, name
// the state ("groups.encoding.first_moment", "nested.1.average") and scale
// learning rates (learning_rate_scale) the same way. Host-side composition of
// the other GPU optimizers: no kernels of its own besides copies for
// inference_params.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_optimizer.h"
#include "optimizers/composite.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp::gpu {

struct GpuCompositePart {
    std::string label;  // state prefix, as CompositePart::label
    CompositeSlot slot;
    std::unique_ptr<GpuOptimizer> optimizer;
    size_t offset = 0, size = 0;  // set by allocate()
};

class GpuComposite : public GpuOptimizer {
public:
    GpuComposite(std::vector<GpuCompositePart> parts, bool by_slice, double learning_rate_scale,
                 std::string config_path);

    std::string otype() const override { return "Composite"; }
    void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) override;
    void step(float* d_params, const float* d_grads, cudaStream_t stream) override;

    // Every part steps every time, so the first part's counter is the count.
    uint64_t step_count(cudaStream_t stream) const override { return parts_.front().optimizer->step_count(stream); }
    void set_step_count(uint64_t step, cudaStream_t stream) override;
    // learning_rate_scale, as on the CPU: each part runs at its configured rate times it.
    double learning_rate() const override { return learning_rate_scale_; }
    void set_learning_rate(double scale, cudaStream_t stream) override;

    // d_params unless a part has its own (an EMA): then a device copy with
    // those parts replaced (synchronous; inference, not the training loop).
    const float* inference_params(const float* d_params) const override;
    std::vector<GpuStateBuffer> state() override;
    // By name: the part that owns `group`. By slice: not supported (a group
    // may straddle slices), so the caller keeps the dense path.
    bool set_sparse_group(const std::string& group, __half* half_mirror) override;
    void set_fused_update(bool on) override;
    void note_replayed_step() override {
        for (GpuCompositePart& part : parts_) part.optimizer->note_replayed_step();
    }
    // As set_sparse_group: the part that owns `group` by name; by slice, declined.
    bool set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) override;

    // An enclosing ExponentialDecay: every part decays from its own rate,
    // which keeps their ratio, as the CPU's learning_rate_scale does.
    void set_schedule(const LearningRateSchedule& schedule) override;
    const OptimizerCounters* device_counters() const override { return parts_.front().optimizer->device_counters(); }

private:
    std::vector<GpuCompositePart> parts_;
    std::vector<double> base_learning_rates_;
    bool by_slice_;
    double learning_rate_scale_;
    std::string config_path_;
    size_t extent_ = 0;
    mutable DeviceBuffer<float> inference_buffer_;
};

} // namespace fusedngp::gpu
