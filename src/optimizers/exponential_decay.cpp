#include "optimizers/exponential_decay.h"

#include "optimizers/param_groups.h"
#include "optimizers/settings_fields.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

ExponentialDecaySettings parse_exponential_decay_settings(const json& config, const std::string& path) {
    require_object(config, path);
    ExponentialDecaySettings s;
    s.decay_base = get_fraction(config, path, "decay_base", s.decay_base);
    s.decay_start = (uint64_t)get_int(config, path, "decay_start", (int64_t)s.decay_start, 0);
    s.decay_interval = (uint64_t)get_int(config, path, "decay_interval", (int64_t)s.decay_interval, 1);
    if (config.contains("decay_end")) {
        s.decay_end = (uint64_t)get_int(config, path, "decay_end", 0, (int64_t)s.decay_start);
    }
    return s;
}

uint64_t decays_applied(const ExponentialDecaySettings& settings, uint64_t completed_steps) {
    const uint64_t last = std::min(completed_steps, settings.decay_end);
    if (last < settings.decay_start) return 0;
    return (last - settings.decay_start) / settings.decay_interval + 1;
}

template <typename T>
ExponentialDecayOptimizer<T>::ExponentialDecayOptimizer(const ExponentialDecaySettings& settings,
                                                        std::unique_ptr<Optimizer<T>> nested)
    : settings_(settings), nested_(std::move(nested)), base_learning_rate_(nested_->learning_rate()) {
    apply_schedule();
}

template <typename T>
void ExponentialDecayOptimizer<T>::allocate(const std::vector<ParamGroup>& groups) {
    nested_->allocate(groups);
    apply_schedule();
}

template <typename T>
void ExponentialDecayOptimizer<T>::step(T* params, const T* grads) {
    apply_schedule();
    nested_->step(params, grads);
    apply_schedule();
}

template <typename T>
void ExponentialDecayOptimizer<T>::set_step_count(uint64_t step) {
    nested_->set_step_count(step);
    apply_schedule();
}

template <typename T>
void ExponentialDecayOptimizer<T>::set_learning_rate(double lr) {
    base_learning_rate_ = lr;
    apply_schedule();
}

template <typename T>
double ExponentialDecayOptimizer<T>::current_learning_rate() const {
    const uint64_t n = decays_applied(settings_, nested_->step_count());
    return base_learning_rate_ * std::pow(settings_.decay_base, (double)n);
}

template <typename T>
void ExponentialDecayOptimizer<T>::apply_schedule() {
    nested_->set_learning_rate(current_learning_rate());
}

template <typename T>
std::vector<StateBuffer<T>> ExponentialDecayOptimizer<T>::state() {
    return prefixed_state("nested", nested_->state());
}

template <typename T>
nlohmann::json ExponentialDecayOptimizer<T>::describe() const {
    json d = {
        {"otype", otype()},
        {"decay_base", settings_.decay_base},
        {"decay_start", settings_.decay_start},
        {"decay_interval", settings_.decay_interval},
        {"learning_rate", base_learning_rate_},
        {"current_learning_rate", current_learning_rate()},
        {"nested", nested_->describe()},
    };
    if (settings_.decay_end != std::numeric_limits<uint64_t>::max()) d["decay_end"] = settings_.decay_end;
    return d;
}

template class ExponentialDecayOptimizer<float>;
template class ExponentialDecayOptimizer<double>;

} // namespace fusedngp
