// Finite-difference gradient checking in fp64, shared by the component tests.
//
// We check a scalar function L(x) = sum_ij R_ij * out_ij(x) with a fixed random
// weight matrix R (so every output element matters), comparing the analytic
// gradient with central differences. Error is norm-wise:
//   |g_analytic - g_fd| / max(|g_fd|, 1e-12)
#pragma once

#include "core/common.h"
#include "core/rng.h"

#include <cmath>
#include <functional>
#include <vector>

namespace fusedngp::test {

inline Matrix<double> random_matrix(int rows, int cols, uint64_t seed, double lo = -1.0, double hi = 1.0) {
    Rng rng(seed);
    Matrix<double> m(rows, cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = rng.uniform(lo, hi);
    return m;
}

inline std::vector<double> random_vector(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
    Rng rng(seed);
    std::vector<double> v(n);
    for (auto& x : v) x = rng.uniform(lo, hi);
    return v;
}

// Central-difference gradient of f with respect to the n values at x.
// f is evaluated with x modified in place; x is restored afterwards.
inline std::vector<double> numeric_gradient(double* x, size_t n, const std::function<double()>& f, double h = 1e-6) {
    std::vector<double> g(n);
    for (size_t i = 0; i < n; ++i) {
        double saved = x[i];
        x[i] = saved + h;
        double fp = f();
        x[i] = saved - h;
        double fm = f();
        x[i] = saved;
        g[i] = (fp - fm) / (2 * h);
    }
    return g;
}

inline double relative_error(const double* analytic, const double* numeric, size_t n) {
    double diff = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
        diff += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
        ref += numeric[i] * numeric[i];
    }
    return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-12);
}

inline double relative_error(const std::vector<double>& analytic, const std::vector<double>& numeric) {
    return relative_error(analytic.data(), numeric.data(), analytic.size());
}

inline double weighted_sum(const Matrix<double>& out, const Matrix<double>& weights) {
    return (out.array() * weights.array()).sum();
}

// Norm of a vector: a gradient check against an all-zero gradient proves
// nothing, so tests also assert the gradient is not trivially zero.
inline double norm(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
}

} // namespace fusedngp::test
