// Inline per-activation functors, so hot loops (the MLP's elementwise passes)
// get one switch per matrix instead of one per element and the compiler can
// inline and vectorise the body. activation.cpp's scalar functions dispatch to
// these same functors, so there is exactly one definition of each formula.
#pragma once

#include "networks/activation.h"

#include <cmath>
#include <stdexcept>

namespace fusedngp::activation_ops {

// Logistic function, written so that exp never overflows: for x < 0 we use
// e^x / (1 + e^x), whose exponent is negative.
template <typename T>
inline T stable_sigmoid(T x) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    T e = std::exp(x);
    return e / (T(1) + e);
}

struct Identity {
    template <typename T> static T value(T x) { return x; }
    template <typename T> static T derivative(T) { return T(1); }
};

struct Relu {
    template <typename T> static T value(T x) { return x > T(0) ? x : T(0); }
    template <typename T> static T derivative(T x) { return x > T(0) ? T(1) : T(0); }
};

struct LeakyRelu {
    static constexpr double kSlope = 0.01;
    template <typename T> static T value(T x) { return x > T(0) ? x : T(kSlope) * x; }
    template <typename T> static T derivative(T x) { return x > T(0) ? T(1) : T(kSlope); }
};

struct Exponential {
    template <typename T> static T value(T x) { return std::exp(x); }
    template <typename T> static T derivative(T x) { return std::exp(x); }
};

struct Sine {
    template <typename T> static T value(T x) { return std::sin(x); }
    template <typename T> static T derivative(T x) { return std::cos(x); }
};

struct Sigmoid {
    template <typename T> static T value(T x) { return stable_sigmoid(x); }
    template <typename T> static T derivative(T x) {
        T s = stable_sigmoid(x);
        return s * (T(1) - s);
    }
};

// (x + sqrt(x^2 + b)) / 2 with b = 4. For x < 0 the sum cancels badly, so we
// use the algebraically equal 2 / (sqrt(x^2 + 4) - x) there (multiply by the
// conjugate: (x + r)(r - x) = r^2 - x^2 = 4).
struct Squareplus {
    template <typename T> static T value(T x) {
        T r = std::sqrt(x * x + T(4));
        return x >= T(0) ? T(0.5) * (x + r) : T(2) / (r - x);
    }
    // d/dx = (1 + x / r) / 2; for x < 0 the same conjugate trick gives 2 / (r (r - x)).
    template <typename T> static T derivative(T x) {
        T r = std::sqrt(x * x + T(4));
        return x >= T(0) ? T(0.5) * (T(1) + x / r) : T(2) / (r * (r - x));
    }
};

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): exp never overflows and small
// values keep full precision.
struct Softplus {
    template <typename T> static T value(T x) {
        return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
    }
    template <typename T> static T derivative(T x) { return stable_sigmoid(x); }
};

struct Tanh {
    template <typename T> static T value(T x) { return std::tanh(x); }
    template <typename T> static T derivative(T x) {
        T t = std::tanh(x);
        return T(1) - t * t;
    }
};

// x * sigmoid(x); d/dx = s + x s (1 - s).
struct Silu {
    template <typename T> static T value(T x) { return x * stable_sigmoid(x); }
    template <typename T> static T derivative(T x) {
        T s = stable_sigmoid(x);
        return s * (T(1) + x * (T(1) - s));
    }
};

// Calls fn(Op{}) with the functor type of `a`. One switch per call site.
template <typename Fn>
inline decltype(auto) dispatch(Activation a, Fn&& fn) {
    switch (a) {
        case Activation::None: return fn(Identity{});
        case Activation::ReLU: return fn(Relu{});
        case Activation::LeakyReLU: return fn(LeakyRelu{});
        case Activation::Exponential: return fn(Exponential{});
        case Activation::Sine: return fn(Sine{});
        case Activation::Sigmoid: return fn(Sigmoid{});
        case Activation::Squareplus: return fn(Squareplus{});
        case Activation::Softplus: return fn(Softplus{});
        case Activation::Tanh: return fn(Tanh{});
        case Activation::SiLU: return fn(Silu{});
    }
    throw std::logic_error("invalid Activation enum value");
}

} // namespace fusedngp::activation_ops
