#include "gpu/components/gpu_composite_optimizer.h"

#include "optimizers/param_groups.h"

#include <cuda_runtime.h>

namespace fusedngp::gpu {

GpuComposite::GpuComposite(std::vector<GpuCompositePart> parts, bool by_slice, double learning_rate_scale,
                           std::string config_path)
    : parts_(std::move(parts)), by_slice_(by_slice), learning_rate_scale_(learning_rate_scale),
      config_path_(std::move(config_path)) {
    for (const GpuCompositePart& part : parts_) base_learning_rates_.push_back(part.optimizer->learning_rate());
    if (learning_rate_scale_ != 1.0) {
        set_learning_rate(learning_rate_scale_, nullptr);
        FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());  // before any other stream uses the counters
    }
}

void GpuComposite::allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) {
    extent_ = params_extent(groups);
    std::vector<CompositeSlot> slots;
    for (const GpuCompositePart& part : parts_) slots.push_back(part.slot);
    const std::vector<CompositeLayout> layout = layout_composite(groups, slots, by_slice_, config_path_);
    for (size_t i = 0; i < parts_.size(); ++i) {
        parts_[i].offset = layout[i].offset;
        parts_[i].size = layout[i].size;
        parts_[i].optimizer->allocate(layout[i].groups, stream);
    }
}

void GpuComposite::step(float* d_params, const float* d_grads, cudaStream_t stream) {
    for (GpuCompositePart& part : parts_) part.optimizer->step(d_params + part.offset, d_grads + part.offset, stream);
}

void GpuComposite::set_step_count(uint64_t step, cudaStream_t stream) {
    for (GpuCompositePart& part : parts_) part.optimizer->set_step_count(step, stream);
}

void GpuComposite::set_learning_rate(double scale, cudaStream_t stream) {
    learning_rate_scale_ = scale;
    for (size_t i = 0; i < parts_.size(); ++i) {
        parts_[i].optimizer->set_learning_rate(base_learning_rates_[i] * scale, stream);
    }
}

const float* GpuComposite::inference_params(const float* d_params) const {
    bool any_own = false;
    for (const GpuCompositePart& part : parts_) {
        any_own |= part.optimizer->inference_params(d_params + part.offset) != d_params + part.offset;
    }
    if (!any_own) return d_params;
    if (inference_buffer_.size() != extent_) inference_buffer_.resize(extent_);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(inference_buffer_.data(), d_params, extent_ * sizeof(float), cudaMemcpyDeviceToDevice));
    for (const GpuCompositePart& part : parts_) {
        const float* own = part.optimizer->inference_params(d_params + part.offset);
        if (part.size == 0 || own == d_params + part.offset) continue;
        FUSEDNGP_GPU_CHECK(cudaMemcpy(inference_buffer_.data() + part.offset, own, part.size * sizeof(float),
                                      cudaMemcpyDeviceToDevice));
    }
    // Device-to-device copies may return before they finish; callers read
    // the buffer from other streams.
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    return inference_buffer_.data();
}

std::vector<GpuStateBuffer> GpuComposite::state() {
    std::vector<GpuStateBuffer> buffers;
    for (GpuCompositePart& part : parts_) {
        for (GpuStateBuffer b : part.optimizer->state()) {
            b.name = part.label + "." + b.name;
            buffers.push_back(b);
        }
    }
    return buffers;
}

bool GpuComposite::set_sparse_group(const std::string& group, __half* half_mirror) {
    if (by_slice_) return half_mirror == nullptr;
    for (GpuCompositePart& part : parts_) {
        if (part.slot.group_name == group) return part.optimizer->set_sparse_group(group, half_mirror);
    }
    return half_mirror == nullptr;
}

void GpuComposite::set_fused_update(bool on) {
    for (GpuCompositePart& part : parts_) part.optimizer->set_fused_update(on);
}

bool GpuComposite::set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) {
    if (by_slice_) return targets == nullptr;
    for (GpuCompositePart& part : parts_) {
        if (part.slot.group_name == group) return part.optimizer->set_fragment_outputs(group, targets);
    }
    return targets == nullptr;
}

void GpuComposite::set_schedule(const LearningRateSchedule& schedule) {
    for (GpuCompositePart& part : parts_) part.optimizer->set_schedule(schedule);
}

} // namespace fusedngp::gpu
