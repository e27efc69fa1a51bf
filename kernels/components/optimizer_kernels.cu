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
#include "optimizers/adam_bias.h"
#include "optimizers/ema_weights.h"

#include <algorithm>
#include <cstdint>

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

// The step size of the update after `c.step` completed steps (t = c.step + 1):
// shared by the one-thread begin-step kernel and the fused update, so both
// round the same double expression.
// `lr` is scheduled_learning_rate(c, schedule).
__device__ inline float adam_step_size(const OptimizerCounters& c, const AdamConstants& k, double lr) {
    const double t = (double)(c.step + 1);
    return (float)(lr * sqrt(1.0 - pow(k.beta2_d, t)) / (1.0 - pow(k.beta1_d, t)));
}

// The step size of a row that counts its own updates: its count advances
// (AdamOptimizer::step_group's expressions, adam_bias.h).
__device__ inline float row_step_size(double lr, const AdamConstants& k, float* row_steps, size_t row) {
    const float n = next_row_step(row_steps[row], k.n_bias_corrections);
    row_steps[row] = n;
    return (float)(lr * k.bias_corrections[(size_t)n - 1]);
}

__global__ void adam_begin_step_kernel(OptimizerCounters* counters, AdamConstants k, LearningRateSchedule schedule) {
    OptimizerCounters c = *counters;
    const double lr = scheduled_learning_rate(c, schedule);
    c.step_size = adam_step_size(c, k, lr);
    c.step_learning_rate = lr;
    c.step += 1;
    *counters = c;
}

__device__ inline bool all_zero(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (values[i] != 0.f) return false;
    }
    return true;
}

// One Adam row [begin, end) of a group starting at `offset`: the CPU's
// per-element expressions (src/optimizers/adam.cpp), in this order, for both
// the per-group kernel and the fused one. `grads` is not __restrict__:
// outputs.clear_grads may be the same array.
__device__ inline void adam_update_row(float step_size, const AdamConstants& k, float l2_reg,
                                       float* __restrict__ params, const float* grads, float* __restrict__ m,
                                       float* __restrict__ v, size_t offset, size_t begin, size_t end,
                                       const SparseRowOutputs& outputs, const MlpFragmentTargets& fragments) {
    for (size_t i = begin; i < end; ++i) {
        const float g = grads[i] + l2_reg * params[i];
        const float mi = k.beta1 * m[i] + k.one_minus_beta1 * g;
        const float vi = k.beta2 * v[i] + k.one_minus_beta2 * g * g;
        m[i] = mi;
        v[i] = vi;
        const float w = params[i] - step_size * mi / (sqrtf(vi) + k.epsilon);
        params[i] = w;
        if (outputs.half_mirror) outputs.half_mirror[i - offset] = __float2half_rn(w);
        if (fragments.master) {
            // FusedMlp::set_params_device's copy and conversion, for this weight.
            const size_t p = i - offset;
            fragments.master[p] = w;
            const unsigned short h = __half_as_ushort(__float2half_rn(w));
            const MlpFragmentSlots slots = mlp_fragment_slots(fragments.shape, p);
            fragments.w_fwd[slots.fwd] = h;
            fragments.w_bwd[slots.bwd] = h;
        }
    }
    // After the loop: `grads` may alias clear_grads (it is the same array).
    if (outputs.clear_grads) {
        for (size_t i = begin; i < end; ++i) outputs.clear_grads[i] = 0.f;
    }
}

// Elements [begin, end) of row `row` of a group [offset, offset + size) in
// rows of row_size (the last row may be short); false past the last row.
__device__ inline bool group_row_range(size_t offset, size_t size, size_t row_size, size_t row, size_t* begin,
                                       size_t* end) {
    if (row >= (size + row_size - 1) / row_size) return false;
    *begin = offset + row * row_size;
    *end = *begin + row_size < offset + size ? *begin + row_size : offset + size;
    return true;
}

// `grads` is not __restrict__: outputs.clear_grads may be the same array.
__global__ void adam_update_kernel(const OptimizerCounters* __restrict__ counters, AdamConstants k,
                                   float* __restrict__ params, const float* grads,
                                   float* __restrict__ m, float* __restrict__ v, size_t offset, size_t size,
                                   size_t row_size, bool skip_zero_rows, float* __restrict__ row_steps,
                                   SparseRowOutputs outputs) {
    const size_t row = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t begin = 0, end = 0;
    if (!group_row_range(offset, size, row_size, row, &begin, &end)) return;
    if (skip_zero_rows && all_zero(grads + begin, end - begin)) return;
    const float step_size =
        row_steps ? row_step_size(counters->step_learning_rate, k, row_steps, row) : counters->step_size;
    adam_update_row(step_size, k, k.l2_reg, params, grads, m, v, offset, begin, end, outputs, MlpFragmentTargets{});
}

// Row `threadIdx.x` of virtual block `vb` of the fused update's table: its
// group and element range; false where the thread has no row there.
__device__ inline bool fused_row(const AdamGroupTable& table, unsigned int vb, unsigned int* gi, size_t* begin,
                                 size_t* end) {
    unsigned int g = 0;
    while (g + 1 < table.n_groups && vb >= table.groups[g + 1].first_block) ++g;
    if (g >= table.n_groups || vb < table.groups[g].first_block) return false;
    const AdamGroupEntry& e = table.groups[g];
    *gi = g;
    return group_row_range(e.offset, e.size, e.row_size, (size_t)(vb - e.first_block) * blockDim.x + threadIdx.x,
                           begin, end);
}

// Whether the thread updates its row of virtual block `vb` (a row with an
// all-zero gradient is skipped where its group skips rows).
__device__ inline bool fused_row_to_update(const AdamGroupTable& table, const float* grads, unsigned int vb,
                                           unsigned int* gi, size_t* begin, size_t* end) {
    if (vb >= table.n_blocks || !fused_row(table, vb, gi, begin, end)) return false;
    return !(table.groups[*gi].skip_zero_rows && all_zero(grads + *begin, *end - *begin));
}

// The fused update (launch_adam_fused_update): one launch for every group,
// the table's virtual blocks taken grid-stride by at most one wave of real
// blocks, so the step size (double pow) is computed once per resident warp,
// not once per 256 rows (a 2^24-row table has ~65 k virtual blocks). Lane 0
// of each warp reads the counter and computes it while the other lanes check
// their first rows' gradients (the loads overlap the double arithmetic), and
// a shuffle hands it out. No shared memory: a block-wide broadcast through
// shared memory made racecheck report a write/read hazard when the kernel ran
// as the body of the update graph's conditional node (never inside a plain
// launch; the barrier orders it), and a warp needs no barrier at all. The
// barrier at the end makes every warp's read of the counter happen before
// thread 0 counts the block as done; the count of done blocks decides which
// block advances the counter. `table` is __grid_constant__: indexed by a
// run-time group number without a per-thread copy.
__global__ void adam_fused_update_kernel(OptimizerCounters* counters, AdamConstants k, LearningRateSchedule schedule,
                                         const __grid_constant__ AdamGroupTable table, float* __restrict__ params,
                                         const float* grads, float* __restrict__ m, float* __restrict__ v) {
    unsigned long long step = 0;
    float step_size = 0.0f;
    double lr = 0.0;
    if ((threadIdx.x & 31u) == 0) {
        const OptimizerCounters c = *counters;
        step = c.step;
        lr = scheduled_learning_rate(c, schedule);
        step_size = adam_step_size(c, k, lr);
    }
    unsigned int vb = blockIdx.x, gi = 0;
    size_t begin = 0, end = 0;
    bool update = fused_row_to_update(table, grads, vb, &gi, &begin, &end);
    step_size = __shfl_sync(0xffffffffu, step_size, 0);
    lr = __shfl_sync(0xffffffffu, lr, 0);
    for (;;) {
        if (update) {
            const AdamGroupEntry& g = table.groups[gi];
            const float row_step = g.row_steps ? row_step_size(lr, k, g.row_steps, (begin - g.offset) / g.row_size)
                                               : step_size;
            adam_update_row(row_step, k, g.l2_reg, params, grads, m, v, g.offset, begin, end, g.outputs,
                            g.fragments);
        }
        vb += gridDim.x;
        if (vb >= table.n_blocks) break;
        update = fused_row_to_update(table, grads, vb, &gi, &begin, &end);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        const unsigned int done = atomicAdd(&counters->blocks_done, 1u);
        if (done == gridDim.x - 1) {
            // Every block has read step: advance it for the next launch.
            __threadfence();
            counters->step = step + 1;
            counters->step_size = step_size;
            counters->step_learning_rate = lr;
            counters->blocks_done = 0;
        }
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

__global__ void ema_begin_step_kernel(const OptimizerCounters* nested, double decay, double window_fraction,
                                      uint32_t update_every, EmaWeights* weights) {
    const EmaStepWeights w = ema_step_weights(decay, window_fraction, update_every, nested->step);
    weights->keep = (float)w.keep;
    weights->take = (float)w.take;
    weights->apply = w.apply ? 1u : 0u;
}

__global__ void ema_update_kernel(const EmaWeights* __restrict__ weights, const float* __restrict__ params,
                                  float* __restrict__ average, size_t n) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const EmaWeights w = *weights;
    if (!w.apply) return;
    average[i] = w.keep * average[i] + w.take * params[i];
}

// The same update four parameters a thread, with 16-byte loads and stores:
// the average is a pure stream (12 bytes a parameter), so the scalar kernel's
// 4-byte accesses left it well under the memory bandwidth (lego's 10^7
// parameters: ~53 us a step on an H100). Grid-stride over at most
// kEmaUpdateBlocks blocks: with update_every > 1 most launches only read the
// weights and return, and ~20 k blocks doing just that cost a few us.
constexpr unsigned int kEmaUpdateBlocks = 2048;

__global__ void ema_update4_kernel(const EmaWeights* __restrict__ weights, const float4* __restrict__ params,
                                   float4* __restrict__ average, size_t n4) {
    const EmaWeights w = *weights;
    if (!w.apply) return;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const float4 p = params[i];
        float4 a = average[i];
        a.x = w.keep * a.x + w.take * p.x;
        a.y = w.keep * a.y + w.take * p.y;
        a.z = w.keep * a.z + w.take * p.z;
        a.w = w.keep * a.w + w.take * p.w;
        average[i] = a;
    }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

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
                        size_t row_size, bool skip_zero_rows, float* row_steps, const SparseRowOutputs& outputs,
                        cudaStream_t stream) {
    if (size == 0) return;
    if (row_size == 0) row_size = 1;
    const size_t n_rows = (size + row_size - 1) / row_size;
    adam_update_kernel<<<blocks_for(n_rows), kThreadsPerBlock, 0, stream>>>(
        counters, constants, params, grads, first_moment, second_moment, offset, size, row_size, skip_zero_rows,
        row_steps, outputs);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

unsigned int adam_fused_resident_blocks() {
    int device = 0, sms = 0, per_sm = 0;
    FUSEDNGP_GPU_CHECK(cudaGetDevice(&device));
    FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    FUSEDNGP_GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, adam_fused_update_kernel,
                                                                     (int)kThreadsPerBlock, 0));
    return (unsigned int)std::max(sms, 1) * (unsigned int)std::max(per_sm, 1);
}

unsigned int adam_fused_blocks_for_rows(size_t n_rows) { return n_rows > 0 ? blocks_for(n_rows) : 0; }

void launch_adam_fused_update(OptimizerCounters* counters, const AdamConstants& constants,
                              const LearningRateSchedule& schedule, const AdamGroupTable& table, float* params,
                              const float* grads, float* first_moment, float* second_moment, cudaStream_t stream) {
    const unsigned int wave = table.max_grid > 0 ? table.max_grid : table.n_blocks;
    const unsigned int blocks = std::max(1u, std::min(table.n_blocks, wave));
    adam_fused_update_kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(counters, constants, schedule, table, params,
                                                                     grads, first_moment, second_moment);
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

void launch_ema_begin_step(const OptimizerCounters* nested_counters, double decay, double window_fraction,
                           uint32_t update_every, EmaWeights* weights, cudaStream_t stream) {
    ema_begin_step_kernel<<<1, 1, 0, stream>>>(nested_counters, decay, window_fraction, update_every, weights);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_ema_update(const EmaWeights* weights, const float* params, float* average, size_t n,
                       cudaStream_t stream) {
    if (n == 0) return;
    size_t head = 0;  // elements done by the 4-wide kernel
    if (aligned16(params) && aligned16(average) && n >= 4) {
        const size_t n4 = n / 4;
        ema_update4_kernel<<<std::min(blocks_for(n4), kEmaUpdateBlocks), kThreadsPerBlock, 0, stream>>>(
            weights, reinterpret_cast<const float4*>(params), reinterpret_cast<float4*>(average), n4);
        FUSEDNGP_GPU_CHECK_LAUNCH();
        head = 4 * n4;
    }
    if (head == n) return;
    ema_update_kernel<<<blocks_for(n - head), kThreadsPerBlock, 0, stream>>>(weights, params + head, average + head,
                                                                            n - head);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
