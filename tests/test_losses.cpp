// Losses: hand-computed values, gradients against central differences in
// fp64 (through evaluate_frozen for stop-gradient denominators), and the
// factory's config handling.
#include "core/errors.h"
#include "losses/basic_losses.h"
#include "losses/factory.h"

#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fusedngp;

namespace {

const char* const kAllLosses[] = {"L2",   "L1",    "RelativeL2", "RelativeL1", "RelativeL2Luminance",
                                  "MAPE", "SMAPE", "Huber",      "CrossEntropy"};

std::unique_ptr<Loss<double>> make_loss(const std::string& otype, json extra = json::object()) {
    extra["otype"] = otype;
    return create_loss<double>(extra);
}

// Predictions and targets with |p - t| >= 0.05 (away from the |.| kink) and,
// for CrossEntropy, p in (0.05, 1).
void make_data(const std::string& otype, int rows, int cols, Matrix<double>& prediction, Matrix<double>& target) {
    const bool probabilities = otype == "CrossEntropy";
    prediction = test::random_matrix(rows, cols, 21, probabilities ? 0.05 : -1.0, 1.0);
    target = test::random_matrix(rows, cols, 22, probabilities ? 0.0 : -1.0, 1.0);
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            if (std::abs(prediction(i, j) - target(i, j)) < 0.05) target(i, j) = prediction(i, j) * 0.5 - 0.1;
        }
    }
    if (probabilities) target(0, 0) = 0.0;  // exercise the t == 0 branch
}

// Gradient of evaluate (with denominators frozen at the prediction) vs the
// finite-difference gradient of evaluate_frozen.
void expect_gradient_matches(const std::string& otype, int cols, json extra = json::object()) {
    SCOPED_TRACE(otype + " with " + std::to_string(cols) + " channels");
    auto loss = make_loss(otype, extra);
    Matrix<double> prediction, target, dpred;
    make_data(otype, 6, cols, prediction, target);
    const Matrix<double> frozen = prediction;
    const double value = loss->evaluate(prediction, target, &dpred);
    EXPECT_TRUE(std::isfinite(value));
    EXPECT_GT(value, 0.0);
    EXPECT_DOUBLE_EQ(loss->evaluate_frozen(prediction, frozen, target), value);
    ASSERT_EQ(dpred.rows(), prediction.rows());
    ASSERT_EQ(dpred.cols(), prediction.cols());

    auto numeric = test::numeric_gradient(prediction.data(), (size_t)prediction.size(),
                                          [&] { return loss->evaluate_frozen(prediction, frozen, target); });
    const std::vector<double> analytic(dpred.data(), dpred.data() + dpred.size());
    EXPECT_LT(test::relative_error(analytic, numeric), 1e-6);
    EXPECT_GT(test::norm(analytic), 1e-3);
}

Matrix<double> row(std::initializer_list<double> values) {
    Matrix<double> m(1, (int)values.size());
    int j = 0;
    for (double v : values) m(0, j++) = v;
    return m;
}

} // namespace

TEST(LossGradient, EveryLossMatchesFiniteDifferences) {
    for (const char* otype : kAllLosses) {
        for (int cols : {1, 3, 4}) expect_gradient_matches(otype, cols);
    }
}

TEST(LossGradient, HuberOnBothSidesOfDelta) {
    // delta 0.3 puts residuals of the random data on both sides of it; none is
    // within the finite-difference step of the switch point.
    expect_gradient_matches("Huber", 3, json{{"huber_delta", 0.3}});
}

TEST(LossGradient, RelativeLossesStopTheGradientThroughTheirDenominator) {
    // The returned gradient is NOT the full derivative of the loss value: the
    // prediction-dependent denominator is treated as a constant.
    for (const char* otype : {"RelativeL2", "RelativeL1", "RelativeL2Luminance", "SMAPE"}) {
        SCOPED_TRACE(otype);
        auto loss = make_loss(otype);
        Matrix<double> prediction, target, dpred;
        make_data(otype, 4, 3, prediction, target);
        loss->evaluate(prediction, target, &dpred);
        auto full = test::numeric_gradient(prediction.data(), (size_t)prediction.size(),
                                           [&] { return loss->evaluate(prediction, target, nullptr); });
        const std::vector<double> analytic(dpred.data(), dpred.data() + dpred.size());
        EXPECT_GT(test::relative_error(analytic, full), 1e-2);
    }
    // MAPE's denominator is the target's: its gradient is the full one.
    auto mape = make_loss("MAPE");
    Matrix<double> prediction, target, dpred;
    make_data("MAPE", 4, 3, prediction, target);
    mape->evaluate(prediction, target, &dpred);
    auto full = test::numeric_gradient(prediction.data(), (size_t)prediction.size(),
                                       [&] { return mape->evaluate(prediction, target, nullptr); });
    EXPECT_LT(test::relative_error(std::vector<double>(dpred.data(), dpred.data() + dpred.size()), full), 1e-6);
}

TEST(LossValue, HandComputedElements) {
    // One element p = 0.5, t = 0.2 (r = 0.3); mean over 1 element, so the
    // value and gradient are the per-element formulas.
    const Matrix<double> p = row({0.5}), t = row({0.2});
    struct Case { const char* otype; double value, gradient; };
    const Case cases[] = {
        {"L2", 0.09, 0.6},
        {"L1", 0.3, 1.0},
        {"RelativeL2", 0.09 / 0.26, 0.6 / 0.26},
        {"RelativeL1", 0.3 / 0.51, 1.0 / 0.51},
        {"RelativeL2Luminance", 0.09 / 0.26, 0.6 / 0.26},  // 1 channel: lum = p
        {"MAPE", 0.3 / 0.21, 1.0 / 0.21},
        {"SMAPE", 0.6 / 0.71, 2.0 / 0.71},
        {"Huber", 0.045, 0.3},  // default delta 1: r^2 / 2
        {"CrossEntropy", -0.2 * std::log(0.5), -0.4},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.otype);
        auto loss = make_loss(c.otype);
        Matrix<double> dpred;
        EXPECT_NEAR(loss->evaluate(p, t, &dpred), c.value, 1e-14);
        EXPECT_NEAR(dpred(0, 0), c.gradient, 1e-14);
        EXPECT_EQ(loss->otype(), c.otype);
    }
}

TEST(LossValue, MeanOverBatchAndChannels) {
    auto l2 = make_loss("l2");
    Matrix<double> p(2, 2), t = Matrix<double>::Zero(2, 2), dpred;
    p << 1, 2, 3, 4;
    EXPECT_DOUBLE_EQ(l2->evaluate(p, t, &dpred), (1 + 4 + 9 + 16) / 4.0);
    EXPECT_DOUBLE_EQ(dpred(1, 0), 2 * 3 / 4.0);
    // float instantiation computes the same thing.
    auto l2f = create_loss<float>(json{{"otype", "L2"}});
    EXPECT_FLOAT_EQ(l2f->evaluate(p.cast<float>(), t.cast<float>(), nullptr), 7.5f);
}

TEST(LossValue, LuminanceIsSharedByTheSampleChannels) {
    auto loss = make_loss("RelativeL2Luminance");
    // RGBA sample; every channel is divided by lum(rgb)^2 + 0.01.
    const Matrix<double> p = row({0.2, 0.6, 1.0, 0.5}), t = row({0.1, 0.1, 0.1, 0.1});
    const double lum = 0.299 * 0.2 + 0.587 * 0.6 + 0.114 * 1.0;
    const double denominator = lum * lum + 0.01;
    const double expected = (0.01 + 0.25 + 0.81 + 0.16) / denominator / 4;
    Matrix<double> dpred;
    EXPECT_NEAR(loss->evaluate(p, t, &dpred), expected, 1e-14);
    EXPECT_NEAR(dpred(0, 3), 2 * 0.4 / denominator / 4, 1e-14);
}

TEST(LossValue, HuberIsLinearOutsideDeltaAndContinuous) {
    auto huber = make_loss("Huber", json{{"huber_delta", 0.5}});
    Matrix<double> dpred;
    // r = -2: 0.5 * (2 - 0.25) = 0.875, gradient -0.5.
    EXPECT_NEAR(huber->evaluate(row({-1.5}), row({0.5}), &dpred), 0.875, 1e-15);
    EXPECT_NEAR(dpred(0, 0), -0.5, 1e-15);
    const double inside = huber->evaluate(row({0.5 - 1e-9}), row({0.0}), nullptr);
    const double outside = huber->evaluate(row({0.5 + 1e-9}), row({0.0}), nullptr);
    EXPECT_NEAR(inside, 0.125, 1e-8);
    EXPECT_NEAR(outside, 0.125, 1e-8);
}

TEST(LossValue, CrossEntropyZeroTargetIgnoresPrediction) {
    auto ce = make_loss("CrossEntropy");
    Matrix<double> dpred;
    EXPECT_EQ(ce->evaluate(row({0.0, 0.5}), row({0.0, 1.0}), &dpred), -std::log(0.5) / 2);
    EXPECT_EQ(dpred(0, 0), 0.0);
    EXPECT_EQ(dpred(0, 1), -1.0);
}

TEST(LossValue, ShapeMismatchThrowsAndEmptyIsZero) {
    auto loss = make_loss("L1");
    EXPECT_THROW(loss->evaluate(Matrix<double>(2, 3), Matrix<double>(2, 2), nullptr), std::invalid_argument);
    Matrix<double> dpred;
    EXPECT_EQ(loss->evaluate(Matrix<double>(0, 3), Matrix<double>(0, 3), &dpred), 0.0);
    EXPECT_EQ(dpred.rows(), 0);
}

TEST(LossFactory, OtypesIgnoreCaseAndExtraFields) {
    EXPECT_EQ(create_loss<float>(json{{"otype", "relativel2luminance"}})->otype(), "RelativeL2Luminance");
    EXPECT_EQ(create_loss<double>(json{{"otype", "smape"}, {"unused", 3}})->otype(), "SMAPE");
    auto huber = create_loss<double>(json{{"otype", "huber"}, {"huber_delta", 0.25}});
    auto* typed = dynamic_cast<HuberLoss<double>*>(huber.get());
    ASSERT_NE(typed, nullptr);
    EXPECT_EQ(typed->delta(), 0.25);
    EXPECT_EQ(dynamic_cast<HuberLoss<double>&>(*make_loss("Huber")).delta(), 1.0);
}

TEST(LossFactory, ErrorsNameTheField) {
    try {
        create_loss<double>(json{{"otype", "Charbonnier"}});
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "loss.otype");
        EXPECT_NE(std::string(e.what()).find("L2, L1, RelativeL2, RelativeL1, RelativeL2Luminance, MAPE, SMAPE, "
                                             "Huber, CrossEntropy"),
                  std::string::npos)
            << e.what();
    }
    for (json bad : {json(0.0), json(-1.0), json("big")}) {
        try {
            create_loss<double>(json{{"otype", "Huber"}, {"huber_delta", bad}});
            FAIL() << "expected ConfigError for huber_delta " << bad.dump();
        } catch (const ConfigError& e) {
            EXPECT_EQ(e.path(), "loss.huber_delta");
        }
    }
    EXPECT_THROW(create_loss<double>(json::object()), ConfigError);
}
