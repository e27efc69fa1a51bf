#include "optimizers/sgd.h"

#include "optimizers/settings_fields.h"

#include <cstdint>

namespace fusedngp {

SgdSettings parse_sgd_settings(const json& config, const std::string& path) {
    require_object(config, path);
    SgdSettings s;
    s.learning_rate = get_nonnegative(config, path, "learning_rate", s.learning_rate);
    s.l2_reg = get_nonnegative(config, path, "l2_reg", s.l2_reg);
    return s;
}

template <typename T>
void SgdOptimizer<T>::allocate(const std::vector<ParamGroup>& groups) {
    groups_ = groups;
    step_ = 0;
}

template <typename T>
void SgdOptimizer<T>::step(T* params, const T* grads) {
    ++step_;
    const T lr = (T)settings_.learning_rate, l2_reg = (T)settings_.l2_reg;
    for (const ParamGroup& group : groups_) {
        const int64_t begin = (int64_t)group.offset, end = (int64_t)(group.offset + group.size);
#pragma omp parallel for schedule(static)
        for (int64_t i = begin; i < end; ++i) params[i] -= lr * (grads[i] + l2_reg * params[i]);
    }
}

template <typename T>
nlohmann::json SgdOptimizer<T>::describe() const {
    return {{"otype", otype()}, {"learning_rate", settings_.learning_rate}, {"l2_reg", settings_.l2_reg}};
}

template class SgdOptimizer<float>;
template class SgdOptimizer<double>;

} // namespace fusedngp
