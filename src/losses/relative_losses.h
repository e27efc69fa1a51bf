// Losses normalised by the size of the prediction or target.
//
// eps = 0.01 keeps denominators away from zero. Where the denominator depends
// on the prediction (RelativeL2, RelativeL1, RelativeL2Luminance, SMAPE) it is
// a stop-gradient: the gradient treats it as a constant, d (the frozen input
// of ElementwiseLoss) is the prediction it is computed from. MAPE's
// denominator depends only on the target, so its gradient is the true one.
#pragma once

#include "losses/elementwise_loss.h"

#include <cmath>

namespace fusedngp {

constexpr double kRelativeLossEpsilon = 0.01;

// r^2 / (sg(p)^2 + eps); gradient 2r / (p^2 + eps).
template <typename T>
class RelativeL2Loss : public ElementwiseLoss<T, RelativeL2Loss<T>> {
public:
    std::string otype() const override { return "RelativeL2"; }
    static T denominator(T d) { return d * d + T(kRelativeLossEpsilon); }
    T value(T p, T t, T d) const { return (p - t) * (p - t) / denominator(d); }
    T gradient(T p, T t, T d) const { return T(2) * (p - t) / denominator(d); }
};

// |r| / (|sg(p)| + eps); gradient sign(r) / (|p| + eps).
template <typename T>
class RelativeL1Loss : public ElementwiseLoss<T, RelativeL1Loss<T>> {
public:
    std::string otype() const override { return "RelativeL1"; }
    static T denominator(T d) { return std::abs(d) + T(kRelativeLossEpsilon); }
    T value(T p, T t, T d) const { return std::abs(p - t) / denominator(d); }
    T gradient(T p, T t, T d) const { return sign_of(p - t) / denominator(d); }
};

// r^2 / (sg(lum)^2 + eps), lum = 0.299 p0 + 0.587 p1 + 0.114 p2 of the sample's
// first three channels (shared by all of its channels, alpha included). With
// fewer than 3 channels there is no colour, so lum is the element's own value
// (the loss then equals RelativeL2).
template <typename T>
class RelativeL2LuminanceLoss : public ElementwiseLoss<T, RelativeL2LuminanceLoss<T>> {
public:
    std::string otype() const override { return "RelativeL2Luminance"; }
    T frozen_input(const T* row, Eigen::Index j, Eigen::Index n_dims) const {
        if (n_dims < 3) return row[j];
        return T(0.299) * row[0] + T(0.587) * row[1] + T(0.114) * row[2];
    }
    static T denominator(T lum) { return lum * lum + T(kRelativeLossEpsilon); }
    T value(T p, T t, T lum) const { return (p - t) * (p - t) / denominator(lum); }
    T gradient(T p, T t, T lum) const { return T(2) * (p - t) / denominator(lum); }
};

// |r| / (|t| + eps); gradient sign(r) / (|t| + eps) (exact: no p in the denominator).
template <typename T>
class MapeLoss : public ElementwiseLoss<T, MapeLoss<T>> {
public:
    std::string otype() const override { return "MAPE"; }
    static T denominator(T t) { return std::abs(t) + T(kRelativeLossEpsilon); }
    T value(T p, T t, T) const { return std::abs(p - t) / denominator(t); }
    T gradient(T p, T t, T) const { return sign_of(p - t) / denominator(t); }
};

// 2|r| / (|sg(p)| + |t| + eps); gradient 2 sign(r) / (|p| + |t| + eps).
template <typename T>
class SmapeLoss : public ElementwiseLoss<T, SmapeLoss<T>> {
public:
    std::string otype() const override { return "SMAPE"; }
    static T denominator(T d, T t) { return std::abs(d) + std::abs(t) + T(kRelativeLossEpsilon); }
    T value(T p, T t, T d) const { return T(2) * std::abs(p - t) / denominator(d, t); }
    T gradient(T p, T t, T d) const { return T(2) * sign_of(p - t) / denominator(d, t); }
};

} // namespace fusedngp
