// ExponentialDecay: wraps another optimizer and lowers its learning rate in
// steps (piecewise-constant exponential decay), with tiny-cuda-nn's fields.
//
// Let s be the number of completed steps before an update (0 for the first
// update) and lr0 the base learning rate (the nested optimizer's configured
// one). That update uses
//   lr(s) = lr0 * decay_base^n(s),
//   n(s)  = 0                                                   if s < decay_start
//         = floor((min(s, decay_end) - decay_start) / decay_interval) + 1  otherwise
// i.e. the first decay applies to the update at s == decay_start, then one
// more every decay_interval updates, the last one at or before decay_end
// (no end when decay_end is absent). This matches tiny-cuda-nn, so instant-ngp
// configs train with the same schedule. It is a closed form of s, so resuming
// at any step needs no extra state.
//
// learning_rate()/set_learning_rate() read and write lr0 (the schedule's
// base), not the decayed value: a user override of the learning rate keeps
// the schedule, and saving then restoring it is exact. describe() reports both.
#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

struct ExponentialDecaySettings {
    double decay_base = 0.1;
    uint64_t decay_start = 10000;
    uint64_t decay_interval = 10000;
    uint64_t decay_end = std::numeric_limits<uint64_t>::max();  // max: never stop
};

// Reads "decay_base" ([0, 1]), "decay_start" (>= 0), "decay_interval" (>= 1),
// "decay_end" (optional, >= decay_start).
ExponentialDecaySettings parse_exponential_decay_settings(const json& config, const std::string& path);

// n(s) above: how many decays apply to the update after `completed_steps` steps.
uint64_t decays_applied(const ExponentialDecaySettings& settings, uint64_t completed_steps);

template <typename T>
class ExponentialDecayOptimizer : public Optimizer<T> {
public:
    ExponentialDecayOptimizer(const ExponentialDecaySettings& settings, std::unique_ptr<Optimizer<T>> nested);

    std::string otype() const override { return "ExponentialDecay"; }
    void allocate(const std::vector<ParamGroup>& groups) override;
    void step(T* params, const T* grads) override;

    uint64_t step_count() const override { return nested_->step_count(); }
    void set_step_count(uint64_t step) override;
    // The base learning rate lr0 (see above).
    double learning_rate() const override { return base_learning_rate_; }
    void set_learning_rate(double lr) override;
    // The learning rate the next update uses: lr(step_count()).
    double current_learning_rate() const;

    const T* inference_params(const T* params) const override { return nested_->inference_params(params); }
    // The nested optimizer's buffers as "nested.<name>".
    std::vector<StateBuffer<T>> state() override;
    nlohmann::json describe() const override;

private:
    // Keeps the nested learning rate equal to current_learning_rate().
    void apply_schedule();

    ExponentialDecaySettings settings_;
    std::unique_ptr<Optimizer<T>> nested_;
    double base_learning_rate_;
};

} // namespace fusedngp
