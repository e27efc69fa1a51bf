// Cross entropy against target probabilities: -t log(p) per element.
//
// Domain: predictions are probabilities, p > 0 (use an output activation such
// as Sigmoid, Softplus or Exponential). Elements with t == 0 contribute 0 and
// no gradient whatever p is (the 0 log 0 = 0 convention). For p <= 0 with
// t != 0 the loss is +inf or NaN: we do not clamp, because clamping would
// silently zero the gradient and hide a misconfigured output activation.
// Gradient: -t / p. Targets are not required to sum to 1 per sample.
#pragma once

#include "losses/elementwise_loss.h"

#include <cmath>

namespace fusedngp {

template <typename T>
class CrossEntropyLoss : public ElementwiseLoss<T, CrossEntropyLoss<T>> {
public:
    std::string otype() const override { return "CrossEntropy"; }
    T value(T p, T t, T) const { return t == T(0) ? T(0) : -t * std::log(p); }
    T gradient(T p, T t, T) const { return t == T(0) ? T(0) : -t / p; }
};

} // namespace fusedngp
