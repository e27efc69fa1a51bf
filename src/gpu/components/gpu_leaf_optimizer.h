// Shared part of the optimizers that own a learning rate and a step counter
// (Adam, SGD): the device counters and their host-side accessors.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_optimizer.h"

namespace fusedngp::gpu {

class GpuLeafOptimizer : public GpuOptimizer {
public:
    uint64_t step_count(cudaStream_t stream) const override;
    void set_step_count(uint64_t step, cudaStream_t stream) override;
    double learning_rate() const override { return learning_rate_; }
    void set_learning_rate(double lr, cudaStream_t stream) override;
    void set_schedule(const LearningRateSchedule& schedule) override { schedule_ = schedule; }
    const OptimizerCounters* device_counters() const override { return counters_.data(); }

protected:
    // Allocates the counters (step 0, learning_rate), synchronously.
    explicit GpuLeafOptimizer(double learning_rate);

    OptimizerCounters* counters() { return counters_.data(); }
    const LearningRateSchedule& schedule() const { return schedule_; }

private:
    double learning_rate_;
    LearningRateSchedule schedule_;
    DeviceBuffer<OptimizerCounters> counters_;
};

} // namespace fusedngp::gpu
