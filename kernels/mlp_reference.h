// Double-precision reference of the MLP the fused kernels compute, written
// as plain loops (one sample at a time) so it can be checked by eye. It is the
// ground truth of tests/gpu; it does not depend on the CPU engine.
//
//   z_0 = W_0 x,  h_l = f(z_l),  z_l = W_l h_{l-1} (l = 1..D-1),
//   y = g(W_D h_{D-1})
// with f the hidden and g the output activation, W_l [fan_out][fan_in]
// row-major, layers consecutive in `params`, no biases.
#pragma once

#include "networks/activation.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fusedngp::reference {

struct MlpDims {
    uint32_t n_in = 0, width = 0, n_hidden = 0, n_out = 0;
    Activation hidden = Activation::ReLU, output = Activation::None;

    uint32_t fan_in(uint32_t l) const { return l == 0 ? n_in : width; }
    uint32_t fan_out(uint32_t l) const { return l == n_hidden ? n_out : width; }
    size_t offset(uint32_t l) const {
        size_t o = 0;
        for (uint32_t j = 0; j < l; ++j) o += (size_t)fan_in(j) * fan_out(j);
        return o;
    }
    size_t n_params() const { return offset(n_hidden + 1); }
};

inline double activation(Activation a, double x) {
    switch (a) {
    case Activation::None: return x;
    case Activation::ReLU: return x > 0 ? x : 0;
    case Activation::LeakyReLU: return x > 0 ? x : 0.01 * x;
    case Activation::Exponential: return std::exp(x);
    case Activation::Sine: return std::sin(x);
    case Activation::Sigmoid: return 1 / (1 + std::exp(-x));
    case Activation::Squareplus: return 0.5 * (x + std::sqrt(x * x + 4));
    case Activation::Softplus: return std::log1p(std::exp(x));
    case Activation::Tanh: return std::tanh(x);
    case Activation::SiLU: return x / (1 + std::exp(-x));
    }
    return x;
}

inline double activation_derivative(Activation a, double x) {
    switch (a) {
    case Activation::None: return 1;
    case Activation::ReLU: return x > 0 ? 1 : 0;
    case Activation::LeakyReLU: return x > 0 ? 1 : 0.01;
    case Activation::Exponential: return std::exp(x);
    case Activation::Sine: return std::cos(x);
    case Activation::Sigmoid: { double s = 1 / (1 + std::exp(-x)); return s * (1 - s); }
    case Activation::Squareplus: return 0.5 * (1 + x / std::sqrt(x * x + 4));
    case Activation::Softplus: return 1 / (1 + std::exp(-x));
    case Activation::Tanh: { double t = std::tanh(x); return 1 - t * t; }
    case Activation::SiLU: { double s = 1 / (1 + std::exp(-x)); return s * (1 + x * (1 - s)); }
    }
    return 1;
}

// out[o] = sum_i W[o][i] * in[i]
inline void matvec(const double* w, uint32_t fan_out, uint32_t fan_in, const double* in, double* out) {
    for (uint32_t o = 0; o < fan_out; ++o) {
        double acc = 0;
        for (uint32_t i = 0; i < fan_in; ++i) acc += w[(size_t)o * fan_in + i] * in[i];
        out[o] = acc;
    }
}

// One sample forward. z[l] receives the pre-activation of matrix l (l = 0..D).
inline void forward(const MlpDims& d, const double* params, const double* x, double* y,
                    std::vector<std::vector<double>>& z) {
    z.resize(d.n_hidden + 1);
    std::vector<double> h(x, x + d.n_in);
    for (uint32_t l = 0; l <= d.n_hidden; ++l) {
        z[l].assign(d.fan_out(l), 0.0);
        matvec(params + d.offset(l), d.fan_out(l), d.fan_in(l), h.data(), z[l].data());
        const Activation a = l == d.n_hidden ? d.output : d.hidden;
        h.resize(d.fan_out(l));
        for (uint32_t o = 0; o < d.fan_out(l); ++o) h[o] = activation(a, z[l][o]);
    }
    for (uint32_t o = 0; o < d.n_out; ++o) y[o] = h[o];
}

// One sample backward given dL/dy: adds dL/dW into dparams and writes dL/dx
// into dx (if not null).
inline void backward(const MlpDims& d, const double* params, const double* x, const double* dy, double* dparams,
                     double* dx) {
    std::vector<std::vector<double>> z;
    std::vector<double> y(d.n_out);
    forward(d, params, x, y.data(), z);

    // delta = dL/dz of the current layer, starting at the output.
    std::vector<double> delta(d.n_out);
    for (uint32_t o = 0; o < d.n_out; ++o) delta[o] = dy[o] * activation_derivative(d.output, z[d.n_hidden][o]);

    for (uint32_t l = d.n_hidden + 1; l-- > 0;) {
        const uint32_t fi = d.fan_in(l), fo = d.fan_out(l);
        const double* w = params + d.offset(l);
        double* dw = dparams + d.offset(l);
        // Input of layer l: x, or the activation of the layer below.
        std::vector<double> in(fi);
        for (uint32_t i = 0; i < fi; ++i) in[i] = l == 0 ? x[i] : activation(d.hidden, z[l - 1][i]);
        for (uint32_t o = 0; o < fo; ++o)
            for (uint32_t i = 0; i < fi; ++i) dw[(size_t)o * fi + i] += delta[o] * in[i];
        // dL/d(input of layer l) = W_l^T delta
        std::vector<double> din(fi, 0.0);
        for (uint32_t o = 0; o < fo; ++o)
            for (uint32_t i = 0; i < fi; ++i) din[i] += w[(size_t)o * fi + i] * delta[o];
        if (l == 0) {
            if (dx != nullptr)
                for (uint32_t i = 0; i < fi; ++i) dx[i] = din[i];
        } else {
            delta.resize(fi);
            for (uint32_t i = 0; i < fi; ++i) delta[i] = din[i] * activation_derivative(d.hidden, z[l - 1][i]);
        }
    }
}

} // namespace fusedngp::reference
