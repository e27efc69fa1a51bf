#include "networks/activation.h"

#include "core/json_fields.h"
#include "networks/activation_ops.h"

#include <utility>

namespace fusedngp {

namespace {

// Order matches the enum; names are tiny-cuda-nn's spelling.
const std::vector<std::pair<Activation, std::string>>& activation_table() {
    static const std::vector<std::pair<Activation, std::string>> table = {
        {Activation::None, "None"},
        {Activation::ReLU, "ReLU"},
        {Activation::LeakyReLU, "LeakyReLU"},
        {Activation::Exponential, "Exponential"},
        {Activation::Sine, "Sine"},
        {Activation::Sigmoid, "Sigmoid"},
        {Activation::Squareplus, "Squareplus"},
        {Activation::Softplus, "Softplus"},
        {Activation::Tanh, "Tanh"},
        {Activation::SiLU, "SiLU"},
    };
    return table;
}

} // namespace

const std::vector<std::string>& activation_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const auto& entry : activation_table()) n.push_back(entry.second);
        return n;
    }();
    return names;
}

Activation parse_activation(const std::string& name, const std::string& path) {
    const std::string canonical = match_choice(name, activation_names(), path);
    for (const auto& entry : activation_table()) {
        if (entry.second == canonical) return entry.first;
    }
    throw ConfigError(path, "unknown activation \"" + name + "\"");  // unreachable: match_choice threw
}

std::string activation_name(Activation a) {
    for (const auto& entry : activation_table()) {
        if (entry.first == a) return entry.second;
    }
    return "Invalid";
}

template <typename T>
T activation_value(Activation a, T x) {
    return activation_ops::dispatch(a, [x](auto op) { return decltype(op)::template value<T>(x); });
}

template <typename T>
T activation_derivative(Activation a, T x) {
    return activation_ops::dispatch(a, [x](auto op) { return decltype(op)::template derivative<T>(x); });
}

template float activation_value<float>(Activation, float);
template double activation_value<double>(Activation, double);
template float activation_derivative<float>(Activation, float);
template double activation_derivative<double>(Activation, double);

} // namespace fusedngp
