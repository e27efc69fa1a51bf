// Adam [Kingma and Ba 2014] with tiny-cuda-nn's field names.
//
// Per element, at step t (1 for the first step):
//   g  = grad + l2_reg * w      (network weights only; encoding params: g = grad)
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g^2
//   w -= learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon)
//
// Row skipping: a hash grid touches only the few rows (feature vectors) that
// the batch's samples fall into. Letting momentum keep moving all the other
// rows would both cost time and drift entries no sample has seen recently, so
// rows whose gradient is entirely zero are left alone: w, m and v unchanged.
//
// Per-row bias correction (per_row_bias_correction, on by default, as
// tiny-cuda-nn's per-parameter step counts): a skipped row has taken fewer
// updates than the optimizer has steps, so its t above is its own count of
// updates ("row_steps" in state(), one per row of the groups that skip rows),
// not the global step. With the global step a row first touched late would
// start with the fully decayed corrections of ~1 while its moments are
// still warming up, which makes its first dozens of updates up to ~2x larger.
#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <string>
#include <vector>

namespace fusedngp {

// Which parameter groups skip all-zero-gradient rows.
enum class ZeroGradientRowSkip {
    Auto,    // groups with row_size > 1 (grid feature vectors); never MLP weights
    Always,  // every group, rows of row_size elements (row_size 1: single elements)
    Never,
};

struct AdamSettings {
    double learning_rate = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
    double l2_reg = 1e-8;
    ZeroGradientRowSkip skip_zero_gradient_rows = ZeroGradientRowSkip::Auto;
    bool per_row_bias_correction = true;
    // tiny-cuda-nn fields we accept but do not implement, when set to a
    // non-default value (relative_decay, absolute_decay, adabound).
    nlohmann::json not_implemented = nlohmann::json::object();
};

// Reads "learning_rate", "beta1", "beta2", "epsilon", "l2_reg",
// "skip_zero_gradient_rows" (true, false or "auto"), "per_row_bias_correction".
AdamSettings parse_adam_settings(const json& config, const std::string& path);

// Marks a group without row step counts (AdamOptimizer's row_steps_offset_).
constexpr size_t kNoRowSteps = ~size_t(0);

template <typename T>
class AdamOptimizer : public Optimizer<T> {
public:
    explicit AdamOptimizer(const AdamSettings& settings) : settings_(settings) {}

    std::string otype() const override { return "Adam"; }
    void allocate(const std::vector<ParamGroup>& groups) override;
    void step(T* params, const T* grads) override;

    uint64_t step_count() const override { return step_; }
    void set_step_count(uint64_t step) override { step_ = step; }
    double learning_rate() const override { return settings_.learning_rate; }
    void set_learning_rate(double lr) override { settings_.learning_rate = lr; }

    // "first_moment" (m) and "second_moment" (v), indexed like the params;
    // "row_steps" (updates per row of the row-skipping groups, in group
    // order) where rows count their own steps.
    std::vector<StateBuffer<T>> state() override;
    nlohmann::json describe() const override;

private:
    bool skips_rows_of(const ParamGroup& group) const;
    void step_group(size_t g, T step_size, T* params, const T* grads);

    AdamSettings settings_;
    std::vector<ParamGroup> groups_;
    std::vector<T> first_moment_;
    std::vector<T> second_moment_;
    std::vector<T> row_steps_;
    std::vector<size_t> row_steps_offset_;  // per group; kNoRowSteps where the group has none
    std::vector<double> bias_corrections_;  // adam_bias.h
    uint64_t step_ = 0;
};

} // namespace fusedngp
