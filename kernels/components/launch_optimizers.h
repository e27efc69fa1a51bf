// Host entry points of the optimizer kernels (docs/CONFIG.md, src/optimizers).
// Per-step values live in device memory (OptimizerCounters, EmaWeights), so
// the launches are capturable in a CUDA graph and replayable.
#pragma once

#include "gpu/components/optimizer_state.h"
#include "gpu/mlp_fragment_slots.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// Adam's constants as the CPU rounds them: (float)beta1, (float)(1 - beta1), ...
// `beta1_d`/`beta2_d` are the double values for the bias corrections.
struct AdamConstants {
    double beta1_d = 0.9, beta2_d = 0.999;
    float beta1 = 0, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0, epsilon = 0, l2_reg = 0;
    // Per-row bias correction (optimizers/adam_bias.h): the device copy of
    // the table, for the rows that count their own updates.
    const double* bias_corrections = nullptr;
    unsigned int n_bias_corrections = 0;
};

// Stream-ordered writes of one counter field.
void launch_set_step(OptimizerCounters* counters, unsigned long long step, cudaStream_t stream);
void launch_set_learning_rate(OptimizerCounters* counters, double learning_rate, cudaStream_t stream);

// ++step; step_size = (float)(lr * sqrt(1 - beta2^t) / (1 - beta1^t)), t = step,
// lr = learning_rate * schedule(step before the increment).
void launch_adam_begin_step(OptimizerCounters* counters, const AdamConstants& constants,
                            const LearningRateSchedule& schedule, cudaStream_t stream);
// GpuOptimizer::set_sparse_group's outputs for the rows an update touches:
// clear_grads[i] = 0 (the same array as the gradient), half_mirror[i - offset]
// = __float2half_rn(params[i]). Null: not written.
struct SparseRowOutputs {
    float* clear_grads = nullptr;
    __half* half_mirror = nullptr;
};

// One Adam update of [offset, offset + size) in rows of row_size elements;
// with skip_zero_rows a row whose gradient is all zero is left untouched.
// Non-null row_steps: one update count per row of the group; an updated
// row's count advances and its step size is
// (float)(step_learning_rate * bias_corrections[count - 1]).
void launch_adam_update(const OptimizerCounters* counters, const AdamConstants& constants, float* params,
                        const float* grads, float* first_moment, float* second_moment, size_t offset, size_t size,
                        size_t row_size, bool skip_zero_rows, float* row_steps, const SparseRowOutputs& outputs,
                        cudaStream_t stream);

// The fused Adam update: every group of a leaf optimizer in one launch, the
// begin-step work folded in. One entry per group with rows (groups of size 0
// are left out); blocks [first_block, next group's first_block) update it.
struct AdamGroupEntry {
    size_t offset = 0, size = 0, row_size = 1;
    unsigned int first_block = 0;
    float l2_reg = 0;
    bool skip_zero_rows = false;
    float* row_steps = nullptr;  // per-row update counts (launch_adam_update), or null
    SparseRowOutputs outputs;
    // Non-null master: each updated weight p (from the group's offset) is
    // also written to master[p] and, as __float2half_rn, to its two
    // fragment slots (mlp_fragment_slots), i.e. what FusedMlp's
    // set_params_device would write for it.
    MlpFragmentTargets fragments;
};
constexpr int kMaxFusedAdamGroups = 8;  // a kernel argument: kept well under 4 KB
struct AdamGroupTable {
    unsigned int n_groups = 0;
    // Virtual blocks (256 rows each), taken grid-stride by
    // min(n_blocks, max_grid) real ones (at least 1: the last block to read
    // the counter advances it). max_grid 0: no cap.
    unsigned int n_blocks = 0;
    unsigned int max_grid = 0;
    AdamGroupEntry groups[kMaxFusedAdamGroups];
};
// Blocks of the fused update's rows (kernels/components/component_device.cuh's block size).
unsigned int adam_fused_blocks_for_rows(size_t n_rows);
// One wave of the fused kernel's blocks on the current device (occupancy
// query: call outside stream capture, e.g. at allocate()).
unsigned int adam_fused_resident_blocks();

// Bit for bit launch_adam_begin_step followed by launch_adam_update per
// group (same double scalars, same float expressions): lane 0 of each warp
// derives step_size from the counter's step s and learning rate (t = s + 1)
// while the other lanes read their gradient rows; the last block to
// finish reading (an atomic count in the counters) writes step = s + 1 and
// step_size, and resets the count, so the next launch in stream order sees
// the advanced counter. set_step / set_learning_rate are unchanged.
void launch_adam_fused_update(OptimizerCounters* counters, const AdamConstants& constants,
                              const LearningRateSchedule& schedule, const AdamGroupTable& table, float* params,
                              const float* grads, float* first_moment, float* second_moment, cudaStream_t stream);

// ++step; step_size = (float)(learning_rate * schedule(step before the increment)).
void launch_sgd_begin_step(OptimizerCounters* counters, const LearningRateSchedule& schedule, cudaStream_t stream);
// params[i] -= step_size * (grads[i] + l2_reg * params[i]) over [offset, offset + size).
void launch_sgd_update(const OptimizerCounters* counters, float l2_reg, float* params, const float* grads,
                       size_t offset, size_t size, cudaStream_t stream);

// From the nested optimizer's (already advanced) step count t, the weights of
// ema_step_weights (src/optimizers/ema_weights.h) rounded to float.
void launch_ema_begin_step(const OptimizerCounters* nested_counters, double decay, double window_fraction,
                           uint32_t update_every, EmaWeights* weights, cudaStream_t stream);
// average[i] = keep * average[i] + take * params[i], i < n, on the steps the
// weights apply to (every thread reads them and returns on the others).
void launch_ema_update(const EmaWeights* weights, const float* params, float* average, size_t n,
                       cudaStream_t stream);

} // namespace fusedngp::gpu
