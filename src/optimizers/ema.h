// EMA: wraps another optimizer and keeps a bias-corrected exponential moving
// average of the parameters for inference (training continues on the raw
// parameters). otype "EMA"; instant-ngp spells it "Ema" (otypes ignore case).
//
// With d = decay and t the nested optimizer's step count after its update:
//   average_t = (d * (1 - d^(t-1)) * average_(t-1) + (1 - d) * w_t) / (1 - d^t)
// which equals  sum_{k<=t} (1-d) d^(t-k) w_k / (1 - d^t):  the plain EMA
// started from zero, divided by the weight it has accumulated. So the average
// is an unbiased mean from the first step on (average_1 = w_1) instead of
// being pulled towards zero for the first ~1/(1-d) steps.
//
// With "window_fraction" f > 0 the decay grows with the step count instead:
//   d_t = min(decay, max(0, 1 - 1 / (f t))),  average_t = d_t average_(t-1) + (1 - d_t) w_t
// The average's window 1/(1 - d_t) is the last fraction f of the steps taken,
// up to 1/(1 - decay): early in training the average follows the fast-moving
// parameters, later it averages over many steps. d_1 = 0 (f <= 1), so the
// weights always sum to 1 and no bias correction is needed.
//
// With "update_every" k > 1 the average takes the parameters every k-th step
// only (steps 1, 1 + k, ...; decay^k per update, so the window in steps is
// the same): the average's pass over every parameter runs once per k steps.
// Formulas: ema_step_weights (optimizers/ema_weights.h).
#pragma once

#include "core/json_fields.h"
#include "optimizers/ema_weights.h"
#include "optimizers/optimizer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

struct EmaSettings {
    double decay = 0.99;
    double window_fraction = 0;  // 0: fixed decay, bias-corrected
    uint32_t update_every = 1;
};

// Reads "decay" (in [0, 1)), "window_fraction" (in (0, 1]; absent: fixed
// decay) and "update_every" (>= 1). tiny-cuda-nn's "full_precision" is
// accepted and ignored: the CPU engine always averages in T.
EmaSettings parse_ema_settings(const json& config, const std::string& path);

template <typename T>
class EmaOptimizer : public Optimizer<T> {
public:
    EmaOptimizer(const EmaSettings& settings, std::unique_ptr<Optimizer<T>> nested);

    std::string otype() const override { return "EMA"; }
    void allocate(const std::vector<ParamGroup>& groups) override;
    void step(T* params, const T* grads) override;

    uint64_t step_count() const override { return nested_->step_count(); }
    void set_step_count(uint64_t step) override { nested_->set_step_count(step); }
    double learning_rate() const override { return nested_->learning_rate(); }
    void set_learning_rate(double lr) override { nested_->set_learning_rate(lr); }

    // The average once at least one step was taken; `params` before that.
    const T* inference_params(const T* params) const override;

    // "average", then the nested optimizer's buffers as "nested.<name>".
    std::vector<StateBuffer<T>> state() override;
    nlohmann::json describe() const override;

    const Optimizer<T>& nested() const { return *nested_; }

private:
    EmaSettings settings_;
    std::unique_ptr<Optimizer<T>> nested_;
    std::vector<T> average_;
};

} // namespace fusedngp
