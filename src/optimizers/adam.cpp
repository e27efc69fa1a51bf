#include "optimizers/adam.h"

#include "optimizers/adam_bias.h"

#include "optimizers/param_groups.h"
#include "optimizers/settings_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fusedngp {

namespace {

ZeroGradientRowSkip parse_row_skip(const json& config, const std::string& path) {
    const std::string key = "skip_zero_gradient_rows";
    auto it = config.find(key);
    if (it == config.end()) return ZeroGradientRowSkip::Auto;
    if (it->is_string()) {
        match_choice(it->get<std::string>(), {"auto"}, join_path(path, key));
        return ZeroGradientRowSkip::Auto;
    }
    if (!it->is_boolean()) {
        throw ConfigError(join_path(path, key), "must be true, false or \"auto\", got " + it->dump());
    }
    return it->get<bool>() ? ZeroGradientRowSkip::Always : ZeroGradientRowSkip::Never;
}

json row_skip_to_json(ZeroGradientRowSkip skip) {
    switch (skip) {
        case ZeroGradientRowSkip::Always: return true;
        case ZeroGradientRowSkip::Never: return false;
        case ZeroGradientRowSkip::Auto: break;
    }
    return "auto";
}

// tiny-cuda-nn's Adam has weight decay and AdaBound; we accept the fields so
// its configs load, and report non-default values in describe().
json read_not_implemented_fields(const json& config, const std::string& path) {
    json found = json::object();
    for (const char* key : {"relative_decay", "absolute_decay"}) {
        double v = get_number(config, path, key, 0.0);
        if (v != 0.0) found[key] = v;
    }
    if (get_bool(config, path, "adabound", false)) found["adabound"] = true;
    return found;
}

template <typename T>
bool all_zero(const T* values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (values[i] != T(0)) return false;
    }
    return true;
}

} // namespace

AdamSettings parse_adam_settings(const json& config, const std::string& path) {
    require_object(config, path);
    AdamSettings s;
    s.learning_rate = get_nonnegative(config, path, "learning_rate", s.learning_rate);
    s.beta1 = get_fraction_below_one(config, path, "beta1", s.beta1);
    s.beta2 = get_fraction_below_one(config, path, "beta2", s.beta2);
    s.epsilon = get_positive(config, path, "epsilon", s.epsilon);
    s.l2_reg = get_nonnegative(config, path, "l2_reg", s.l2_reg);
    s.skip_zero_gradient_rows = parse_row_skip(config, path);
    s.per_row_bias_correction = get_bool(config, path, "per_row_bias_correction", s.per_row_bias_correction);
    s.not_implemented = read_not_implemented_fields(config, path);
    return s;
}

template <typename T>
void AdamOptimizer<T>::allocate(const std::vector<ParamGroup>& groups) {
    groups_ = groups;
    const size_t extent = params_extent(groups);
    first_moment_.assign(extent, T(0));
    second_moment_.assign(extent, T(0));
    step_ = 0;
    size_t rows = 0;
    row_steps_offset_.assign(groups.size(), kNoRowSteps);
    for (size_t g = 0; g < groups.size(); ++g) {
        if (!settings_.per_row_bias_correction || !skips_rows_of(groups[g])) continue;
        row_steps_offset_[g] = rows;
        rows += rows_of(groups[g]);
    }
    row_steps_.assign(rows, T(0));
    bias_corrections_ = rows > 0 ? adam_bias_corrections(settings_.beta1, settings_.beta2) : std::vector<double>{};
}

template <typename T>
bool AdamOptimizer<T>::skips_rows_of(const ParamGroup& group) const {
    switch (settings_.skip_zero_gradient_rows) {
        case ZeroGradientRowSkip::Always: return true;
        case ZeroGradientRowSkip::Never: return false;
        case ZeroGradientRowSkip::Auto: break;
    }
    return group.row_size > 1;
}

template <typename T>
void AdamOptimizer<T>::step(T* params, const T* grads) {
    ++step_;
    // The bias corrections are scalars per step; computing them in double keeps
    // beta^t accurate for large t in both instantiations.
    const double t = (double)step_;
    const T step_size = (T)(settings_.learning_rate * std::sqrt(1.0 - std::pow(settings_.beta2, t)) /
                            (1.0 - std::pow(settings_.beta1, t)));
    for (size_t g = 0; g < groups_.size(); ++g) step_group(g, step_size, params, grads);
}

template <typename T>
void AdamOptimizer<T>::step_group(size_t g, T step_size, T* params, const T* grads) {
    const ParamGroup& group = groups_[g];
    const bool skip_zero_rows = skips_rows_of(group);
    T* row_steps = row_steps_offset_[g] != kNoRowSteps ? row_steps_.data() + row_steps_offset_[g] : nullptr;
    const double learning_rate = settings_.learning_rate;
    const std::vector<double>& bias = bias_corrections_;
    const size_t row_size = std::max<size_t>(group.row_size, 1);
    const int64_t n_rows = (int64_t)((group.size + row_size - 1) / row_size);
    const size_t group_end = group.offset + group.size;

    const T beta1 = (T)settings_.beta1, one_minus_beta1 = (T)(1.0 - settings_.beta1);
    const T beta2 = (T)settings_.beta2, one_minus_beta2 = (T)(1.0 - settings_.beta2);
    const T epsilon = (T)settings_.epsilon, l2_reg = takes_l2_reg(group) ? (T)settings_.l2_reg : T(0);
    T* m = first_moment_.data();
    T* v = second_moment_.data();

    // Rows are independent, so splitting them across threads is deterministic.
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < n_rows; ++row) {
        const size_t begin = group.offset + (size_t)row * row_size;
        const size_t end = std::min(begin + row_size, group_end);
        if (skip_zero_rows && all_zero(grads + begin, end - begin)) continue;
        T row_step_size = step_size;
        if (row_steps) {
            const float n = next_row_step((float)row_steps[row], (unsigned int)bias.size());
            row_steps[row] = (T)n;
            row_step_size = (T)(learning_rate * bias[(size_t)n - 1]);
        }
        for (size_t i = begin; i < end; ++i) {
            const T gi = grads[i] + l2_reg * params[i];
            m[i] = beta1 * m[i] + one_minus_beta1 * gi;
            v[i] = beta2 * v[i] + one_minus_beta2 * gi * gi;
            params[i] -= row_step_size * m[i] / (std::sqrt(v[i]) + epsilon);
        }
    }
}

template <typename T>
std::vector<StateBuffer<T>> AdamOptimizer<T>::state() {
    std::vector<StateBuffer<T>> buffers{{"first_moment", &first_moment_}, {"second_moment", &second_moment_}};
    if (!row_steps_.empty()) buffers.push_back({"row_steps", &row_steps_});
    return buffers;
}

template <typename T>
nlohmann::json AdamOptimizer<T>::describe() const {
    json d = {
        {"otype", otype()},
        {"learning_rate", settings_.learning_rate},
        {"beta1", settings_.beta1},
        {"beta2", settings_.beta2},
        {"epsilon", settings_.epsilon},
        {"l2_reg", settings_.l2_reg},
        {"skip_zero_gradient_rows", row_skip_to_json(settings_.skip_zero_gradient_rows)},
        {"per_row_bias_correction", settings_.per_row_bias_correction},
    };
    if (!settings_.not_implemented.empty()) d["not_implemented"] = settings_.not_implemented;
    return d;
}

template class AdamOptimizer<float>;
template class AdamOptimizer<double>;

} // namespace fusedngp
