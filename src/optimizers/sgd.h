// Plain stochastic gradient descent with L2 regularisation:
//   w -= learning_rate * (grad + l2_reg * w)
#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <string>
#include <vector>

namespace fusedngp {

struct SgdSettings {
    double learning_rate = 1e-3;
    double l2_reg = 1e-8;
};

// Reads "learning_rate" and "l2_reg".
SgdSettings parse_sgd_settings(const json& config, const std::string& path);

template <typename T>
class SgdOptimizer : public Optimizer<T> {
public:
    explicit SgdOptimizer(const SgdSettings& settings) : settings_(settings) {}

    std::string otype() const override { return "SGD"; }
    void allocate(const std::vector<ParamGroup>& groups) override;
    void step(T* params, const T* grads) override;

    uint64_t step_count() const override { return step_; }
    void set_step_count(uint64_t step) override { step_ = step; }
    double learning_rate() const override { return settings_.learning_rate; }
    void set_learning_rate(double lr) override { settings_.learning_rate = lr; }

    // SGD has no state besides the step count.
    std::vector<StateBuffer<T>> state() override { return {}; }
    nlohmann::json describe() const override;

private:
    SgdSettings settings_;
    std::vector<ParamGroup> groups_;
    uint64_t step_ = 0;
};

} // namespace fusedngp
