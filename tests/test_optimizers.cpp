// Optimizers: update formulas against hand-computed numbers, row skipping,
// wrappers (EMA, ExponentialDecay, Composite), state for resuming, and the
// factory's config errors.
#include "optimizers/adam.h"
#include "optimizers/composite.h"
#include "optimizers/ema.h"
#include "optimizers/exponential_decay.h"
#include "optimizers/factory.h"
#include "optimizers/sgd.h"
#include "optimizers/state_matching.h"
#include "core/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace fusedngp;

namespace {

std::vector<ParamGroup> single_group(size_t size, size_t row_size = 1) {
    return {ParamGroup{"network", 0, size, row_size}};
}

// The buffer named `name` in opt.state(); fails the test if absent.
template <typename T>
const std::vector<T>& state_buffer(Optimizer<T>& opt, const std::string& name) {
    for (const StateBuffer<T>& b : opt.state()) {
        if (b.name == name) return *b.data;
    }
    ADD_FAILURE() << "no state buffer named " << name;
    static const std::vector<T> empty;
    return empty;
}

std::vector<std::string> state_names(Optimizer<double>& opt) {
    std::vector<std::string> names;
    for (const StateBuffer<double>& b : opt.state()) names.push_back(b.name);
    return names;
}

std::string config_error_path(const json& config) {
    try {
        create_optimizer<double>(config);
    } catch (const ConfigError& e) {
        return e.path();
    }
    return "(no error)";
}

} // namespace

TEST(Adam, TwoStepsMatchHandComputation) {
    // One weight w = 1, learning_rate 0.1, beta1 0.9, beta2 0.999, epsilon 1e-8, l2_reg 0.
    //
    // Step t=1, g = 0.5:
    //   m = 0.1 * 0.5                        = 0.05
    //   v = 0.001 * 0.25                     = 0.00025        sqrt(v) = 0.0158113883
    //   step size = 0.1 * sqrt(1 - 0.999) / (1 - 0.9) = 0.0316227766
    //   update = 0.0316227766 * 0.05 / (0.0158113883 + 1e-8) = 0.0999999368
    //   w = 1 - 0.0999999368                 = 0.9000000632
    // Step t=2, g = -0.25:
    //   m = 0.9 * 0.05 + 0.1 * (-0.25)       = 0.02
    //   v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225     sqrt(v) = 0.0176705970
    //   step size = 0.1 * sqrt(1 - 0.999^2) / (1 - 0.9^2) = 0.1 * 0.0447101778 / 0.19 = 0.0235316725
    //   update = 0.0235316725 * 0.02 / (0.0176705970 + 1e-8) = 0.0266336889
    //   w = 0.9000000632 - 0.0266336889      = 0.8733663744
    AdamSettings s;
    s.learning_rate = 0.1;
    s.l2_reg = 0;
    AdamOptimizer<double> adam(s);
    adam.allocate(single_group(1));
    std::vector<double> w = {1.0};

    std::vector<double> g = {0.5};
    adam.step(w.data(), g.data());
    EXPECT_NEAR(w[0], 0.9000000632, 1e-10);
    EXPECT_NEAR(state_buffer(adam, "first_moment")[0], 0.05, 1e-15);
    EXPECT_NEAR(state_buffer(adam, "second_moment")[0], 0.00025, 1e-18);

    g = {-0.25};
    adam.step(w.data(), g.data());
    EXPECT_NEAR(w[0], 0.8733663744, 1e-10);
    EXPECT_NEAR(state_buffer(adam, "first_moment")[0], 0.02, 1e-15);
    EXPECT_NEAR(state_buffer(adam, "second_moment")[0], 0.00031225, 1e-18);
    EXPECT_EQ(adam.step_count(), 2u);
}

TEST(Adam, FloatMatchesDouble) {
    AdamSettings s;
    s.learning_rate = 0.05;
    AdamOptimizer<float> adam_f(s);
    AdamOptimizer<double> adam_d(s);
    adam_f.allocate(single_group(3));
    adam_d.allocate(single_group(3));
    std::vector<float> wf = {0.5f, -1.0f, 2.0f};
    std::vector<double> wd = {0.5, -1.0, 2.0};
    for (int step = 0; step < 5; ++step) {
        std::vector<double> gd = {0.3 - 0.1 * step, -0.2 * step, 1.5};
        std::vector<float> gf(gd.begin(), gd.end());
        adam_f.step(wf.data(), gf.data());
        adam_d.step(wd.data(), gd.data());
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(wf[i], wd[i], 1e-6);
}

TEST(Adam, SkipsRowsWithAllZeroGradientIncludingMoments) {
    // Encoding: 3 rows of 2 (a grid), network: 2 single elements.
    const std::vector<ParamGroup> groups = {{"encoding", 0, 6, 2}, {"network", 6, 2, 1}};
    AdamSettings s;
    s.learning_rate = 0.1;
    s.l2_reg = 1e-3;  // must not move skipped rows either
    AdamOptimizer<double> adam(s);
    adam.allocate(groups);
    std::vector<double> w = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<double> g1 = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    adam.step(w.data(), g1.data());

    const std::vector<double> w_after_1 = w;
    const std::vector<double> m_after_1 = state_buffer(adam, "first_moment");
    const std::vector<double> v_after_1 = state_buffer(adam, "second_moment");

    // Row 1 (elements 2, 3) all zero -> skipped. Row 0 has one zero element but
    // is not all zero -> updated. Network element 6 has a zero gradient but
    // network rows are never skipped by default -> momentum moves it.
    std::vector<double> g2 = {0.1, 0.0, 0.0, 0.0, 0.5, 0.6, 0.0, 0.8};
    adam.step(w.data(), g2.data());
    const std::vector<double> m = state_buffer(adam, "first_moment");
    const std::vector<double> v = state_buffer(adam, "second_moment");
    for (size_t i : {2, 3}) {
        EXPECT_EQ(w[i], w_after_1[i]) << i;
        EXPECT_EQ(m[i], m_after_1[i]) << i;
        EXPECT_EQ(v[i], v_after_1[i]) << i;
    }
    for (size_t i : {0, 1, 4, 5, 6, 7}) {
        EXPECT_NE(w[i], w_after_1[i]) << i;
        EXPECT_NE(m[i], m_after_1[i]) << i;
    }
}

// A row first touched at step 6 takes the updates a fresh Adam would take
// from step 1 (its own t), as tiny-cuda-nn's per-parameter step counts do;
// with the global step its first updates differ (larger).
TEST(Adam, SkippedRowsCountTheirOwnStepsForBiasCorrection) {
    const std::vector<ParamGroup> groups = {{"encoding", 0, 4, 2}};
    const std::vector<double> late_grads[] = {{0.3, -0.2}, {0.25, -0.1}, {0.4, 0.05}};
    auto run = [&](bool per_row) {
        AdamSettings s;
        s.learning_rate = 0.1;
        s.beta2 = 0.99;
        s.per_row_bias_correction = per_row;
        AdamOptimizer<double> adam(s);
        adam.allocate(groups);
        std::vector<double> w = {1, 2, 3, 4};
        for (int i = 0; i < 5; ++i) {  // row 0 every step, row 1 never
            std::vector<double> g = {0.1 * (i + 1), -0.2, 0, 0};
            adam.step(w.data(), g.data());
        }
        EXPECT_EQ(w[2], 3.0);
        for (const auto& late : late_grads) {
            std::vector<double> g = {0.1, 0.1, late[0], late[1]};
            adam.step(w.data(), g.data());
        }
        if (per_row) {
            // A copy: GCC 13 takes a reference bound here for one to the temporary name.
            const std::vector<double> steps = state_buffer(adam, "row_steps");
            EXPECT_EQ(steps, (std::vector<double>{8, 3}));
        } else {
            EXPECT_EQ(state_names(adam), (std::vector<std::string>{"first_moment", "second_moment"}));
        }
        return std::vector<double>{w[2], w[3]};
    };
    // The same three gradients given to a fresh one-row Adam from step 1.
    AdamSettings s;
    s.learning_rate = 0.1;
    s.beta2 = 0.99;
    AdamOptimizer<double> fresh(s);
    fresh.allocate({{"encoding", 0, 2, 2}});
    std::vector<double> w = {3, 4};
    for (const auto& late : late_grads) {
        std::vector<double> g = late;
        fresh.step(w.data(), g.data());
    }
    const std::vector<double> per_row = run(true), global = run(false);
    EXPECT_NEAR(per_row[0], w[0], 1e-14);
    EXPECT_NEAR(per_row[1], w[1], 1e-14);
    EXPECT_GT(std::fabs(global[0] - w[0]), 1e-3);
}

// Saved state without "row_steps" (an optimizer that did not count rows)
// still loads: the counts restart at zero. Anything else missing is an error.
TEST(OptimizerState, RowStepsMayBeMissingFromSavedState) {
    const std::vector<StateBufferShape> expected = {{"nested.first_moment", 2}, {"nested.row_steps", 1}};
    const SavedStateBuffers without = {{"nested.first_moment", {1.f, 2.f}}};
    const auto matched = match_state_buffers(expected, without, "snapshot");
    ASSERT_EQ(matched.size(), 2u);
    EXPECT_EQ(*matched[0], (std::vector<float>{1.f, 2.f}));
    EXPECT_EQ(matched[1], nullptr);
    EXPECT_THROW(match_state_buffers(expected, {{"nested.row_steps", {3.f}}}, "snapshot"), InputError);
    EXPECT_THROW(match_state_buffers(expected, {{"nested.first_moment", {1.f}}}, "snapshot"), InputError);
    const SavedStateBuffers extra = {{"nested.first_moment", {1.f, 2.f}}, {"nested.average", {0.f}}};
    EXPECT_THROW(match_state_buffers(expected, extra, "snapshot"), InputError);
}

TEST(Adam, RowSkipSettingOverridesTheDefault) {
    const std::vector<ParamGroup> groups = {{"encoding", 0, 2, 2}, {"network", 2, 1, 1}};
    std::vector<double> g_first = {1, 1, 1};
    std::vector<double> g_zero = {0, 0, 0};
    auto changed_after_zero_step = [&](const json& config) {
        auto opt = create_optimizer<double>(config);
        opt->allocate(groups);
        std::vector<double> w = {1, 1, 1};
        opt->step(w.data(), g_first.data());
        std::vector<double> before = w;
        opt->step(w.data(), g_zero.data());
        return std::vector<bool>{w[0] != before[0], w[2] != before[2]};
    };
    EXPECT_EQ(changed_after_zero_step({{"otype", "Adam"}}), (std::vector<bool>{false, true}));
    EXPECT_EQ(changed_after_zero_step({{"otype", "Adam"}, {"skip_zero_gradient_rows", "auto"}}),
              (std::vector<bool>{false, true}));
    EXPECT_EQ(changed_after_zero_step({{"otype", "Adam"}, {"skip_zero_gradient_rows", true}}),
              (std::vector<bool>{false, false}));
    EXPECT_EQ(changed_after_zero_step({{"otype", "Adam"}, {"skip_zero_gradient_rows", false}}),
              (std::vector<bool>{true, true}));
}

namespace {
// Two Adams over the same groups, alike but for l2_reg: 0.5 in `with_l2`,
// 0 in `without_l2` (which the tests feed grad + 0.5 * w by hand).
struct AdamWithAndWithoutL2 {
    static AdamSettings settings(double l2_reg) {
        AdamSettings s;
        s.learning_rate = 0.01;
        s.l2_reg = l2_reg;
        return s;
    }
    explicit AdamWithAndWithoutL2(const std::vector<ParamGroup>& groups) {
        with_l2.allocate(groups);
        without_l2.allocate(groups);
    }
    AdamOptimizer<double> with_l2{settings(0.5)}, without_l2{settings(0.0)};
};
} // namespace

TEST(Adam, L2RegIsAddedToTheGradient) {
    // Adam with l2_reg must equal Adam without it fed grad + l2_reg * w.
    AdamWithAndWithoutL2 adams(single_group(2));
    AdamOptimizer<double>& a = adams.with_l2;
    AdamOptimizer<double>& b = adams.without_l2;
    std::vector<double> wa = {1.0, -3.0}, wb = wa;
    for (int step = 0; step < 3; ++step) {
        std::vector<double> g = {0.2 * step, 0.1};
        std::vector<double> g_l2 = {g[0] + 0.5 * wb[0], g[1] + 0.5 * wb[1]};
        a.step(wa.data(), g.data());
        b.step(wb.data(), g_l2.data());
    }
    EXPECT_EQ(wa, wb);
    EXPECT_NE(wa[0], 1.0);  // the zero first gradient still moved w through l2
}

TEST(Adam, L2RegAppliesToNetworkWeightsOnly) {
    // tiny-cuda-nn's rule: encoding parameters are never decayed. The same
    // gradient on both groups must move the encoding like Adam without l2_reg
    // and the network like Adam fed grad + l2_reg * w.
    AdamWithAndWithoutL2 adams({{"encoding", 0, 2, 2}, {"network", 2, 2, 1}});
    AdamOptimizer<double>& a = adams.with_l2;
    AdamOptimizer<double>& b = adams.without_l2;
    std::vector<double> wa = {1.0, -3.0, 1.0, -3.0}, wb = wa;
    for (int step = 1; step <= 3; ++step) {
        const std::vector<double> g = {0.2 * step, 0.1, 0.2 * step, 0.1};
        std::vector<double> g_b = g;
        g_b[2] += 0.5 * wb[2];
        g_b[3] += 0.5 * wb[3];
        a.step(wa.data(), g.data());
        b.step(wb.data(), g_b.data());
    }
    EXPECT_EQ(wa, wb);
    EXPECT_NE(wa[2] - wa[0], 0.0);  // the decay did act on the network copy
}

TEST(Sgd, UpdateIsLearningRateTimesGradientPlusL2) {
    SgdSettings s;
    s.learning_rate = 0.1;
    s.l2_reg = 0.01;
    SgdOptimizer<double> sgd(s);
    sgd.allocate(single_group(2));
    std::vector<double> w = {2.0, -1.0};
    std::vector<double> g = {0.5, 0.0};
    sgd.step(w.data(), g.data());
    // w0 = 2 - 0.1 * (0.5 + 0.01 * 2) = 1.948;  w1 = -1 - 0.1 * (0 - 0.01) = -0.999
    EXPECT_NEAR(w[0], 1.948, 1e-15);
    EXPECT_NEAR(w[1], -0.999, 1e-15);
    EXPECT_EQ(sgd.step_count(), 1u);
    EXPECT_TRUE(sgd.state().empty());
}

// An EMA over SGD with learning rate 1 and no regularisation: w follows
// -sum(grads), so each test picks the parameter values it averages.
namespace {
std::unique_ptr<EmaOptimizer<double>> ema_over_unit_sgd(const EmaSettings& settings) {
    SgdSettings sgd;
    sgd.learning_rate = 1.0;
    sgd.l2_reg = 0;
    return std::make_unique<EmaOptimizer<double>>(settings, std::make_unique<SgdOptimizer<double>>(sgd));
}
} // namespace

TEST(Ema, AverageIsBiasCorrectedExponentialMean) {
    // Nested SGD with learning rate 1 makes w follow -sum(grads): 1, 3, 2.
    // With d = 0.5: average_t = sum_k (1-d) d^(t-k) w_k / (1 - d^t)
    //   t=1: 1
    //   t=2: (0.25 * 1 + 0.5 * 3) / 0.75               = 2.3333333333
    //   t=3: (0.125 * 1 + 0.25 * 3 + 0.5 * 2) / 0.875  = 2.1428571429
    const auto ema = ema_over_unit_sgd(EmaSettings{0.5});
    ema->allocate(single_group(1));
    std::vector<double> w = {0.0};
    EXPECT_EQ(ema->inference_params(w.data()), w.data());  // no average before the first step

    const double expected[] = {1.0, 7.0 / 3.0, 1.875 / 0.875};
    const double grads[] = {-1.0, -2.0, 1.0};
    for (int t = 0; t < 3; ++t) {
        std::vector<double> g = {grads[t]};
        ema->step(w.data(), g.data());
        const double* avg = ema->inference_params(w.data());
        ASSERT_NE(avg, w.data());
        EXPECT_NEAR(avg[0], expected[t], 1e-14) << "t=" << t + 1;
    }
    EXPECT_EQ(w[0], 2.0);  // training continues on the raw parameters
}

TEST(Ema, WindowFractionOneIsTheRunningMean) {
    // f = 1: d_t = 1 - 1/t until the decay's cap, i.e. the plain mean of w_1..w_t.
    const auto ema = ema_over_unit_sgd(EmaSettings{0.99, 1.0});
    ema->allocate(single_group(1));
    std::vector<double> w = {0.0};
    const double grads[] = {-1.0, -2.0, 1.0, -4.0};  // w: 1, 3, 2, 6
    double sum = 0;
    for (int t = 1; t <= 4; ++t) {
        std::vector<double> g = {grads[t - 1]};
        ema->step(w.data(), g.data());
        sum += w[0];
        EXPECT_NEAR(ema->inference_params(w.data())[0], sum / t, 1e-14) << "t=" << t;
    }
}

TEST(Ema, WindowFractionGrowsTheDecayUpToItsCap) {
    // f = 0.5, decay 0.6: d_t = min(0.6, max(0, 1 - 2/t)) = 0, 0, 1/3, 1/2, 0.6, 0.6.
    const double decays[] = {0, 0, 1.0 / 3.0, 0.5, 0.6, 0.6};
    for (int t = 1; t <= 6; ++t) {
        const EmaStepWeights w = ema_step_weights(0.6, 0.5, 1, (uint64_t)t);
        EXPECT_TRUE(w.apply);
        EXPECT_NEAR(w.keep, decays[t - 1], 1e-15) << "t=" << t;
        EXPECT_NEAR(w.keep + w.take, 1.0, 1e-15) << "t=" << t;
    }
    const auto ema = ema_over_unit_sgd(EmaSettings{0.6, 0.5});
    ema->allocate(single_group(1));
    std::vector<double> w = {0.0};
    double expected = 0;
    for (int t = 1; t <= 6; ++t) {
        std::vector<double> g = {t % 2 ? -3.0 : 1.0};
        ema->step(w.data(), g.data());
        expected = decays[t - 1] * expected + (1 - decays[t - 1]) * w[0];
        EXPECT_NEAR(ema->inference_params(w.data())[0], expected, 1e-14) << "t=" << t;
    }
    EXPECT_EQ(ema->describe()["window_fraction"], 0.5);
}

TEST(Ema, UpdateEveryAveragesEveryKthStepWithThePoweredDecay) {
    // update_every 2, decay 0.5: the average takes w at steps 1, 3, 5 with
    // D = 0.25 per update, bias-corrected by 1 - D^n; it stays put at 2, 4, 6.
    EmaSettings settings{0.5};
    settings.update_every = 2;
    const auto ema = ema_over_unit_sgd(settings);
    ema->allocate(single_group(1));
    std::vector<double> w = {0.0};
    const double D = 0.25;
    double weighted = 0, weight = 0, expected = 0;
    for (int t = 1; t <= 6; ++t) {
        std::vector<double> g = {t % 3 ? -1.0 - t : 2.0};
        ema->step(w.data(), g.data());
        if (t % 2 == 1) {  // an update: sum_j (1 - D) D^(n-j) w_j / (1 - D^n)
            weighted = D * weighted + (1 - D) * w[0];
            weight = D * weight + (1 - D);
            expected = weighted / weight;
        }
        EXPECT_NEAR(ema->inference_params(w.data())[0], expected, 1e-13) << "t=" << t;
        EXPECT_EQ(ema_step_weights(0.5, 0, 2, (uint64_t)t).apply, t % 2 == 1) << "t=" << t;
    }
    // With window_fraction the window counts updates: n = 1, 2, 3 at t = 1, 3, 5.
    EXPECT_NEAR(ema_step_weights(0.99, 0.5, 2, 5).keep, 1.0 - 1.0 / (0.5 * 3), 1e-15);
    EXPECT_NEAR(ema_step_weights(0.9, 0.5, 2, 101).keep, 0.81, 1e-15);  // capped at decay^2
    EXPECT_EQ(ema->describe()["update_every"], 2);
}

TEST(ExponentialDecay, ScheduleAtChosenSteps) {
    // decay_start 3, decay_interval 2, decay_end 7, decay_base 0.5:
    // updates s = 0..2 use lr0, s = 3,4 lr0/2, s = 5,6 lr0/4, s >= 7 lr0/8.
    ExponentialDecaySettings s;
    s.decay_base = 0.5;
    s.decay_start = 3;
    s.decay_interval = 2;
    s.decay_end = 7;
    const uint64_t expected_decays[] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 3};
    for (uint64_t step = 0; step < 11; ++step) EXPECT_EQ(decays_applied(s, step), expected_decays[step]) << step;

    // Through a nested SGD with gradient 1, each update moves w by -lr(s).
    SgdSettings sgd;
    sgd.learning_rate = 1.0;
    sgd.l2_reg = 0;
    ExponentialDecayOptimizer<double> opt(s, std::make_unique<SgdOptimizer<double>>(sgd));
    opt.allocate(single_group(1));
    std::vector<double> w = {0.0}, g = {1.0};
    for (uint64_t step = 0; step < 11; ++step) {
        const double before = w[0];
        opt.step(w.data(), g.data());
        EXPECT_DOUBLE_EQ(before - w[0], std::pow(0.5, (double)expected_decays[step])) << "s=" << step;
    }
    EXPECT_EQ(opt.learning_rate(), 1.0);  // the base rate
    EXPECT_EQ(opt.current_learning_rate(), 0.125);

    // The schedule is a function of the step count: jumping back restores it.
    opt.set_step_count(4);
    EXPECT_EQ(opt.current_learning_rate(), 0.5);
    EXPECT_EQ(opt.describe()["nested"]["learning_rate"].get<double>(), 0.5);
}

TEST(ExponentialDecay, NoEndMeansDecayForever) {
    ExponentialDecaySettings s;
    s.decay_start = 0;
    s.decay_interval = 10;
    EXPECT_EQ(decays_applied(s, 0), 1u);
    EXPECT_EQ(decays_applied(s, 9), 1u);
    EXPECT_EQ(decays_applied(s, 1000000), 100001u);
}

TEST(Composite, GroupsGetTheirOwnLearningRates) {
    auto opt = create_optimizer<double>({{"otype", "Composite"},
                                         {"groups",
                                          {{"encoding", {{"otype", "SGD"}, {"learning_rate", 0.1}, {"l2_reg", 0}}},
                                           {"network", {{"otype", "SGD"}, {"learning_rate", 1.0}, {"l2_reg", 0}}}}}});
    opt->allocate({{"encoding", 0, 3, 2}, {"network", 3, 2, 1}});
    std::vector<double> w(5, 0.0), g(5, 1.0);
    opt->step(w.data(), g.data());
    EXPECT_EQ(w, (std::vector<double>{-0.1, -0.1, -0.1, -1.0, -1.0}));

    // learning_rate is the scale on every group's rate.
    EXPECT_EQ(opt->learning_rate(), 1.0);
    opt->set_learning_rate(0.5);
    opt->step(w.data(), g.data());
    EXPECT_NEAR(w[0], -0.15, 1e-15);
    EXPECT_NEAR(w[4], -1.5, 1e-15);
    EXPECT_EQ(opt->step_count(), 2u);
}

TEST(Composite, TinyCudaNnSliceForm) {
    auto opt = create_optimizer<double>(json::parse(R"({"otype": "Composite", "nested": [
        {"otype": "SGD", "learning_rate": 0.1, "l2_reg": 0, "n_params_to_optimize": 2},
        {"otype": "Adam", "learning_rate": 1.0}]})"));
    opt->allocate({{"encoding", 0, 3, 1}, {"network", 3, 2, 1}});
    std::vector<double> w(5, 0.0), g(5, 1.0);
    opt->step(w.data(), g.data());
    EXPECT_NEAR(w[0], -0.1, 1e-15);
    EXPECT_NEAR(w[1], -0.1, 1e-15);
    for (size_t i = 2; i < 5; ++i) EXPECT_NEAR(w[i], -1.0, 1e-6);  // Adam's first step ~ -lr
    EXPECT_EQ(state_names(*opt), (std::vector<std::string>{"nested.1.first_moment", "nested.1.second_moment"}));
    EXPECT_EQ(state_buffer(*opt, "nested.1.first_moment").size(), 3u);
}

TEST(Composite, AllocateRejectsUncoveredParameters) {
    auto by_name = create_optimizer<double>(
        {{"otype", "Composite"}, {"groups", {{"encoding", {{"otype", "Adam"}}}}}});
    try {
        by_name->allocate({{"encoding", 0, 4, 2}, {"network", 4, 4, 1}});
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), "optimizer.groups");
        EXPECT_NE(std::string(e.what()).find("network"), std::string::npos);
    }
    // A listed group the model lacks (encoding without parameters) is fine.
    EXPECT_NO_THROW(by_name->allocate({{"encoding", 0, 4, 2}}));

    auto by_slice = create_optimizer<double>(json::parse(R"({"otype": "Composite", "nested": [
        {"otype": "SGD", "n_params_to_optimize": 2}, {"otype": "SGD", "n_params_to_optimize": 3}]})"));
    EXPECT_THROW(by_slice->allocate(single_group(8)), ConfigError);  // covers 5 of 8
    EXPECT_THROW(by_slice->allocate(single_group(4)), ConfigError);  // needs 5
    EXPECT_NO_THROW(by_slice->allocate(single_group(5)));
}

TEST(Composite, InferenceParamsCombineNestedEmas) {
    auto opt = create_optimizer<double>(
        {{"otype", "Composite"},
         {"groups",
          {{"encoding", {{"otype", "EMA"}, {"decay", 0.5}, {"nested", {{"otype", "SGD"}, {"learning_rate", 1.0}, {"l2_reg", 0}}}}},
           {"network", {{"otype", "SGD"}, {"learning_rate", 1.0}, {"l2_reg", 0}}}}}});
    opt->allocate({{"encoding", 0, 1, 1}, {"network", 1, 1, 1}});
    std::vector<double> w = {0, 0};
    std::vector<double> g = {-1, -1};
    opt->step(w.data(), g.data());  // w = 1, 1; averages = 1
    g = {-2, -2};
    opt->step(w.data(), g.data());  // w = 3, 3; encoding average (0.25 + 1.5) / 0.75
    const double* inference = opt->inference_params(w.data());
    EXPECT_NEAR(inference[0], 7.0 / 3.0, 1e-14);
    EXPECT_EQ(inference[1], 3.0);
}

TEST(Wrappers, StateNamesArePrefixedByNesting) {
    auto opt = create_optimizer<double>(
        {{"otype", "EMA"},
         {"nested",
          {{"otype", "ExponentialDecay"},
           {"nested",
            {{"otype", "Composite"},
             {"groups", {{"encoding", {{"otype", "Adam"}}}, {"network", {{"otype", "SGD"}}}}}}}}}});
    opt->allocate({{"encoding", 0, 4, 2}, {"network", 4, 3, 1}});
    EXPECT_EQ(state_names(*opt), (std::vector<std::string>{"average", "nested.nested.groups.encoding.first_moment",
                                                           "nested.nested.groups.encoding.second_moment",
                                                           "nested.nested.groups.encoding.row_steps"}));
    EXPECT_EQ(state_buffer(*opt, "average").size(), 7u);
    EXPECT_EQ(state_buffer(*opt, "nested.nested.groups.encoding.first_moment").size(), 4u);
    EXPECT_EQ(state_buffer(*opt, "nested.nested.groups.encoding.row_steps").size(), 2u);  // one per row
}

TEST(Wrappers, SetLearningRateReachesTheInnerOptimizer) {
    auto opt = create_optimizer<double>(
        {{"otype", "Ema"}, {"nested", {{"otype", "ExponentialDecay"}, {"nested", {{"otype", "Adam"}, {"learning_rate", 0.01}}}}}});
    EXPECT_EQ(opt->otype(), "EMA");
    EXPECT_EQ(opt->learning_rate(), 0.01);
    opt->set_learning_rate(0.25);
    EXPECT_EQ(opt->learning_rate(), 0.25);
    EXPECT_EQ(opt->describe()["nested"]["nested"]["learning_rate"].get<double>(), 0.25);
}

TEST(Wrappers, StateAndStepCountResumeBitIdentically) {
    const json config = {{"otype", "EMA"},
                         {"decay", 0.9},
                         {"nested",
                          {{"otype", "ExponentialDecay"},
                           {"decay_start", 2},
                           {"decay_interval", 1},
                           {"decay_base", 0.5},
                           {"nested", {{"otype", "Adam"}, {"learning_rate", 0.1}}}}}};
    const std::vector<ParamGroup> groups = {{"encoding", 0, 4, 2}, {"network", 4, 2, 1}};
    auto gradient_at = [](int step) {
        std::vector<double> g(6);
        for (int i = 0; i < 6; ++i) g[i] = std::sin(1.3 * i + 0.7 * step) * ((i + step) % 3 == 0 ? 0.0 : 1.0);
        return g;
    };
    auto original = create_optimizer<double>(config);
    original->allocate(groups);
    std::vector<double> w = {0.1, -0.2, 0.3, -0.4, 0.5, -0.6};
    for (int step = 0; step < 3; ++step) original->step(w.data(), gradient_at(step).data());

    // Save: params, step count and every state buffer; load into a fresh optimizer.
    auto resumed = create_optimizer<double>(config);
    resumed->allocate(groups);
    resumed->set_step_count(original->step_count());
    std::vector<StateBuffer<double>> saved = original->state(), loaded = resumed->state();
    ASSERT_EQ(saved.size(), loaded.size());
    for (size_t i = 0; i < saved.size(); ++i) {
        ASSERT_EQ(saved[i].name, loaded[i].name);
        *loaded[i].data = *saved[i].data;
    }
    std::vector<double> w_resumed = w;
    for (int step = 3; step < 6; ++step) {
        original->step(w.data(), gradient_at(step).data());
        resumed->step(w_resumed.data(), gradient_at(step).data());
    }
    EXPECT_EQ(w, w_resumed);
    EXPECT_EQ(std::vector<double>(original->inference_params(w.data()), original->inference_params(w.data()) + 6),
              std::vector<double>(resumed->inference_params(w_resumed.data()),
                                  resumed->inference_params(w_resumed.data()) + 6));
}

TEST(OptimizerFactory, DescribeReportsEffectiveSettings) {
    json d = create_optimizer<double>({{"otype", "adam"}, {"adabound", true}})->describe();
    EXPECT_EQ(d["otype"], "Adam");
    EXPECT_EQ(d["learning_rate"].get<double>(), 1e-3);
    EXPECT_EQ(d["beta1"].get<double>(), 0.9);
    EXPECT_EQ(d["beta2"].get<double>(), 0.999);
    EXPECT_EQ(d["epsilon"].get<double>(), 1e-8);
    EXPECT_EQ(d["l2_reg"].get<double>(), 1e-8);
    EXPECT_EQ(d["skip_zero_gradient_rows"], "auto");
    EXPECT_EQ(d["not_implemented"]["adabound"], true);

    json e = create_optimizer<float>({{"otype", "ExponentialDecay"}, {"nested", {{"otype", "SGD"}}}})->describe();
    EXPECT_EQ(e["decay_base"].get<double>(), 0.1);
    EXPECT_EQ(e["decay_start"].get<uint64_t>(), 10000u);
    EXPECT_EQ(e["decay_interval"].get<uint64_t>(), 10000u);
    EXPECT_FALSE(e.contains("decay_end"));
    EXPECT_EQ(e["nested"]["otype"], "SGD");
}

TEST(OptimizerFactory, ErrorsNameTheField) {
    EXPECT_EQ(config_error_path({{"otype", "Adagrad"}}), "optimizer.otype");
    EXPECT_EQ(config_error_path({{"learning_rate", 0.1}}), "optimizer.otype");
    EXPECT_EQ(config_error_path({{"otype", "Adam"}, {"learning_rate", -0.1}}), "optimizer.learning_rate");
    EXPECT_EQ(config_error_path({{"otype", "SGD"}, {"learning_rate", -1}}), "optimizer.learning_rate");
    EXPECT_EQ(config_error_path({{"otype", "Adam"}, {"beta1", 1.0}}), "optimizer.beta1");
    EXPECT_EQ(config_error_path({{"otype", "Adam"}, {"beta2", -0.1}}), "optimizer.beta2");
    EXPECT_EQ(config_error_path({{"otype", "Adam"}, {"epsilon", 0}}), "optimizer.epsilon");
    EXPECT_EQ(config_error_path({{"otype", "Adam"}, {"skip_zero_gradient_rows", "sometimes"}}),
              "optimizer.skip_zero_gradient_rows");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}}}, {"decay", 1.5}}), "optimizer.decay");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}}), "optimizer.nested");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}}}, {"window_fraction", 0}}),
              "optimizer.window_fraction");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}}}, {"window_fraction", 1.5}}),
              "optimizer.window_fraction");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}}}, {"update_every", 0}}),
              "optimizer.update_every");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}}}, {"update_every", 1.5}}),
              "optimizer.update_every");
    EXPECT_EQ(config_error_path({{"otype", "ExponentialDecay"}}), "optimizer.nested");
    EXPECT_EQ(config_error_path({{"otype", "ExponentialDecay"}, {"nested", {{"otype", "Adam"}}}, {"decay_base", 1.5}}),
              "optimizer.decay_base");
    EXPECT_EQ(config_error_path({{"otype", "ExponentialDecay"}, {"nested", {{"otype", "Adam"}}}, {"decay_interval", 0}}),
              "optimizer.decay_interval");
    EXPECT_EQ(config_error_path({{"otype", "EMA"}, {"nested", {{"otype", "Adam"}, {"beta1", 2}}}}),
              "optimizer.nested.beta1");
    EXPECT_EQ(config_error_path({{"otype", "Composite"}, {"groups", {{"network", {{"otype", "Adam"}, {"l2_reg", -1}}}}}}),
              "optimizer.groups.network.l2_reg");
    EXPECT_EQ(config_error_path(json::parse(R"({"otype": "Composite", "nested": [{"otype": "SGD"}, {"otype": "SGD"}]})")),
              "optimizer.nested[0].n_params_to_optimize");
    EXPECT_EQ(config_error_path({{"otype", "Composite"}}), "optimizer");
    EXPECT_EQ(config_error_path({{"otype", "Composite"}, {"groups", json::object()}, {"nested", json::array()}}),
              "optimizer");

    try {
        create_optimizer<double>({{"otype", "Novograd"}});
        FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("not supported"), std::string::npos);
        EXPECT_NE(msg.find("Adam, SGD, EMA, ExponentialDecay, Composite"), std::string::npos);
    }
}

TEST(OptimizerFactory, AcceptsTinyCudaNnFieldsWeDoNotImplement) {
    auto opt = create_optimizer<double>({{"otype", "Adam"},
                                         {"relative_decay", 0},
                                         {"absolute_decay", 0},
                                         {"adabound", false},
                                         {"some_future_field", "x"}});
    EXPECT_FALSE(opt->describe().contains("not_implemented"));
    EXPECT_NO_THROW(create_optimizer<double>({{"otype", "EMA"}, {"full_precision", true}, {"nested", {{"otype", "SGD"}}}}));
}
