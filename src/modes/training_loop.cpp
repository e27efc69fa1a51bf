#include "modes/training_loop.h"

#include <chrono>

namespace fusedngp {

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::Steps: return "steps";
        case StopReason::Seconds: return "seconds";
        case StopReason::Interrupted: return "interrupted";
    }
    return "?";
}

TrainOutcome run_training(Backend& backend, const TrainLimits& limits,
                          const std::function<bool(const TrainProgress&)>& report,
                          const std::atomic<bool>& stop_requested) {
    using clock = std::chrono::steady_clock;
    TrainOutcome out;
    out.last.step = backend.step();
    while (true) {
        if (limits.max_steps && backend.step() >= limits.max_steps) {
            out.reason = StopReason::Steps;
            break;
        }
        if (limits.max_seconds > 0 && out.last.train_seconds >= limits.max_seconds) {
            out.reason = StopReason::Seconds;
            break;
        }
        if (stop_requested.load()) {
            out.reason = StopReason::Interrupted;
            break;
        }
        auto t0 = clock::now();
        out.last.loss = backend.train_step(limits.batch_size);
        out.last.train_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        out.last.step = backend.step();
        out.last.steps_this_run += 1;
        if (report && !report(out.last)) {
            out.reason = StopReason::Interrupted;
            break;
        }
    }
    out.last.finished = true;
    if (report) report(out.last);
    return out;
}

} // namespace fusedngp
