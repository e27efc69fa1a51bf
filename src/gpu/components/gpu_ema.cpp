#include "gpu/components/gpu_ema.h"

#include "launch_optimizers.h"
#include "optimizers/param_groups.h"

namespace fusedngp::gpu {

GpuEma::GpuEma(const EmaSettings& settings, std::unique_ptr<GpuOptimizer> nested)
    : settings_(settings), nested_(std::move(nested)), weights_(1) {}

void GpuEma::allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) {
    nested_->allocate(groups, stream);
    average_.resize(params_extent(groups));
    average_.fill_bytes(0, stream);
    has_average_ = false;
}

void GpuEma::step(float* d_params, const float* d_grads, cudaStream_t stream) {
    nested_->step(d_params, d_grads, stream);
    launch_ema_begin_step(nested_->device_counters(), settings_.decay, settings_.window_fraction,
                          settings_.update_every, weights_.data(), stream);
    launch_ema_update(weights_.data(), d_params, average_.data(), average_.size(), stream);
    has_average_ = true;
}

void GpuEma::set_step_count(uint64_t step, cudaStream_t stream) {
    nested_->set_step_count(step, stream);
    has_average_ = step > 0;
}

const float* GpuEma::inference_params(const float* d_params) const {
    return has_average_ && !average_.empty() ? average_.data() : d_params;
}

std::vector<GpuStateBuffer> GpuEma::state() {
    std::vector<GpuStateBuffer> buffers = {{"average", average_.data(), average_.size()}};
    for (GpuStateBuffer b : nested_->state()) {
        b.name = "nested." + b.name;
        buffers.push_back(b);
    }
    return buffers;
}

} // namespace fusedngp::gpu
