#pragma once
// Dynamic loss scaling for fp16 backward passes: the loss gradient is
// multiplied by a scale before fp16 rounding so that tiny gradients survive,
// and divided out again before the update. A step whose gradients come out
// non-finite is skipped by the caller and halves the scale; a run of clean
// steps doubles it again, within [min_scale, max_scale].
#include <cstdint>

namespace fusedngp {

struct LossScaleSettings {
    float initial = 128.f;
    uint32_t growth_interval = 1000;  // clean steps in a row before the scale doubles
    float min_scale = 1.f;
    float max_scale = 32768.f;
};

// FUSEDNGP_LOSS_SCALE=S[:G] replaces `defaults.initial` by S (and the growth
// interval by G), widening [min_scale, max_scale] to hold S: a knob for
// precision experiments, not a config field (tiny-cuda-nn's schema has none).
// A malformed value is an InputError naming the variable.
LossScaleSettings loss_scale_settings_from_environment(const LossScaleSettings& defaults = {});

class DynamicLossScale {
public:
    explicit DynamicLossScale(const LossScaleSettings& settings);

    float scale() const { return scale_; }
    // Sets the scale directly (tests, experiments); the clean run restarts.
    void set(float scale);
    // A finished step that ran with `step_scale` (steps run ahead of their
    // readback, so it may be an older scale than scale()). Returns true when
    // scale() changed. Halves at most once per scale: the steps queued with
    // the old scale overflow as well and must not halve it again.
    bool on_step(float step_scale, bool non_finite);

private:
    LossScaleSettings settings_;
    float scale_;
    uint32_t clean_steps_ = 0;
};

} // namespace fusedngp
