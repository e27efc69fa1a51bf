// NeRF volume rendering of one ray (nerf/volume_rendering.h): closed forms for
// short rays, early termination, the exact backward against fp64 central
// differences (rgb, depth, opacity; sigma, colours, background), and the
// density activations' derivatives.
#include "nerf/volume_rendering.h"

#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace fusedngp;
using namespace fusedngp::nerf;

namespace {

struct TestRay {
    std::vector<double> sigma, rgb, dt, t;
    double background[3] = {0.2, 0.5, 0.9};
    int n() const { return (int)sigma.size(); }
    RaySamples<double> samples() const { return {n(), sigma.data(), rgb.data(), dt.data(), t.data()}; }
};

// A random ray of n samples; every 4th density is exactly 0 and `sigma_hi`
// sets how soon the ray saturates.
TestRay random_ray(int n, uint64_t seed, double sigma_hi) {
    Rng rng(seed);
    TestRay r;
    double t = 0.1;
    for (int i = 0; i < n; ++i) {
        r.sigma.push_back(i % 4 == 1 ? 0.0 : rng.uniform(0.0, sigma_hi));
        for (int c = 0; c < 3; ++c) r.rgb.push_back(rng.uniform(0.0, 1.0));
        r.dt.push_back(rng.uniform(0.005, 0.05));
        r.t.push_back(t);
        t += r.dt.back();
    }
    return r;
}

// L = g . (rgb, depth, opacity) for fixed weights g.
double loss(const TestRay& r, const RayOutputGrad<double>& g) {
    RayResult<double> out = render_ray(r.samples(), r.background);
    return g.rgb[0] * out.rgb[0] + g.rgb[1] * out.rgb[1] + g.rgb[2] * out.rgb[2] + g.depth * out.depth +
           g.opacity * out.opacity;
}

} // namespace

TEST(NerfVolumeRendering, OneSampleClosedForm) {
    TestRay r;
    r.sigma = {3.0};
    r.rgb = {0.1, 0.7, 0.4};
    r.dt = {0.2};
    r.t = {1.5};
    RayResult<double> out = render_ray(r.samples(), r.background);
    const double alpha = 1 - std::exp(-0.6);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(out.rgb[c], alpha * r.rgb[c] + (1 - alpha) * r.background[c], 1e-15);
    EXPECT_NEAR(out.depth, alpha * 1.5, 1e-15);
    EXPECT_NEAR(out.opacity, alpha, 1e-15);
    EXPECT_NEAR(out.transmittance, 1 - alpha, 1e-15);
    EXPECT_EQ(out.used, 1);
}

TEST(NerfVolumeRendering, TwoSamplesWeightsAndEmptyRay) {
    TestRay r;
    r.sigma = {1.0, 4.0};
    r.rgb = {1, 0, 0, 0, 1, 0};
    r.dt = {0.5, 0.25};
    r.t = {1.0, 1.5};
    RayResult<double> out = render_ray(r.samples(), r.background);
    const double a0 = 1 - std::exp(-0.5), a1 = 1 - std::exp(-1.0);
    const double w0 = a0, w1 = (1 - a0) * a1, t_end = (1 - a0) * (1 - a1);
    EXPECT_NEAR(out.rgb[0], w0 + t_end * r.background[0], 1e-15);
    EXPECT_NEAR(out.rgb[1], w1 + t_end * r.background[1], 1e-15);
    EXPECT_NEAR(out.rgb[2], t_end * r.background[2], 1e-15);
    EXPECT_NEAR(out.depth, w0 * 1.0 + w1 * 1.5, 1e-15);
    EXPECT_NEAR(out.opacity, w0 + w1, 1e-15);

    TestRay empty;
    RayResult<double> bg = render_ray(empty.samples(), empty.background);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(bg.rgb[c], empty.background[c]);
    EXPECT_EQ(bg.opacity, 0.0);
    EXPECT_EQ(bg.used, 0);
}

TEST(NerfVolumeRendering, EarlyTerminationStopsAtTransmittanceThreshold) {
    TestRay r;
    r.sigma = {5.0, 5.0, 5.0, 5.0};  // each sample: T *= e^-5 = 6.7e-3
    r.rgb.assign(12, 0.5);
    r.dt = {1, 1, 1, 1};
    r.t = {1, 2, 3, 4};
    // T_0 = 1, T_1 = 6.7e-3, T_2 = 4.5e-5 < 1e-4: samples 0 and 1 are used.
    RayResult<double> out = render_ray(r.samples(), r.background);
    EXPECT_EQ(out.used, 2);
    EXPECT_NEAR(out.transmittance, std::exp(-10.0), 1e-18);
    // A zero threshold composites every sample.
    EXPECT_EQ(render_ray(r.samples(), r.background, 0.0).used, 4);
}

TEST(NerfVolumeRendering, BackwardMatchesFiniteDifferences) {
    int rays_terminated = 0;
    for (int n : {1, 2, 5, 17, 64, 200}) {
        for (double sigma_hi : {2.0, 60.0, 400.0}) {
            TestRay r = random_ray(n, 1000 + n, sigma_hi);
            RayOutputGrad<double> g;
            std::vector<double> gw = test::random_vector(5, 77 + n);
            for (int c = 0; c < 3; ++c) g.rgb[c] = gw[c];
            g.depth = gw[3];
            g.opacity = gw[4];

            RayResult<double> fwd = render_ray(r.samples(), r.background);
            std::vector<double> d_sigma(n), d_rgb(3 * n), d_bg(3, 0.0);
            render_ray_backward(r.samples(), fwd, g, {d_sigma.data(), d_rgb.data(), d_bg.data()});

            // h = 1e-4: the loss is O(1) while some gradients are ~1e-5 (a
            // saturated ray), so a smaller step drowns them in round-off; the
            // truncation error ~ h^2 dt^3 stays far below the tolerance.
            auto f = [&] { return loss(r, g); };
            const double h = 1e-4;
            std::vector<double> fd_sigma = test::numeric_gradient(r.sigma.data(), n, f, h);
            std::vector<double> fd_rgb = test::numeric_gradient(r.rgb.data(), 3 * n, f, h);
            std::vector<double> fd_bg = test::numeric_gradient(r.background, 3, f, h);
            SCOPED_TRACE("n=" + std::to_string(n) + " sigma_hi=" + std::to_string(sigma_hi));
            EXPECT_LT(test::relative_error(d_sigma, fd_sigma), 1e-6);
            EXPECT_LT(test::relative_error(d_rgb, fd_rgb), 1e-6);
            EXPECT_LT(test::relative_error(d_bg, fd_bg), 1e-6);
            EXPECT_GT(test::norm(d_rgb), 1e-2);
            if (sigma_hi == 2.0) {  // a saturated ray's density gradients are physically tiny
                EXPECT_GT(test::norm(d_sigma), 1e-6);
            }
            // Samples after early termination get exactly zero gradient.
            for (int i = fwd.used; i < n; ++i) {
                EXPECT_EQ(d_sigma[i], 0.0);
                for (int c = 0; c < 3; ++c) EXPECT_EQ(d_rgb[3 * i + c], 0.0);
            }
            if (fwd.used < n) ++rays_terminated;
        }
    }
    EXPECT_GE(rays_terminated, 5);  // the dense rays do exercise termination
}

TEST(NerfVolumeRendering, BackgroundGradientAccumulates) {
    TestRay r = random_ray(8, 5, 1.0);
    RayResult<double> fwd = render_ray(r.samples(), r.background);
    RayOutputGrad<double> g;
    g.rgb[0] = 1;
    std::vector<double> d_sigma(8), d_rgb(24), d_bg = {10.0, 0.0, 0.0};
    render_ray_backward(r.samples(), fwd, g, {d_sigma.data(), d_rgb.data(), d_bg.data()});
    EXPECT_NEAR(d_bg[0], 10.0 + fwd.transmittance, 1e-15);
    EXPECT_EQ(d_bg[1], 0.0);
}

TEST(NerfVolumeRendering, FloatMatchesDouble) {
    TestRay r = random_ray(100, 9, 20.0);
    std::vector<float> sigma(r.sigma.begin(), r.sigma.end()), rgb(r.rgb.begin(), r.rgb.end()),
        dt(r.dt.begin(), r.dt.end()), t(r.t.begin(), r.t.end());
    const float bg[3] = {(float)r.background[0], (float)r.background[1], (float)r.background[2]};
    RayResult<float> f = render_ray(RaySamples<float>{100, sigma.data(), rgb.data(), dt.data(), t.data()}, bg);
    RayResult<double> d = render_ray(r.samples(), r.background);
    EXPECT_EQ(f.used, d.used);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(f.rgb[c], d.rgb[c], 1e-5);
    EXPECT_NEAR(f.depth, d.depth, 1e-5);
}

TEST(NerfDensityActivation, ExpDerivativeMatchesFiniteDifferences) {
    for (double x : {-20.0, -3.0, 0.0, 1.5, 8.0}) {
        const double h = 1e-6 * std::max(1.0, std::abs(x));
        const double fd = (density_exp(x + h) - density_exp(x - h)) / (2 * h);
        EXPECT_NEAR(density_exp_grad(x), fd, 1e-6 * fd);
        EXPECT_EQ(density_exp(x), std::exp(x));
    }
}

TEST(NerfDensityActivation, TruncExpClampsOnlyTheGradient) {
    for (double x : {-14.0, -2.0, 0.0, 3.0, 14.9}) {
        const double h = 1e-6;
        const double fd = (trunc_exp(x + h) - trunc_exp(x - h)) / (2 * h);
        EXPECT_NEAR(trunc_exp_grad(x), fd, 1e-6 * fd);
    }
    EXPECT_EQ(trunc_exp(20.0), std::exp(20.0));
    EXPECT_EQ(trunc_exp_grad(20.0), std::exp(15.0));
    EXPECT_EQ(trunc_exp_grad(-40.0), std::exp(-15.0));
    EXPECT_EQ(trunc_exp_grad(15.0), std::exp(15.0));
    EXPECT_FLOAT_EQ(trunc_exp_grad(30.f), std::exp(15.f));
    EXPECT_FLOAT_EQ(trunc_exp(2.f), std::exp(2.f));
}

// Compaction keeps exactly the samples render_ray composites: samples_used
// is render_ray's `used` for rays that terminate early, late or never.
TEST(NerfVolumeRendering, SamplesUsedIsRenderRaysUsedCount) {
    int terminated = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        const TestRay r = random_ray(5 + (int)seed * 5, seed, seed % 2 ? 400.0 : 20.0);
        const RayResult<double> out = render_ray(r.samples(), r.background);
        EXPECT_EQ(samples_used(r.sigma.data(), r.dt.data(), r.n()), out.used) << "seed " << seed;
        // The float path (the GPU kernels' type) agrees too.
        const std::vector<float> sigma(r.sigma.begin(), r.sigma.end()), dt(r.dt.begin(), r.dt.end());
        std::vector<float> rgb(r.rgb.begin(), r.rgb.end()), t(r.t.begin(), r.t.end());
        const float bg[3] = {0.2f, 0.5f, 0.9f};
        const RaySamples<float> fs{r.n(), sigma.data(), rgb.data(), dt.data(), t.data()};
        EXPECT_EQ(samples_used(sigma.data(), dt.data(), r.n()), render_ray(fs, bg).used) << "seed " << seed;
        terminated += out.used < r.n();
    }
    EXPECT_GT(terminated, 5);   // both kinds of ray were covered
    EXPECT_LT(terminated, 40);
}
