// Activation functions: values, derivatives (vs central differences in fp64),
// numerical stability at extreme inputs, and name parsing.
#include "core/errors.h"
#include "networks/activation.h"

#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fusedngp;

namespace {

std::vector<Activation> all_activations() {
    std::vector<Activation> all;
    for (const auto& name : activation_names()) all.push_back(parse_activation(name, "test"));
    return all;
}

} // namespace

TEST(Activations, DerivativeMatchesFiniteDifferences) {
    // Points in [-4, 4], skipping the ReLU/LeakyReLU kink at 0.
    std::vector<double> points = test::random_vector(200, 7, -4.0, 4.0);
    for (double& x : points) {
        if (std::abs(x) < 1e-3) x = 0.5;
    }
    for (Activation a : all_activations()) {
        SCOPED_TRACE(activation_name(a));
        std::vector<double> analytic, numeric;
        for (double x : points) {
            analytic.push_back(activation_derivative<double>(a, x));
            double h = 1e-6;
            numeric.push_back((activation_value<double>(a, x + h) - activation_value<double>(a, x - h)) / (2 * h));
        }
        EXPECT_LT(test::relative_error(analytic, numeric), 1e-6);
        EXPECT_GT(test::norm(analytic), 1.0);
    }
}

TEST(Activations, KnownValues) {
    const double s1 = 1.0 / (1.0 + std::exp(-1.0));
    struct Case { Activation a; double x, value, derivative; };
    const Case cases[] = {
        {Activation::None, -2.5, -2.5, 1.0},
        {Activation::ReLU, -1.0, 0.0, 0.0},
        {Activation::ReLU, 2.0, 2.0, 1.0},
        {Activation::LeakyReLU, -2.0, -0.02, 0.01},
        {Activation::LeakyReLU, 3.0, 3.0, 1.0},
        {Activation::Exponential, 0.0, 1.0, 1.0},
        {Activation::Sine, 0.0, 0.0, 1.0},
        {Activation::Sigmoid, 0.0, 0.5, 0.25},
        {Activation::Squareplus, 0.0, 1.0, 0.5},
        {Activation::Squareplus, 1.5, 2.0, 0.8},  // sqrt(2.25 + 4) = 2.5
        {Activation::Softplus, 0.0, std::log(2.0), 0.5},
        {Activation::Tanh, 0.0, 0.0, 1.0},
        {Activation::SiLU, 1.0, s1, s1 * (1 + (1 - s1))},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(activation_name(c.a) + " at " + std::to_string(c.x));
        EXPECT_NEAR(activation_value<double>(c.a, c.x), c.value, 1e-15);
        EXPECT_NEAR(activation_derivative<double>(c.a, c.x), c.derivative, 1e-15);
        EXPECT_NEAR(activation_value<float>(c.a, (float)c.x), (float)c.value, 1e-6f);
        EXPECT_NEAR(activation_derivative<float>(c.a, (float)c.x), (float)c.derivative, 1e-6f);
    }
}

TEST(Activations, StableAtExtremeInputs) {
    // Sigmoid and Softplus must not overflow exp; Squareplus must not cancel.
    EXPECT_EQ(activation_value<double>(Activation::Sigmoid, 1000.0), 1.0);
    EXPECT_EQ(activation_value<double>(Activation::Sigmoid, -1000.0), 0.0);
    EXPECT_NEAR(activation_value<double>(Activation::Sigmoid, -50.0) / std::exp(-50.0), 1.0, 1e-12);
    EXPECT_EQ(activation_value<float>(Activation::Sigmoid, -200.0f), 0.0f);
    EXPECT_EQ(activation_derivative<float>(Activation::Sigmoid, -200.0f), 0.0f);

    EXPECT_EQ(activation_value<double>(Activation::Softplus, 1000.0), 1000.0);
    EXPECT_EQ(activation_value<float>(Activation::Softplus, 200.0f), 200.0f);
    EXPECT_NEAR(activation_value<double>(Activation::Softplus, -50.0) / std::exp(-50.0), 1.0, 1e-12);
    EXPECT_EQ(activation_derivative<double>(Activation::Softplus, 1000.0), 1.0);

    // (x + sqrt(x^2 + 4)) / 2 ~ -1/x for x -> -inf; the naive formula gives 0.
    EXPECT_NEAR(activation_value<double>(Activation::Squareplus, -1e6) * 1e6, 1.0, 1e-9);
    EXPECT_NEAR(activation_value<float>(Activation::Squareplus, -1e4f) * 1e4f, 1.0f, 1e-5f);
    EXPECT_NEAR(activation_derivative<double>(Activation::Squareplus, -1e6) * 1e12, 1.0, 1e-6);

    EXPECT_EQ(activation_value<double>(Activation::SiLU, -1000.0), 0.0);
    EXPECT_EQ(activation_value<double>(Activation::SiLU, 1000.0), 1000.0);
    EXPECT_TRUE(std::isfinite(activation_derivative<float>(Activation::SiLU, -200.0f)));
}

TEST(Activations, FloatAgreesWithDouble) {
    std::vector<double> points = test::random_vector(100, 11, -3.0, 3.0);
    for (Activation a : all_activations()) {
        SCOPED_TRACE(activation_name(a));
        for (double x : points) {
            const double v = activation_value<double>(a, x);
            const double d = activation_derivative<double>(a, x);
            EXPECT_NEAR(activation_value<float>(a, (float)x), v, 1e-5 * (1 + std::abs(v)));
            EXPECT_NEAR(activation_derivative<float>(a, (float)x), d, 1e-5 * (1 + std::abs(d)));
        }
    }
}

TEST(Activations, NamesParseIgnoringCaseAndRoundTrip) {
    EXPECT_EQ(activation_names().size(), 10u);
    for (const auto& name : activation_names()) {
        EXPECT_EQ(activation_name(parse_activation(name, "network.activation")), name);
    }
    EXPECT_EQ(parse_activation("relu", "x"), Activation::ReLU);
    EXPECT_EQ(parse_activation("LEAKYRELU", "x"), Activation::LeakyReLU);
    EXPECT_EQ(parse_activation("silu", "x"), Activation::SiLU);
    EXPECT_EQ(parse_activation("none", "x"), Activation::None);
}

TEST(Activations, UnknownNameIsConfigErrorListingAllowed) {
    try {
        parse_activation("Swish", "network.output_activation");
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "network.output_activation");
        const std::string msg = e.what();
        EXPECT_NE(msg.find("Swish"), std::string::npos);
        EXPECT_NE(msg.find("None, ReLU, LeakyReLU, Exponential, Sine, Sigmoid, Squareplus, Softplus, Tanh, SiLU"),
                  std::string::npos);
    }
}
