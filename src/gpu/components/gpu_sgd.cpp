#include "gpu/components/gpu_sgd.h"

#include "launch_optimizers.h"

namespace fusedngp::gpu {

void GpuSgd::allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) {
    groups_ = groups;
    set_step_count(0, stream);
}

void GpuSgd::step(float* d_params, const float* d_grads, cudaStream_t stream) {
    launch_sgd_begin_step(counters(), schedule(), stream);
    for (const ParamGroup& group : groups_) {
        launch_sgd_update(device_counters(), (float)settings_.l2_reg, d_params, d_grads, group.offset, group.size,
                          stream);
    }
}

} // namespace fusedngp::gpu
