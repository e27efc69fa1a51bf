// Encodings other than Grid: values against closed forms, fp64 gradient
// checks, Composite, and the factory's config errors.
#include "encodings/composite.h"
#include "core/math_constants.h"
#include "encodings/factory.h"
#include "encodings/grid.h"
#include "encodings/spherical_harmonics.h"

#include "encoding_testing.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fusedngp;
using namespace fusedngp::test;

namespace {


std::unique_ptr<Encoding<double>> make(uint32_t dims, const json& config) {
    return create_encoding<double>(dims, config);
}

Matrix<double> encode(const Encoding<double>& enc, const Matrix<double>& x, const std::vector<double>& params = {}) {
    Matrix<double> out;
    enc.forward(params.empty() ? nullptr : params.data(), x, out);
    EXPECT_EQ(out.rows(), x.rows());
    EXPECT_EQ(out.cols(), enc.n_output_dims());
    return out;
}

void expect_gradients_ok(const Encoding<double>& enc, const Matrix<double>& x, const std::vector<double>& params,
                         uint64_t seed) {
    EncodingGradientCheck r = check_encoding_gradients(enc, x, params, seed);
    EXPECT_LT(r.input_error, 1e-6) << enc.describe();
    EXPECT_GT(r.input_norm, 1e-3) << enc.describe();
    if (enc.n_params() > 0) {
        EXPECT_LT(r.param_error, 1e-6) << enc.describe();
        EXPECT_GT(r.param_norm, 1e-3) << enc.describe();
    }
}


} // namespace

// ---- Identity ---------------------------------------------------------------

TEST(IdentityEncoding, ScalesAndOffsetsAndHasExactGradient) {
    auto enc = make(3, {{"otype", "identity"}, {"scale", 2.5}, {"offset", -0.25}});
    EXPECT_EQ(enc->otype(), "Identity");
    EXPECT_EQ(enc->n_output_dims(), 3u);
    EXPECT_EQ(enc->n_params(), 0u);
    Matrix<double> x = random_matrix(5, 3, 1);
    Matrix<double> out = encode(*enc, x);
    for (int i = 0; i < 5; ++i)
        for (int d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(out(i, d), x(i, d) * 2.5 - 0.25);
    expect_gradients_ok(*enc, x, {}, 2);
    EXPECT_NE(enc->describe().find("scale 2.5"), std::string::npos);
}

// ---- Frequency --------------------------------------------------------------

TEST(FrequencyEncoding, LayoutIsSinThenCosPerFrequencyPerDim) {
    auto enc = make(2, {{"otype", "Frequency"}, {"n_frequencies", 4}});
    ASSERT_EQ(enc->n_output_dims(), 2u * 2u * 4u);
    Matrix<double> x = random_matrix(6, 2, 3);
    Matrix<double> out = encode(*enc, x);
    for (int i = 0; i < 6; ++i)
        for (int d = 0; d < 2; ++d)
            for (int f = 0; f < 4; ++f)
                for (int s = 0; s < 2; ++s)
                    EXPECT_NEAR(out(i, d * 8 + 2 * f + s), std::sin(std::pow(2.0, f) * kPi * x(i, d) + s * kPi / 2),
                                1e-12);
}

TEST(FrequencyEncoding, GradientMatchesFiniteDifferences) {
    auto enc = make(3, {{"otype", "Frequency"}, {"n_frequencies", 6}});
    expect_gradients_ok(*enc, random_matrix(7, 3, 4), {}, 5);
}

TEST(FrequencyEncoding, DefaultHasTwelveFrequencies) {
    auto enc = make(1, {{"otype", "Frequency"}});
    EXPECT_EQ(enc->n_output_dims(), 24u);
}

// ---- TriangleWave -----------------------------------------------------------

TEST(TriangleWaveEncoding, PeriodOneRangeMinusOneToOne) {
    auto enc = make(1, {{"otype", "TriangleWave"}, {"n_frequencies", 3}});
    ASSERT_EQ(enc->n_output_dims(), 3u);
    Matrix<double> x(4, 1);
    x << 0.0, 0.25, 0.125, 1.25;
    Matrix<double> out = encode(*enc, x);
    // t = 2^f x: 1 at integers, -1 at half-integers, 0 at quarters.
    const double expected[4][3] = {{1, 1, 1}, {0, -1, 1}, {0.5, 0, -1}, {0, -1, 1}};
    for (int i = 0; i < 4; ++i)
        for (int f = 0; f < 3; ++f) EXPECT_DOUBLE_EQ(out(i, f), expected[i][f]) << i << "," << f;
    Matrix<double> many = random_matrix(200, 1, 6, -3.0, 3.0);
    Matrix<double> y = encode(*enc, many);
    EXPECT_LE(y.maxCoeff(), 1.0);
    EXPECT_GE(y.minCoeff(), -1.0);
}

TEST(TriangleWaveEncoding, GradientMatchesFiniteDifferencesAwayFromKinks) {
    const int F = 6;
    auto enc = make(2, {{"otype", "TriangleWave"}, {"n_frequencies", F}});
    // Kinks sit where frac(2^f x) is 0 or 1/2; keep every sample 1e-3 away in t.
    Matrix<double> x(8, 2);
    Rng rng(7);
    for (int i = 0; i < x.rows(); ++i) {
        for (int d = 0; d < 2; ++d) {
            bool near_kink;
            do {
                x(i, d) = rng.uniform(-1.0, 1.0);
                near_kink = false;
                for (int f = 0; f < F; ++f) {
                    double q = fractional(2.0 * std::ldexp(x(i, d), f));  // kinks at multiples of 1/2 in t
                    near_kink |= std::min(q, 1 - q) < 2e-3;
                }
            } while (near_kink);
        }
    }
    expect_gradients_ok(*enc, x, {}, 8);
}

// ---- OneBlob ----------------------------------------------------------------

TEST(OneBlobEncoding, BinsHoldGaussianMassAroundTheInput) {
    const int B = 8;
    auto enc = make(2, {{"otype", "OneBlob"}, {"n_bins", B}});
    ASSERT_EQ(enc->n_output_dims(), 2u * B);
    Matrix<double> x(2, 2);
    x << 0.5, 0.3, 0.0625, 0.9;
    Matrix<double> out = encode(*enc, x);
    for (int i = 0; i < 2; ++i) {
        for (int d = 0; d < 2; ++d) {
            const double u = x(i, d) * B;
            double sum = 0;
            int argmax = 0;
            for (int b = 0; b < B; ++b) {
                const double v = out(i, d * B + b);
                // Mass of N(u, 1) over [b, b+1] (bin units: sigma = 1 bin).
                const double mass = 0.5 * (std::erf((b + 1 - u) / std::sqrt(2.0)) - std::erf((b - u) / std::sqrt(2.0)));
                EXPECT_NEAR(v, mass, 1e-14);
                EXPECT_GT(v, 0.0);
                sum += v;
                if (v > out(i, d * B + argmax)) argmax = b;
            }
            // The blob peaks in the input's own bin (x = 0.5 sits on a boundary: a tie).
            if (fractional(u) != 0) {
                EXPECT_EQ(argmax, (int)std::floor(u));
            }
            EXPECT_LE(sum, 1.0);
        }
    }
    // x = 0.5 is the centre: the bins are mirror-symmetric.
    for (int b = 0; b < B; ++b) EXPECT_NEAR(out(0, b), out(0, B - 1 - b), 1e-15);
}

TEST(OneBlobEncoding, GradientMatchesFiniteDifferences) {
    auto enc = make(3, {{"otype", "OneBlob"}, {"n_bins", 12}});
    expect_gradients_ok(*enc, random_matrix(6, 3, 9, 0.0, 1.0), {}, 10);
}

// ---- SphericalHarmonics -----------------------------------------------------

TEST(SphericalHarmonicsEncoding, MatchesClosedFormsUpToDegreeTwo) {
    auto enc = make(3, {{"otype", "SphericalHarmonics"}, {"degree", 3}});
    ASSERT_EQ(enc->n_output_dims(), 9u);
    // Not unit vectors: the polynomials are used as they are, not renormalised.
    Matrix<double> in = random_matrix(10, 3, 11, 0.0, 1.0);
    Matrix<double> out = encode(*enc, in);
    for (int i = 0; i < in.rows(); ++i) {
        const double x = 2 * in(i, 0) - 1, y = 2 * in(i, 1) - 1, z = 2 * in(i, 2) - 1;
        const double expected[9] = {
            0.28209479177387814,
            -0.48860251190291987 * y,
            0.48860251190291987 * z,
            -0.48860251190291987 * x,
            1.0925484305920792 * x * y,
            -1.0925484305920792 * y * z,
            0.94617469575756008 * z * z - 0.31539156525252005,
            -1.0925484305920792 * x * z,
            0.54627421529603959 * (x * x - y * y),
        };
        for (int j = 0; j < 9; ++j) EXPECT_NEAR(out(i, j), expected[j], 1e-14) << "sample " << i << " basis " << j;
    }
}

// Gauss-Legendre nodes on [-1, 1] (Newton on P_n): exact for polynomials of
// degree < 2n, enough to integrate products of bands up to l = 7 in z.
static void gauss_legendre(int n, std::vector<double>& nodes, std::vector<double>& weights) {
    nodes.assign(n, 0);
    weights.assign(n, 0);
    for (int i = 0; i < n; ++i) {
        double z = std::cos(kPi * (i + 0.75) / (n + 0.5));
        double dp = 0;
        for (int iter = 0; iter < 100; ++iter) {
            double p0 = 1, p1 = z;
            for (int k = 2; k <= n; ++k) {
                double p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            dp = n * (z * p1 - p0) / (z * z - 1);
            double step = p1 / dp;
            z -= step;
            if (std::abs(step) < 1e-16) break;
        }
        nodes[i] = z;
        weights[i] = 2 / ((1 - z * z) * dp * dp);
    }
}

TEST(SphericalHarmonicsEncoding, DegreeEightIsOrthonormalOnTheSphere) {
    auto enc = make(3, {{"otype", "SphericalHarmonics"}, {"degree", 8}});
    const int n_out = 64;
    std::vector<double> zs, zw;
    gauss_legendre(10, zs, zw);
    const int n_phi = 40;  // trapezoid rule: exact for trig polynomials of degree < 40
    Matrix<double> in(zs.size() * n_phi, 3);
    std::vector<double> w(in.rows());
    for (size_t a = 0; a < zs.size(); ++a) {
        for (int b = 0; b < n_phi; ++b) {
            const double phi = 2 * kPi * b / n_phi, r = std::sqrt(1 - zs[a] * zs[a]);
            const size_t row = a * n_phi + b;
            in(row, 0) = (r * std::cos(phi) + 1) / 2;
            in(row, 1) = (r * std::sin(phi) + 1) / 2;
            in(row, 2) = (zs[a] + 1) / 2;
            w[row] = zw[a] * 2 * kPi / n_phi;
        }
    }
    Matrix<double> y = encode(*enc, in);
    for (int i = 0; i < n_out; ++i) {
        for (int j = 0; j < n_out; ++j) {
            double dot = 0;
            for (int s = 0; s < in.rows(); ++s) dot += w[s] * y(s, i) * y(s, j);
            EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-10) << i << "," << j;
        }
    }
}

TEST(SphericalHarmonicsEncoding, GradientMatchesFiniteDifferencesForEveryDegree) {
    for (int degree = 1; degree <= 8; ++degree) {
        SCOPED_TRACE(degree);
        auto enc = make(3, {{"otype", "SphericalHarmonics"}, {"degree", degree}});
        EXPECT_EQ(enc->n_output_dims(), (uint32_t)(degree * degree));
        Matrix<double> x = random_matrix(5, 3, 20 + degree, 0.0, 1.0);
        if (degree == 1) {
            // A constant: the input gradient is exactly zero.
            Matrix<double> din;
            enc->backward(nullptr, x, random_matrix(5, 1, 3), nullptr, &din);
            EXPECT_EQ(din.norm(), 0.0);
        } else {
            expect_gradients_ok(*enc, x, {}, 40 + degree);
        }
    }
}

TEST(SphericalHarmonicsEncoding, FloatMatchesDouble) {
    auto enc_d = create_encoding<double>(3, {{"otype", "SphericalHarmonics"}, {"degree", 8}});
    auto enc_f = create_encoding<float>(3, {{"otype", "SphericalHarmonics"}, {"degree", 8}});
    Matrix<double> x = random_matrix(20, 3, 12, 0.0, 1.0);
    Matrix<float> xf = x.cast<float>();
    Matrix<double> yd;
    Matrix<float> yf;
    enc_d->forward(nullptr, x, yd);
    enc_f->forward(nullptr, xf, yf);
    EXPECT_LT((yf.cast<double>() - yd).cwiseAbs().maxCoeff(), 1e-4);
}

// ---- Composite --------------------------------------------------------------

namespace {

json hashgrid_plus_frequency() {
    return {{"otype", "Composite"},
            {"nested",
             {{{"n_dims_to_encode", 2},
               {"otype", "HashGrid"},
               {"n_levels", 3},
               {"n_features_per_level", 2},
               {"log2_hashmap_size", 5},
               {"base_resolution", 3},
               {"per_level_scale", 1.5}},
              {{"otype", "Frequency"}, {"n_frequencies", 3}}}}};
}

} // namespace

TEST(CompositeEncoding, ConcatenatesNestedOutputsAndParameters) {
    auto enc = make(3, hashgrid_plus_frequency());
    auto grid = make(2, hashgrid_plus_frequency()["nested"][0]);
    auto freq = make(1, {{"otype", "Frequency"}, {"n_frequencies", 3}});
    ASSERT_EQ(enc->otype(), "Composite");
    ASSERT_EQ(enc->n_input_dims(), 3u);
    ASSERT_EQ(enc->n_output_dims(), grid->n_output_dims() + freq->n_output_dims());
    ASSERT_EQ(enc->n_params(), grid->n_params());

    std::vector<double> params = random_vector(enc->n_params(), 13);
    Matrix<double> x = random_matrix(9, 3, 14, 0.05, 0.95);
    Matrix<double> out = encode(*enc, x, params);
    Matrix<double> x_grid = x.leftCols(2), x_freq = x.rightCols(1);
    Matrix<double> out_grid = encode(*grid, x_grid, params);
    Matrix<double> out_freq = encode(*freq, x_freq);
    EXPECT_EQ(out.leftCols(grid->n_output_dims()), out_grid);
    EXPECT_EQ(out.rightCols(freq->n_output_dims()), out_freq);

    auto layout = enc->param_layout();
    ASSERT_EQ(layout.size(), 3u);
    EXPECT_EQ(layout[0].name, "nested0.grid.level00");
    EXPECT_EQ(layout[2].name, "nested0.grid.level02");
    EXPECT_EQ(layout[2].offset + layout[2].size(), enc->n_params());

    // Init: nested i gets derive_seed(seed, i).
    std::vector<double> a(enc->n_params()), b(grid->n_params());
    enc->init_params(a.data(), 77);
    grid->init_params(b.data(), derive_seed(77, 0));
    EXPECT_EQ(a, b);
    EXPECT_NE(enc->describe().find("Frequency"), std::string::npos);
    EXPECT_NE(enc->describe().find("HashGrid"), std::string::npos);
}

TEST(CompositeEncoding, GradientMatchesFiniteDifferences) {
    auto enc = make(3, hashgrid_plus_frequency());
    // Keep away from grid cell faces of every level (p = x*scale + 0.5).
    const auto& grid = dynamic_cast<const GridEncoding<double>&>(
        dynamic_cast<const CompositeEncoding<double>&>(*enc).nested(0));
    Matrix<double> x(6, 3);
    Rng rng(15);
    for (int i = 0; i < x.rows(); ++i) {
        bool near_face;
        do {
            for (int d = 0; d < 3; ++d) x(i, d) = rng.uniform(0.05, 0.95);
            near_face = false;
            for (const auto& lv : grid.levels())
                for (int d = 0; d < 2; ++d) {
                    double w = fractional(x(i, d) * lv.scale + 0.5);
                    near_face |= std::min(w, 1 - w) < 1e-3;
                }
        } while (near_face);
    }
    expect_gradients_ok(*enc, x, random_vector(enc->n_params(), 16), 17);
}

TEST(CompositeEncoding, OneEntryMayTakeTheRemainingDims) {
    json config = {{"otype", "Composite"},
                   {"nested",
                    {{{"otype", "Identity"}},
                     {{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 3}, {"degree", 2}}}}};
    auto enc = make(5, config);
    const auto& composite = dynamic_cast<const CompositeEncoding<double>&>(*enc);
    EXPECT_EQ(composite.nested(0).n_input_dims(), 2u);
    EXPECT_EQ(composite.nested(1).n_input_dims(), 3u);
    EXPECT_EQ(enc->n_output_dims(), 2u + 4u);
    expect_gradients_ok(*enc, random_matrix(4, 5, 18, 0.0, 1.0), {}, 19);
}

// ---- Factory ----------------------------------------------------------------

TEST(EncodingFactory, OtypesMatchIgnoringCaseAndExtraFieldsAreIgnored) {
    EXPECT_EQ(make(2, {{"otype", "FREQUENCY"}})->otype(), "Frequency");
    EXPECT_EQ(make(2, {{"otype", "oneblob"}})->otype(), "OneBlob");
    EXPECT_EQ(make(2, {{"otype", "trianglewave"}})->otype(), "TriangleWave");
    EXPECT_EQ(make(3, {{"otype", "sphericalharmonics"}})->n_output_dims(), 16u);  // default degree 4
    EXPECT_EQ(make(2, {{"otype", "OneBlob"}})->n_output_dims(), 32u);               // default 16 bins
    EXPECT_EQ(make(2, {{"otype", "TriangleWave"}})->n_output_dims(), 24u);          // default 12 frequencies
    // An instant-ngp style entry with fields we do not use.
    auto enc = make(3, {{"otype", "HashGrid"},
                        {"n_levels", 2},
                        {"n_dims_to_encode", 3},
                        {"stochastic_interpolation", false},
                        {"some_future_field", "x"}});
    EXPECT_EQ(enc->otype(), "HashGrid");
}

TEST(EncodingFactory, UnknownOtypeListsAllowedNames) {
    expect_config_error([] { make(2, {{"otype", "Fourier"}}); }, "encoding.otype",
                        {"Fourier", "Frequency", "HashGrid", "SphericalHarmonics", "Composite"});
    expect_config_error([] { make(2, json::object()); }, "encoding.otype");
}

TEST(EncodingFactory, SizesMustBePositiveAndInRange) {
    expect_config_error([] { make(2, {{"otype", "HashGrid"}, {"n_levels", 0}}); }, "encoding.n_levels", {"positive"});
    expect_config_error([] { make(2, {{"otype", "Frequency"}, {"n_frequencies", -1}}); }, "encoding.n_frequencies",
                        {"-1"});
    expect_config_error([] { make(2, {{"otype", "TriangleWave"}, {"n_frequencies", 0}}); }, "encoding.n_frequencies");
    expect_config_error([] { make(2, {{"otype", "OneBlob"}, {"n_bins", 0}}); }, "encoding.n_bins", {"positive"});
    expect_config_error([] { make(3, {{"otype", "SphericalHarmonics"}, {"degree", 9}}); }, "encoding.degree",
                        {"[1, 8]"});
    expect_config_error([] { make(3, {{"otype", "SphericalHarmonics"}, {"degree", 0}}); }, "encoding.degree");
    expect_config_error([] { make(2, {{"otype", "Identity"}, {"scale", "big"}}); }, "encoding.scale");
}

TEST(EncodingFactory, InputDimensionMismatchNamesExpectedAndGiven) {
    expect_config_error([] { make(2, {{"otype", "SphericalHarmonics"}}); }, "encoding.otype",
                        {"SphericalHarmonics", "3 input dims", "2 are given"});
    expect_config_error([] { make(0, {{"otype", "Identity"}}); }, "encoding");
}

TEST(EncodingFactory, CompositeDimsMustAddUpExactly) {
    auto composite = [](json nested) { return json{{"otype", "Composite"}, {"nested", nested}}; };
    // Too few.
    expect_config_error(
        [&] {
            make(4, composite({{{"otype", "Identity"}, {"n_dims_to_encode", 1}},
                               {{"otype", "Identity"}, {"n_dims_to_encode", 2}}}));
        },
        "encoding.nested[1].n_dims_to_encode", {"3", "4"});
    // Too many: the entry that overflows is named.
    expect_config_error(
        [&] {
            make(3, composite({{{"otype", "Identity"}, {"n_dims_to_encode", 2}},
                               {{"otype", "Identity"}, {"n_dims_to_encode", 2}},
                               {{"otype", "Identity"}, {"n_dims_to_encode", 1}}}));
        },
        "encoding.nested[1].n_dims_to_encode", {"4", "3"});
    // Two entries take "the rest".
    expect_config_error([&] { make(3, composite({{{"otype", "Identity"}}, {{"otype", "Identity"}}})); },
                        "encoding.nested[1].n_dims_to_encode", {"nested[0]"});
    // Nothing left for the entry that takes the rest.
    expect_config_error(
        [&] { make(2, composite({{{"otype", "Identity"}, {"n_dims_to_encode", 2}}, {{"otype", "Identity"}}})); },
        "encoding.nested[1].n_dims_to_encode");
    // A nested encoding that rejects its share of the dims.
    expect_config_error(
        [&] {
            make(3, composite({{{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 2}},
                               {{"otype", "Identity"}, {"n_dims_to_encode", 1}}}));
        },
        "encoding.nested[0].n_dims_to_encode", {"3 input dims", "2 are given"});
    // Errors inside nested entries carry the nested path.
    expect_config_error(
        [&] { make(2, composite({{{"otype", "Frequency"}, {"n_dims_to_encode", 2}, {"n_frequencies", 0}}})); },
        "encoding.nested[0].n_frequencies");
    expect_config_error([&] { make(2, composite(json::array())); }, "encoding.nested");
    expect_config_error([&] { make(2, {{"otype", "Composite"}}); }, "encoding.nested");
}
