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
#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

struct EmaSettings {
    double decay = 0.99;
};

// Reads "decay" (in [0, 1)). tiny-cuda-nn's "full_precision" is accepted and
// ignored: the CPU engine always averages in T.
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
