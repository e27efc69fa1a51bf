#include "optimizers/ema.h"

#include "core/errors.h"
#include "optimizers/param_groups.h"
#include "optimizers/settings_fields.h"

#include <cstdint>

namespace fusedngp {

EmaSettings parse_ema_settings(const json& config, const std::string& path) {
    require_object(config, path);
    EmaSettings s;
    // decay = 1 would never move the average and makes 1 - d^t zero.
    s.decay = get_fraction_below_one(config, path, "decay", s.decay);
    if (config.contains("window_fraction")) {
        // f > 1 would give d_1 > 0: the weights would no longer sum to 1.
        s.window_fraction = get_fraction(config, path, "window_fraction", 0);
        if (s.window_fraction == 0)
            throw ConfigError(join_path(path, "window_fraction"), "is 0, allowed range is (0, 1]");
    }
    s.update_every = get_size(config, path, "update_every", s.update_every);
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
    const EmaStepWeights w =
        ema_step_weights(settings_.decay, settings_.window_fraction, settings_.update_every, nested_->step_count());
    if (!w.apply) return;
    const T keep = (T)w.keep;
    const T take = (T)w.take;
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
    nlohmann::json j = {{"otype", otype()}, {"decay", settings_.decay}};
    if (settings_.window_fraction > 0) j["window_fraction"] = settings_.window_fraction;
    if (settings_.update_every > 1) j["update_every"] = settings_.update_every;
    j["nested"] = nested_->describe();
    return j;
}

template class EmaOptimizer<float>;
template class EmaOptimizer<double>;

} // namespace fusedngp
