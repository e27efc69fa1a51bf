// Losses on the plain residual r = p - t: L2, L1 and Huber.
#pragma once

#include "losses/elementwise_loss.h"

#include <cmath>

namespace fusedngp {

// r^2; gradient 2r.
template <typename T>
class L2Loss : public ElementwiseLoss<T, L2Loss<T>> {
public:
    std::string otype() const override { return "L2"; }
    T value(T p, T t, T) const { return (p - t) * (p - t); }
    T gradient(T p, T t, T) const { return T(2) * (p - t); }
};

// |r|; gradient sign(r) (0 at r == 0).
template <typename T>
class L1Loss : public ElementwiseLoss<T, L1Loss<T>> {
public:
    std::string otype() const override { return "L1"; }
    T value(T p, T t, T) const { return std::abs(p - t); }
    T gradient(T p, T t, T) const { return sign_of(p - t); }
};

// PyTorch's HuberLoss: r^2/2 for |r| <= delta, delta (|r| - delta/2) outside;
// gradient r inside, delta sign(r) outside (continuous at |r| = delta).
template <typename T>
class HuberLoss : public ElementwiseLoss<T, HuberLoss<T>> {
public:
    static constexpr double kDefaultDelta = 1.0;
    explicit HuberLoss(T delta = T(kDefaultDelta));
    std::string otype() const override { return "Huber"; }
    T delta() const { return delta_; }

    T value(T p, T t, T) const {
        const T r = p - t, a = std::abs(r);
        return a <= delta_ ? T(0.5) * r * r : delta_ * (a - T(0.5) * delta_);
    }
    T gradient(T p, T t, T) const {
        const T r = p - t;
        return std::abs(r) <= delta_ ? r : delta_ * sign_of(r);
    }

private:
    T delta_;
};

} // namespace fusedngp
