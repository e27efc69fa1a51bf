#include "optimizers/ema.h"

#include "optimizers/param_groups.h"
#include "optimizers/settings_fields.h"

#include <cmath>
#include <cstdint>

namespace fusedngp {

EmaSettings parse_ema_settings(const json& config, const std::string& path) {
    require_object(config, path);
    EmaSettings s;
    // decay = 1 would never move the average and makes 1 - d^t zero.
    s.decay = get_fraction_below_one(config, path, "decay", s.decay);
    get_bool(config, path, "full_precision", false);  // type-checked, not used
    return s;
}

template <typename T>
EmaOptimizer<T>::EmaOptimizer(const EmaSettings& settings, std::unique_ptr<Optimizer<T>> nested)
    : settings_(settings), nested_(std::move(nested)) {}

template <typename T>
void EmaOptimizer<T>::allocate(const std::vector<ParamGroup>& groups) {
    nested_->allocate(groups);
    average_.assign(params_extent(groups), T(0));
}

template <typename T>
void EmaOptimizer<T>::step(T* params, const T* grads) {
    nested_->step(params, grads);
    const double d = settings_.decay;
    const double t = (double)nested_->step_count();
    const double new_weight = 1.0 - std::pow(d, t);
    const T keep = (T)(d * (1.0 - std::pow(d, t - 1.0)) / new_weight);
    const T take = (T)((1.0 - d) / new_weight);
    const int64_t n = (int64_t)average_.size();
    T* average = average_.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) average[i] = keep * average[i] + take * params[i];
}

template <typename T>
const T* EmaOptimizer<T>::inference_params(const T* params) const {
    return nested_->step_count() > 0 && !average_.empty() ? average_.data() : params;
}

template <typename T>
std::vector<StateBuffer<T>> EmaOptimizer<T>::state() {
    std::vector<StateBuffer<T>> buffers = {{"average", &average_}};
    for (StateBuffer<T>& b : prefixed_state("nested", nested_->state())) buffers.push_back(b);
    return buffers;
}

template <typename T>
nlohmann::json EmaOptimizer<T>::describe() const {
    return {{"otype", otype()}, {"decay", settings_.decay}, {"nested", nested_->describe()}};
}

template class EmaOptimizer<float>;
template class EmaOptimizer<double>;

} // namespace fusedngp
