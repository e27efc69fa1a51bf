// Elementwise activation functions shared by the CPU MLP (and mirrored by the
// GPU kernels). Each has a value and a derivative written in terms of the
// pre-activation x, so backward needs only the stored pre-activations.
#pragma once

#include <string>
#include <vector>

namespace fusedngp {

enum class Activation {
    None,
    ReLU,
    LeakyReLU,   // slope 0.01 for x < 0 (tiny-cuda-nn's value)
    Exponential,
    Sine,
    Sigmoid,
    Squareplus,  // (x + sqrt(x^2 + 4)) / 2   (b = 4)
    Softplus,    // log(1 + exp(x))
    Tanh,
    SiLU,        // x * sigmoid(x)
};

// Names as written in configs ("ReLU", "None", ...), matched ignoring case.
Activation parse_activation(const std::string& name, const std::string& path);
std::string activation_name(Activation a);
const std::vector<std::string>& activation_names();

// y = f(x)
template <typename T> T activation_value(Activation a, T x);
// dy/dx at x
template <typename T> T activation_derivative(Activation a, T x);

} // namespace fusedngp
