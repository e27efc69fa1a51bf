// Plain structs shared by the GPU optimizers and their kernels.
#pragma once

#include <cstdint>

namespace fusedngp::gpu {

// Device-resident state of one Adam/SGD optimizer. Everything that changes
// from step to step lives here and is advanced by a one-thread kernel at the
// start of each step (the fused Adam update: by its own last block), so a
// training step captured once in a CUDA graph can be replayed: kernel
// arguments are only configuration.
struct OptimizerCounters {
    unsigned long long step = 0;  // completed updates
    double learning_rate = 0;     // base learning rate (before any schedule)
    float step_size = 0;          // what the current update multiplies by (set at the start of a step)
    double step_learning_rate = 0;  // the scheduled learning rate of that update (per-row bias correction)
    // The fused Adam update (one launch per step): blocks that have read
    // `step`; the last one advances the counter and resets this to 0.
    unsigned int blocks_done = 0;
};

// ExponentialDecay's schedule (docs/CONFIG.md): the update after s completed
// steps uses learning_rate * decay_base^n(s).
struct LearningRateSchedule {
    bool enabled = false;
    double decay_base = 1;
    unsigned long long decay_start = 0;
    unsigned long long decay_interval = 1;
    unsigned long long decay_end = ~0ull;  // no end
};

// Bias-corrected EMA weights of the current step (device-resident):
// average = keep * average + take * w.
struct EmaWeights {
    float keep = 0, take = 0;
    uint32_t apply = 0;  // 0: a step between the average's updates (EmaSettings::update_every)
};

} // namespace fusedngp::gpu
