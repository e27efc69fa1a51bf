// Training progress on the terminal: a live line redrawn in place on a TTY,
// a plain line every N steps otherwise (logs, CI, pipes).
#pragma once

#include "modes/training_loop.h"

#include <chrono>
#include <cstdio>

namespace fusedngp {

class ProgressPrinter {
public:
    ProgressPrinter(const TrainLimits& limits, uint64_t start_step, uint64_t log_every, FILE* out = stdout);

    // The quality readout: PSNR in dB by default; SDF mode shows IoU.
    void set_quality_readout(bool iou) { iou_ = iou; }
    // `psnr` (the quality value) < 0 means not evaluated yet.
    void update(const TrainProgress& p, double psnr);
    void finish(const TrainProgress& p, double psnr);

private:
    std::string format(const TrainProgress& p, double psnr) const;

    TrainLimits limits_;
    uint64_t start_step_;
    uint64_t log_every_;
    FILE* out_;
    bool tty_;
    std::chrono::steady_clock::time_point last_draw_;
    bool drawn_ = false;
    bool iou_ = false;
};

} // namespace fusedngp
