// EMA on the GPU (src/optimizers/ema.h): wraps another optimizer and keeps the
// bias-corrected exponential moving average of the parameters for inference.
// The weights of each step come from the nested optimizer's device step
// counter, so replaying a captured step stays correct.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_optimizer.h"
#include "optimizers/ema.h"

namespace fusedngp::gpu {

class GpuEma : public GpuOptimizer {
public:
    GpuEma(const EmaSettings& settings, std::unique_ptr<GpuOptimizer> nested);

    std::string otype() const override { return "EMA"; }
    void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) override;
    void step(float* d_params, const float* d_grads, cudaStream_t stream) override;

    uint64_t step_count(cudaStream_t stream) const override { return nested_->step_count(stream); }
    void set_step_count(uint64_t step, cudaStream_t stream) override;
    double learning_rate() const override { return nested_->learning_rate(); }
    void set_learning_rate(double lr, cudaStream_t stream) override { nested_->set_learning_rate(lr, stream); }

    // The average once step() was enqueued (or a positive step count set);
    // d_params before that.
    const float* inference_params(const float* d_params) const override;
    // "average", then the nested buffers as "nested.<name>".
    std::vector<GpuStateBuffer> state() override;
    // The nested optimizer updates the rows; the average stays dense.
    bool set_sparse_group(const std::string& group, __half* half_mirror) override {
        return nested_->set_sparse_group(group, half_mirror);
    }

    void set_fused_update(bool on) override { nested_->set_fused_update(on); }
    void note_replayed_step() override {
        nested_->note_replayed_step();
        has_average_ = true;
    }
    bool set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) override {
        return nested_->set_fragment_outputs(group, targets);
    }

    void set_schedule(const LearningRateSchedule& schedule) override { nested_->set_schedule(schedule); }
    const OptimizerCounters* device_counters() const override { return nested_->device_counters(); }

    const GpuOptimizer& nested() const { return *nested_; }

private:
    EmaSettings settings_;
    std::unique_ptr<GpuOptimizer> nested_;
    DeviceBuffer<float> average_;
    DeviceBuffer<EmaWeights> weights_;
    // Host-side: whether the average holds anything. Known without reading
    // the device counter, so inference_params() never synchronises.
    bool has_average_ = false;
};

} // namespace fusedngp::gpu
