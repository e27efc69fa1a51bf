#include "gpu/components/gpu_exponential_decay.h"

#include <stdexcept>

namespace fusedngp::gpu {

GpuExponentialDecay::GpuExponentialDecay(const ExponentialDecaySettings& settings,
                                         std::unique_ptr<GpuOptimizer> nested)
    : nested_(std::move(nested)) {
    LearningRateSchedule schedule;
    schedule.enabled = true;
    schedule.decay_base = settings.decay_base;
    schedule.decay_start = settings.decay_start;
    schedule.decay_interval = settings.decay_interval;
    schedule.decay_end = settings.decay_end;
    nested_->set_schedule(schedule);
}

void GpuExponentialDecay::set_schedule(const LearningRateSchedule&) {
    throw std::invalid_argument("GPU optimizers: an ExponentialDecay inside another ExponentialDecay is not supported");
}

std::vector<GpuStateBuffer> GpuExponentialDecay::state() {
    std::vector<GpuStateBuffer> buffers = nested_->state();
    for (GpuStateBuffer& b : buffers) b.name = "nested." + b.name;
    return buffers;
}

} // namespace fusedngp::gpu
