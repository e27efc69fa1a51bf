#include "gui/step_stats.h"

#include "model/model.h"

#include <algorithm>

namespace fusedngp {

double mlp_forward_flops_per_sample(const std::vector<NamedTensor>& tensors) {
    double flops = 0;
    for (const auto& t : tensors) {
        if (t.name.rfind("network.", 0) == 0 && t.shape.size() == 2) flops += 2.0 * (double)t.shape[0] * (double)t.shape[1];
    }
    return flops;
}

void StepStats::record(double total_ms, const StepTimings& split, uint32_t batch_size) {
    const double data = std::max(0.0, total_ms - split.forward_ms - split.backward_ms - split.optimizer_ms);
    // Exponential smoothing over ~20 steps: readable numbers that still follow changes.
    const double a = primed_ ? 0.05 : 1.0;
    data_ms_ += a * (data - data_ms_);
    forward_ms_ += a * (split.forward_ms - forward_ms_);
    backward_ms_ += a * (split.backward_ms - backward_ms_);
    optimizer_ms_ += a * (split.optimizer_ms - optimizer_ms_);
    batch_size_ = batch_size;
    primed_ = true;
}

void StepStats::reset() { *this = StepStats(); }

void FrameSteps::record(uint64_t total_steps) {
    if (!primed_ || total_steps < last_total_) {
        reset();
        primed_ = true;
        last_total_ = total_steps;
        return;
    }
    steps_[next_] = total_steps - last_total_;
    next_ = (next_ + 1) % kFrames;
    n_frames_ = std::min(n_frames_ + 1, kFrames);
    last_total_ = total_steps;
}

void WallStepRate::record(uint64_t total_steps, double seconds) {
    if (!primed_ || total_steps < window_steps_ || seconds < window_start_) {  // the first call, or a reset
        primed_ = true;
        window_steps_ = total_steps;
        window_start_ = seconds;
        rate_ = 0;
        return;
    }
    const double elapsed = seconds - window_start_;
    if (elapsed < kWindowSeconds) return;
    rate_ = (double)(total_steps - window_steps_) / elapsed;
    window_steps_ = total_steps;
    window_start_ = seconds;
}

double FrameSteps::per_frame() const {
    if (n_frames_ == 0) return 0.0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n_frames_; ++i) sum += steps_[i];
    return (double)sum / (double)n_frames_;
}

} // namespace fusedngp
