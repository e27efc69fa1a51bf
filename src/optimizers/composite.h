// Composite: different optimizers (or settings) for different parts of the
// parameter array. Two config forms:
//
// By group name (ours): each ParamGroup ("encoding", "network") gets its own
// optimizer; every non-empty group must be listed.
//   {"otype": "Composite", "groups": {"encoding": {"otype": "Adam", ...},
//                                     "network":  {"otype": "Adam", ...}}}
//
// By slice (tiny-cuda-nn's form): consecutive slices of the flat array, in
// order, each "n_params_to_optimize" long; the last entry may omit it to take
// the rest. The slices must cover the array exactly.
//   {"otype": "Composite", "nested": [{"otype": "Adam", "n_params_to_optimize": 1024}, {...}]}
//
// Each nested optimizer sees only its part: its groups are rebased to offset 0
// and step() gets params/grads pointers advanced to the part's start.
//
// learning_rate() is tiny-cuda-nn's "learning_rate_scale" (default 1): setting
// it to s sets every nested learning rate to (its configured rate) * s, so
// wrappers such as ExponentialDecay scale all groups while keeping their ratio.
#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fusedngp {

// Where each part of a Composite lives, computed from the model's groups by
// allocate() (shared by the CPU optimizer and its GPU twin, which must agree).
struct CompositeSlot {
    std::string group_name;            // by-name form
    std::optional<size_t> slice_size;  // by-slice form; none on the last = the rest
};
struct CompositeLayout {
    size_t offset = 0, size = 0;     // the part's range in the full parameter array
    std::vector<ParamGroup> groups;  // the groups it sees, rebased to its start
};
// Throws ConfigError at `config_path`.groups (a non-empty group without an
// optimizer) or .nested (slices that do not cover the parameters exactly).
std::vector<CompositeLayout> layout_composite(const std::vector<ParamGroup>& groups,
                                              const std::vector<CompositeSlot>& slots, bool by_slice,
                                              const std::string& config_path);

template <typename T>
struct CompositePart {
    std::string label;       // "groups.encoding" or "nested.0": state prefix, error path
    std::string group_name;  // by-name form: the ParamGroup it optimizes
    std::optional<size_t> slice_size;  // by-slice form; none on the last = the rest
    std::unique_ptr<Optimizer<T>> optimizer;
    // Set by allocate(): where the part lives in the full parameter array.
    size_t offset = 0;
    size_t size = 0;
};

template <typename T>
class CompositeOptimizer : public Optimizer<T> {
public:
    // `by_slice` selects tiny-cuda-nn's form. `config_path` names the config in
    // errors raised by allocate() (e.g. a group without an optimizer).
    CompositeOptimizer(std::vector<CompositePart<T>> parts, bool by_slice, double learning_rate_scale,
                       std::string config_path);

    std::string otype() const override { return "Composite"; }
    void allocate(const std::vector<ParamGroup>& groups) override;
    void step(T* params, const T* grads) override;

    uint64_t step_count() const override { return step_; }
    void set_step_count(uint64_t step) override;
    double learning_rate() const override { return learning_rate_scale_; }
    void set_learning_rate(double scale) override;

    // `params` unless a part (e.g. an EMA) has its own inference parameters;
    // then a copy with those parts replaced.
    const T* inference_params(const T* params) const override;
    // Each part's buffers as "<label>.<name>".
    std::vector<StateBuffer<T>> state() override;
    nlohmann::json describe() const override;

private:
    std::vector<CompositePart<T>> parts_;
    std::vector<double> base_learning_rates_;  // each part's configured rate
    bool by_slice_;
    double learning_rate_scale_;
    std::string config_path_;
    size_t extent_ = 0;
    uint64_t step_ = 0;
    mutable std::vector<T> inference_buffer_;
};

// Parses either form; nested optimizers via create_optimizer.
template <typename T>
std::unique_ptr<Optimizer<T>> create_composite_optimizer(const json& config, const std::string& path);

} // namespace fusedngp
