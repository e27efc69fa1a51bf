// Optimizer kernels: ports of src/optimizers/{adam, sgd, ema,
// exponential_decay}.cpp. Per-step scalars (bias corrections, decayed
// learning rate, EMA weights) are computed in double by a one-thread kernel
// from the device step counter, exactly as the CPU computes them on the host.
//
// Compiled with --fmad=false (kernels/components/CMakeLists.txt): like the
// CPU build (ISO C++, no contraction) every product is rounded before it is
// added, so an update equals the CPU's bit for bit given the same scalars.

#include "component_device.cuh"
#include "launch_optimizers.h"

namespace fusedngp::gpu {

namespace {

// n(s) of docs/CONFIG.md: decays applied to the update after s completed steps.
__device__ inline unsigned long long decays_applied(const LearningRateSchedule& schedule, unsigned long long s) {
    const unsigned long long last = s < schedule.decay_end ? s : schedule.decay_end;
    if (last < schedule.decay_start) return 0;
    return (last - schedule.decay_start) / schedule.decay_interval + 1;
}

__device__ inline double scheduled_learning_rate(const OptimizerCounters& c, const LearningRateSchedule& schedule) {
    if (!schedule.enabled) return c.learning_rate;
    return c.learning_rate * pow(schedule.decay_base, (double)decays_applied(schedule, c.step));
}

__global__ void set_step_kernel(OptimizerCounters* counters, unsigned long long step) { counters->step = step; }

__global__ void set_learning_rate_kernel(OptimizerCounters* counters, double learning_rate) {
    counters->learning_rate = learning_rate;
}

__global__ void adam_begin_step_kernel(OptimizerCounters* counters, AdamConstants k, LearningRateSchedule schedule) {
    OptimizerCounters c = *counters;
    const double lr = scheduled_learning_rate(c, schedule);
    c.step += 1;
    const double t = (double)c.step;
    c.step_size = (float)(lr * sqrt(1.0 - pow(k.beta2_d, t)) / (1.0 - pow(k.beta1_d, t)));
    *counters = c;
}

__device__ inline bool all_zero(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (values[i] != 0.f) return false;
    }
    return true;
}

// `grads` is not __restrict__: outputs.clear_grads may be the same array.
__global__ void adam_update_kernel(const OptimizerCounters* __restrict__ counters, AdamConstants k,
                                   float* __restrict__ params, const float* grads,
                                   float* __restrict__ m, float* __restrict__ v, size_t offset, size_t size,
                                   size_t row_size, bool skip_zero_rows, SparseRowOutputs outputs) {
    const size_t n_rows = (size + row_size - 1) / row_size;
    const size_t row = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    const size_t begin = offset + row * row_size;
    const size_t end = begin + row_size < offset + size ? begin + row_size : offset + size;
    if (skip_zero_rows && all_zero(grads + begin, end - begin)) return;
    const float step_size = counters->step_size;
    for (size_t i = begin; i < end; ++i) {
        const float g = grads[i] + k.l2_reg * params[i];
        const float mi = k.beta1 * m[i] + k.one_minus_beta1 * g;
        const float vi = k.beta2 * v[i] + k.one_minus_beta2 * g * g;
        m[i] = mi;
        v[i] = vi;
        const float w = params[i] - step_size * mi / (sqrtf(vi) + k.epsilon);
        params[i] = w;
        if (outputs.half_mirror) outputs.half_mirror[i - offset] = __float2half_rn(w);
    }
    // After the loop: `grads` may alias clear_grads (it is the same array).
    if (outputs.clear_grads) {
        for (size_t i = begin; i < end; ++i) outputs.clear_grads[i] = 0.f;
    }
}

__global__ void sgd_begin_step_kernel(OptimizerCounters* counters, LearningRateSchedule schedule) {
    OptimizerCounters c = *counters;
    c.step_size = (float)scheduled_learning_rate(c, schedule);
    c.step += 1;
    *counters = c;
}

__global__ void sgd_update_kernel(const OptimizerCounters* __restrict__ counters, float l2_reg,
                                  float* __restrict__ params, const float* __restrict__ grads, size_t offset,
                                  size_t size) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= size) return;
    const float lr = counters->step_size;
    params[offset + i] -= lr * (grads[offset + i] + l2_reg * params[offset + i]);
}

__global__ void ema_begin_step_kernel(const OptimizerCounters* nested, double d, EmaWeights* weights) {
    const double t = (double)nested->step;
    const double new_weight = 1.0 - pow(d, t);
    weights->keep = (float)(d * (1.0 - pow(d, t - 1.0)) / new_weight);
    weights->take = (float)((1.0 - d) / new_weight);
}

__global__ void ema_update_kernel(const EmaWeights* __restrict__ weights, const float* __restrict__ params,
                                  float* __restrict__ average, size_t n) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const EmaWeights w = *weights;
    average[i] = w.keep * average[i] + w.take * params[i];
}

} // namespace

void launch_set_step(OptimizerCounters* counters, unsigned long long step, cudaStream_t stream) {
    set_step_kernel<<<1, 1, 0, stream>>>(counters, step);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_set_learning_rate(OptimizerCounters* counters, double learning_rate, cudaStream_t stream) {
    set_learning_rate_kernel<<<1, 1, 0, stream>>>(counters, learning_rate);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_adam_begin_step(OptimizerCounters* counters, const AdamConstants& constants,
                            const LearningRateSchedule& schedule, cudaStream_t stream) {
    adam_begin_step_kernel<<<1, 1, 0, stream>>>(counters, constants, schedule);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_adam_update(const OptimizerCounters* counters, const AdamConstants& constants, float* params,
                        const float* grads, float* first_moment, float* second_moment, size_t offset, size_t size,
                        size_t row_size, bool skip_zero_rows, const SparseRowOutputs& outputs, cudaStream_t stream) {
    if (size == 0) return;
    if (row_size == 0) row_size = 1;
    const size_t n_rows = (size + row_size - 1) / row_size;
    adam_update_kernel<<<blocks_for(n_rows), kThreadsPerBlock, 0, stream>>>(
        counters, constants, params, grads, first_moment, second_moment, offset, size, row_size, skip_zero_rows,
        outputs);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_sgd_begin_step(OptimizerCounters* counters, const LearningRateSchedule& schedule, cudaStream_t stream) {
    sgd_begin_step_kernel<<<1, 1, 0, stream>>>(counters, schedule);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_sgd_update(const OptimizerCounters* counters, float l2_reg, float* params, const float* grads,
                       size_t offset, size_t size, cudaStream_t stream) {
    if (size == 0) return;
    sgd_update_kernel<<<blocks_for(size), kThreadsPerBlock, 0, stream>>>(counters, l2_reg, params, grads, offset,
                                                                         size);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_ema_begin_step(const OptimizerCounters* nested_counters, double decay, EmaWeights* weights,
                           cudaStream_t stream) {
    ema_begin_step_kernel<<<1, 1, 0, stream>>>(nested_counters, decay, weights);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_ema_update(const EmaWeights* weights, const float* params, float* average, size_t n,
                       cudaStream_t stream) {
    if (n == 0) return;
    ema_update_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(weights, params, average, n);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
