// Throughput numbers for the info panel: smoothed per-phase step times,
// steps/s, samples/s, achieved FLOP/s and the steps that ran per frame.
#pragma once

#include "model/trainer.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fusedngp {

struct NamedTensor;

// MLP FLOPs per sample for a forward pass: 2 * fan_in * fan_out per layer
// (a multiply and an add per weight). Training counts 3x (forward, backward
// to activations, backward to weights). Encodings are not counted.
double mlp_forward_flops_per_sample(const std::vector<NamedTensor>& tensors);

class StepStats {
public:
    // One step: its whole wall time and the backend's split of it. Data time
    // is what the backend's split does not cover (sampling the batch).
    void record(double total_ms, const StepTimings& split, uint32_t batch_size);
    void reset();

    double data_ms() const { return data_ms_; }
    double forward_ms() const { return forward_ms_; }
    double backward_ms() const { return backward_ms_; }
    double optimizer_ms() const { return optimizer_ms_; }
    double step_ms() const { return data_ms_ + forward_ms_ + backward_ms_ + optimizer_ms_; }
    double steps_per_second() const { return step_ms() > 0 ? 1000.0 / step_ms() : 0.0; }
    double samples_per_second() const { return steps_per_second() * batch_size_; }
    double gflops(double forward_flops_per_sample) const {
        return samples_per_second() * 3.0 * forward_flops_per_sample * 1e-9;
    }

private:
    bool primed_ = false;
    double data_ms_ = 0, forward_ms_ = 0, backward_ms_ = 0, optimizer_ms_ = 0;
    uint32_t batch_size_ = 0;
};

// Training steps per second of wall time, the rate a user sees: the panel's
// per-step split cannot give it, as GPU steps overlap the host and each
// other. Fed the running step count and the time each frame; the rate is
// that of the last window of at least kWindowSeconds (0 before the first).
class WallStepRate {
public:
    static constexpr double kWindowSeconds = 0.5;
    void record(uint64_t total_steps, double seconds);
    double steps_per_second() const { return rate_; }

private:
    bool primed_ = false;
    uint64_t window_steps_ = 0;
    double window_start_ = 0, rate_ = 0;
};

// Steps that ran per frame, as a mean over the last kFrames frames. Fed the
// running step count once per frame; a count that went down (a reset)
// starts over from it.
class FrameSteps {
public:
    static constexpr size_t kFrames = 16;
    void record(uint64_t total_steps);
    void reset() { *this = FrameSteps(); }
    double per_frame() const;  // 0 before two frames were recorded

private:
    bool primed_ = false;
    uint64_t last_total_ = 0;
    std::array<uint64_t, kFrames> steps_{};  // a ring of the last frames' counts
    size_t n_frames_ = 0;                     // filled entries, up to kFrames
    size_t next_ = 0;
};

} // namespace fusedngp
