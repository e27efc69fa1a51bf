// The mode-independent training loop: steps a Backend until a step or time
// limit, a stop request (Ctrl-C) or the caller says stop, reporting progress.
// Training time excludes evaluation time, so time budgets and the
// PSNR-against-time tables measure training alone.
#pragma once

#include "backends/backend.h"

#include <atomic>
#include <functional>

namespace fusedngp {

struct TrainLimits {
    uint64_t max_steps = 0;      // total step count to reach (0: no limit)
    double max_seconds = 0;      // training seconds in this run (0: no limit)
    uint32_t batch_size = 1 << 14;
};

struct TrainProgress {
    uint64_t step = 0;           // steps completed in total (incl. resumed ones)
    uint64_t steps_this_run = 0;
    float loss = 0;              // loss of the last step
    double train_seconds = 0;    // training time in this run
    bool finished = false;       // last report
};

enum class StopReason { Steps, Seconds, Interrupted };

struct TrainOutcome {
    StopReason reason = StopReason::Steps;
    TrainProgress last;
};

// Calls `report` after each step with the progress; `report` may do
// evaluation (its time is not counted as training time) and returns false to
// stop. `stop_requested` is polled every step (set from a signal handler).
TrainOutcome run_training(Backend& backend, const TrainLimits& limits,
                          const std::function<bool(const TrainProgress&)>& report,
                          const std::atomic<bool>& stop_requested);

const char* stop_reason_name(StopReason r);

} // namespace fusedngp
