// Shared helpers for the encoding tests: a full fp64 finite-difference check
// of an encoding's input and parameter gradients, and config-error matching.
#pragma once

#include "core/errors.h"
#include "encodings/encoding.h"
#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace fusedngp::test {

// The fractional part of t (t - floor t): where a point sits inside its grid cell.
inline double fractional(double t) { return t - std::floor(t); }

struct EncodingGradientCheck {
    double input_error = 0;
    double param_error = 0;
    double input_norm = 0;
    double param_norm = 0;
};

// L = sum(R .* encode(x)) with random R. Compares backward's dL/dx and
// dL/dparams with central differences over every input and every parameter.
inline EncodingGradientCheck check_encoding_gradients(const Encoding<double>& enc, const Matrix<double>& x,
                                                      std::vector<double> params, uint64_t seed) {
    EXPECT_EQ(params.size(), enc.n_params());
    const Matrix<double> weights = random_matrix((int)x.rows(), (int)enc.n_output_dims(), seed);
    Matrix<double> xx = x;
    Matrix<double> out;
    auto loss = [&] {
        enc.forward(params.data(), xx, out);
        return weighted_sum(out, weights);
    };

    Matrix<double> din;
    std::vector<double> dparams(params.size(), 0.0);
    enc.backward(params.data(), x, weights, dparams.data(), &din);

    EncodingGradientCheck r;
    std::vector<double> analytic_input(din.data(), din.data() + din.size());
    std::vector<double> numeric_input = numeric_gradient(xx.data(), (size_t)xx.size(), loss);
    r.input_error = relative_error(analytic_input, numeric_input);
    r.input_norm = norm(analytic_input);
    if (!params.empty()) {
        std::vector<double> numeric_params = numeric_gradient(params.data(), params.size(), loss);
        r.param_error = relative_error(dparams, numeric_params);
        r.param_norm = norm(dparams);
    }
    return r;
}

// Runs fn, expects a ConfigError whose path is `path` and whose message
// contains every string in `fragments`.
inline void expect_config_error(const std::function<void()>& fn, const std::string& path,
                                const std::vector<std::string>& fragments = {}) {
    try {
        fn();
        ADD_FAILURE() << "expected ConfigError at " << path;
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), path) << e.what();
        for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
}

} // namespace fusedngp::test
