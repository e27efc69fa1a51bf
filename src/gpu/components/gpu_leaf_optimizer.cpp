#include "gpu/components/gpu_leaf_optimizer.h"

#include "launch_optimizers.h"

namespace fusedngp::gpu {

GpuLeafOptimizer::GpuLeafOptimizer(double learning_rate) : learning_rate_(learning_rate), counters_(1) {
    OptimizerCounters initial;
    initial.learning_rate = learning_rate;
    FUSEDNGP_GPU_CHECK(cudaMemcpy(counters_.data(), &initial, sizeof(initial), cudaMemcpyHostToDevice));
}

uint64_t GpuLeafOptimizer::step_count(cudaStream_t stream) const {
    unsigned long long step = 0;
    FUSEDNGP_GPU_CHECK(
        cudaMemcpyAsync(&step, &counters_.data()->step, sizeof(step), cudaMemcpyDeviceToHost, stream));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    return step;
}

void GpuLeafOptimizer::set_step_count(uint64_t step, cudaStream_t stream) {
    launch_set_step(counters_.data(), step, stream);
}

void GpuLeafOptimizer::set_learning_rate(double lr, cudaStream_t stream) {
    learning_rate_ = lr;
    launch_set_learning_rate(counters_.data(), lr, stream);
}

} // namespace fusedngp::gpu
