// Grid encoding (Hash / Dense / Tiled): gradients, exact indexing rules, edge
// cases at cell faces and at the domain boundary, parameters, config errors.
#include "encodings/factory.h"
#include "encodings/grid.h"

#include "encoding_testing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

using namespace fusedngp;
using namespace fusedngp::test;

namespace {

// Small grids so every parameter can be finite-differenced. With
// base_resolution 3 and per_level_scale 1.5 the scales are 2, 3.5, 5.75,
// 9.125 (resolutions 4, 6, 8, 12): non-integer scales, and with 2^6 hash rows
// 2D has dense levels 0-2 and a hashed level 3, 3D a dense level 0 and hashed
// levels 1-3.
json small_grid(const std::string& type, const std::string& interpolation, int features) {
    return {{"otype", "Grid"},
            {"type", type},
            {"n_levels", 4},
            {"n_features_per_level", features},
            {"log2_hashmap_size", 6},
            {"base_resolution", 3},
            {"per_level_scale", 1.5},
            {"interpolation", interpolation}};
}

template <typename T = double>
std::unique_ptr<GridEncoding<T>> make_grid(uint32_t dims, const json& config) {
    auto enc = create_encoding<T>(dims, config);
    auto* grid = dynamic_cast<GridEncoding<T>*>(enc.get());
    EXPECT_NE(grid, nullptr);
    enc.release();
    return std::unique_ptr<GridEncoding<T>>(grid);
}


// Random points whose position inside the cell is at least `margin` away from
// every face (and from the midpoint for Nearest) at every level, so central
// differences never straddle a kink.
Matrix<double> points_away_from_kinks(const GridEncoding<double>& grid, int batch, uint64_t seed,
                                      double margin = 1e-3) {
    const uint32_t D = grid.n_input_dims();
    Matrix<double> x(batch, D);
    Rng rng(seed);
    for (int i = 0; i < batch; ++i) {
        bool near_kink;
        do {
            near_kink = false;
            for (uint32_t d = 0; d < D; ++d) {
                x(i, d) = rng.uniform(0.02, 0.98);
                for (const auto& lv : grid.levels()) {
                    const double w = fractional(x(i, d) * lv.scale + 0.5);
                    near_kink |= std::min(w, 1 - w) < margin || std::abs(w - 0.5) < margin;
                }
            }
        } while (near_kink);
    }
    return x;
}

Matrix<double> encode(const GridEncoding<double>& grid, const std::vector<double>& params, const Matrix<double>& x) {
    Matrix<double> out;
    grid.forward(params.data(), x, out);
    return out;
}

} // namespace

// ---- Gradients --------------------------------------------------------------

TEST(GridGradients, LinearAndSmoothstepForEveryTypeDimAndFeatureCount) {
    uint64_t seed = 100;
    for (std::string type : {"Hash", "Dense", "Tiled"}) {
        for (std::string interpolation : {"Linear", "Smoothstep"}) {
            for (uint32_t dims : {2u, 3u}) {
                for (int features : {1, 2, 4, 8}) {
                    SCOPED_TRACE(type + " " + interpolation + " " + std::to_string(dims) + "D F=" +
                                 std::to_string(features));
                    auto grid = make_grid(dims, small_grid(type, interpolation, features));
                    seed += 3;
                    Matrix<double> x = points_away_from_kinks(*grid, 6, seed);
                    auto r = check_encoding_gradients(*grid, x, random_vector(grid->n_params(), seed + 1), seed + 2);
                    EXPECT_LT(r.input_error, 1e-6);
                    EXPECT_LT(r.param_error, 1e-6);
                    EXPECT_GT(r.input_norm, 1e-3);
                    EXPECT_GT(r.param_norm, 1e-3);
                }
            }
        }
    }
}

TEST(GridGradients, NearestHasExactlyZeroInputGradientAndCorrectParamGradient) {
    uint64_t seed = 200;
    for (std::string type : {"Hash", "Dense", "Tiled"}) {
        for (uint32_t dims : {2u, 3u}) {
            SCOPED_TRACE(type + " " + std::to_string(dims) + "D");
            auto grid = make_grid(dims, small_grid(type, "Nearest", 2));
            Matrix<double> x = points_away_from_kinks(*grid, 6, ++seed);
            std::vector<double> params = random_vector(grid->n_params(), ++seed);
            auto r = check_encoding_gradients(*grid, x, params, ++seed);
            EXPECT_LT(r.param_error, 1e-6);
            EXPECT_GT(r.param_norm, 1e-3);
            Matrix<double> din;
            grid->backward(params.data(), x, random_matrix(6, (int)grid->n_output_dims(), ++seed), nullptr, &din);
            ASSERT_EQ(din.rows(), 6);
            for (int i = 0; i < din.size(); ++i) EXPECT_EQ(din.data()[i], 0.0);
        }
    }
}

// ---- Values -----------------------------------------------------------------

TEST(GridValues, LinearIsBilinearInterpolationOfTheCellCorners) {
    // One dense level: scale 4, resolution 6, row = c0 + c1 * 6.
    auto grid = make_grid(2, {{"otype", "DenseGrid"}, {"n_levels", 1}, {"n_features_per_level", 1},
                              {"base_resolution", 5}});
    ASSERT_EQ(grid->levels()[0].resolution, 6u);
    std::vector<double> table = random_vector(grid->n_params(), 300);
    Matrix<double> x(1, 2);
    x << 0.3, 0.8;
    // p = x * 4 + 0.5 = (1.7, 3.7): cell (1, 3), weights (0.7, 0.7).
    const double wx = 0.7, wy = 0.7;
    auto at = [&](int c0, int c1) { return table[c0 + c1 * 6]; };
    const double expected = (1 - wx) * (1 - wy) * at(1, 3) + wx * (1 - wy) * at(2, 3) + (1 - wx) * wy * at(1, 4) +
                            wx * wy * at(2, 4);
    EXPECT_NEAR(encode(*grid, table, x)(0, 0), expected, 1e-14);
}

TEST(GridValues, SmoothstepAndNearestShapeTheWeights) {
    auto base = json{{"otype", "HashGrid"}, {"n_levels", 1}, {"base_resolution", 5}};
    json smooth_config = base, nearest_config = base;
    smooth_config["interpolation"] = "smoothstep";
    nearest_config["interpolation"] = "NEAREST";
    auto smooth = make_grid(2, smooth_config);
    auto nearest = make_grid(2, nearest_config);
    double x[2] = {0.3, 0.55};  // p = (1.7, 2.7): w = (0.7, 0.7)
    uint32_t lower[2];
    double w[2];
    smooth->locate(0, x, lower, w);
    EXPECT_EQ(lower[0], 1u);
    EXPECT_EQ(lower[1], 2u);
    EXPECT_NEAR(w[0], 0.7 * 0.7 * (3 - 2 * 0.7), 1e-14);
    nearest->locate(0, x, lower, w);
    EXPECT_EQ(w[0], 1.0);
    double x2[2] = {0.2, 0.2};  // p = 1.3: w = 0.3 < 0.5
    nearest->locate(0, x2, lower, w);
    EXPECT_EQ(w[0], 0.0);
}

TEST(GridValues, FloatMatchesDouble) {
    auto gd = make_grid<double>(3, small_grid("Hash", "Linear", 4));
    auto gf = make_grid<float>(3, small_grid("Hash", "Linear", 4));
    ASSERT_EQ(gd->n_params(), gf->n_params());
    std::vector<double> pd = random_vector(gd->n_params(), 301);
    std::vector<float> pf(pd.begin(), pd.end());
    Matrix<double> x = points_away_from_kinks(*gd, 50, 302, 1e-3);
    Matrix<float> xf = x.cast<float>();
    Matrix<double> yd = encode(*gd, pd, x);
    Matrix<float> yf;
    gf->forward(pf.data(), xf, yf);
    EXPECT_LT((yf.cast<double>() - yd).cwiseAbs().maxCoeff(), 1e-5);
}

// ---- Edge cases -------------------------------------------------------------

TEST(GridEdgeCases, ContinuousAcrossCellFacesFromBothSides) {
    for (std::string interpolation : {"Linear", "Smoothstep"}) {
        SCOPED_TRACE(interpolation);
        // base_resolution 17 -> scale 16: x = 17/32 gives p = 9 exactly, a cell face.
        auto grid = make_grid(2, {{"otype", "HashGrid"}, {"n_levels", 1}, {"base_resolution", 17},
                                  {"log2_hashmap_size", 6}, {"interpolation", interpolation}});
        std::vector<double> params = random_vector(grid->n_params(), 310);
        Matrix<double> x(3, 2);
        const double face = 17.0 / 32.0, eps = 1e-10;
        x << face - eps, 0.3, face, 0.3, face + eps, 0.3;
        uint32_t lower[2];
        double w[2];
        grid->locate(0, x.row(1).data(), lower, w);
        ASSERT_EQ(lower[0], 9u);  // exactly on the face: the upper cell, weight 0
        ASSERT_EQ(w[0], 0.0);
        Matrix<double> y = encode(*grid, params, x);
        for (int f = 0; f < y.cols(); ++f) {
            EXPECT_TRUE(std::isfinite(y(1, f)));
            EXPECT_NEAR(y(0, f), y(1, f), 1e-8);
            EXPECT_NEAR(y(2, f), y(1, f), 1e-8);
        }
        Matrix<double> din;
        grid->backward(params.data(), x, Matrix<double>::Ones(3, y.cols()), nullptr, &din);
        EXPECT_TRUE(din.allFinite());
    }
}

TEST(GridEdgeCases, InputsAtZeroAndOneStayInRangeAtEveryLevel) {
    // Many levels with an irrational per_level_scale (scales far from integers),
    // and an integer one (x = 1 lands exactly on the last vertex face).
    for (double per_level_scale : {1.3819128799677, 2.0}) {
        for (std::string type : {"Hash", "Dense", "Tiled"}) {
            for (uint32_t dims : {2u, 3u}) {
                SCOPED_TRACE(type + " " + std::to_string(dims) + "D scale " + std::to_string(per_level_scale));
                const int n_levels = type == "Dense" ? (dims == 2 ? 8 : 5) : 16;
                json config = {{"otype", "Grid"}, {"type", type}, {"n_levels", n_levels}, {"base_resolution", 16},
                               {"per_level_scale", per_level_scale}, {"log2_hashmap_size", 12}};
                auto gd = make_grid<double>(dims, config);
                auto gf = make_grid<float>(dims, config);
                for (uint32_t l = 0; l < gd->levels().size(); ++l) {
                    const GridLevel& lv = gd->levels()[l];
                    for (int corner = 0; corner < (1 << dims); ++corner) {
                        double xd[3];
                        float xf[3];
                        for (uint32_t i = 0; i < dims; ++i) xf[i] = (float)(xd[i] = (corner >> i) & 1);
                        uint32_t lower_d[3], lower_f[3];
                        double wd[3];
                        float wf[3];
                        gd->locate(l, xd, lower_d, wd);
                        gf->locate(l, xf, lower_f, wf);
                        for (int k = 0; k < (1 << dims); ++k) {
                            uint32_t vd[3], vf[3];
                            for (uint32_t i = 0; i < dims; ++i) {
                                vd[i] = lower_d[i] + ((k >> i) & 1);
                                vf[i] = lower_f[i] + ((k >> i) & 1);
                                ASSERT_LT(vd[i], lv.resolution);
                                ASSERT_LT(vf[i], lv.resolution);
                            }
                            ASSERT_LT(gd->row_index(l, vd), lv.rows);
                            ASSERT_LT(gf->row_index(l, vf), lv.rows);
                        }
                    }
                }
                // And the whole encoding evaluates to finite values there.
                std::vector<double> params = random_vector(gd->n_params(), 320);
                Matrix<double> x(1 << dims, dims);
                for (int c = 0; c < (1 << dims); ++c)
                    for (uint32_t i = 0; i < dims; ++i) x(c, i) = (c >> i) & 1;
                EXPECT_TRUE(encode(*gd, params, x).allFinite());
            }
        }
    }
}

TEST(GridEdgeCases, OutOfRangeInputsAreClampedWithZeroGradient) {
    auto grid = make_grid(2, small_grid("Hash", "Linear", 2));
    std::vector<double> params = random_vector(grid->n_params(), 330);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Matrix<double> x(3, 2), clamped(3, 2);
    x << -0.5, 0.37, 1.5, 0.61, nan, 0.43;
    clamped << 0.0, 0.37, 1.0, 0.61, 0.0, 0.43;
    EXPECT_EQ(encode(*grid, params, x), encode(*grid, params, clamped));
    Matrix<double> din;
    grid->backward(params.data(), x, Matrix<double>::Ones(3, grid->n_output_dims()), nullptr, &din);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(din(i, 0), 0.0);
        EXPECT_NE(din(i, 1), 0.0);  // the in-range coordinate still has a gradient
    }
}

// ---- Indexing ---------------------------------------------------------------

TEST(GridIndexing, DenseTurnsIntoHashAtTheFirstLevelThatOverflows) {
    // base 4, scale 2: resolutions 5, 9, 17, 33, 65.
    struct Case {
        uint32_t dims;
        uint32_t log2_size;
        std::vector<uint32_t> rows;
        uint32_t first_hashed;
    };
    for (const Case& c : {Case{2, 10, {25, 81, 289, 1024, 1024}, 3}, Case{3, 12, {125, 729, 4096, 4096, 4096}, 2}}) {
        SCOPED_TRACE(c.dims);
        auto grid = make_grid(c.dims, {{"otype", "HashGrid"}, {"n_levels", 5}, {"base_resolution", 4},
                                       {"per_level_scale", 2.0}, {"log2_hashmap_size", c.log2_size}});
        const auto& levels = grid->levels();
        ASSERT_EQ(levels.size(), 5u);
        const uint32_t resolutions[5] = {5, 9, 17, 33, 65};
        for (uint32_t l = 0; l < 5; ++l) {
            const GridLevel& lv = levels[l];
            EXPECT_EQ(lv.resolution, resolutions[l]);
            EXPECT_EQ(lv.rows, c.rows[l]);
            EXPECT_EQ(lv.hashed(), l >= c.first_hashed);
            EXPECT_EQ(lv.scale, 4.0 * std::pow(2.0, l) - 1);
            const uint32_t res = lv.resolution;
            if (!lv.hashed()) {
                // Dense: c0 + c1*res + c2*res^2, a bijection onto [0, rows).
                std::set<uint32_t> seen;
                uint32_t v[3] = {0, 0, 0};
                for (v[2] = 0; v[2] < (c.dims == 3 ? res : 1u); ++v[2])
                    for (v[1] = 0; v[1] < res; ++v[1])
                        for (v[0] = 0; v[0] < res; ++v[0]) {
                            const uint32_t row = grid->row_index(l, v);
                            ASSERT_EQ(row, v[0] + v[1] * res + v[2] * res * res);
                            seen.insert(row);
                        }
                EXPECT_EQ(seen.size(), lv.rows);
                EXPECT_EQ(*seen.rbegin(), lv.rows - 1);
            } else {
                Rng rng(340 + l);
                for (int s = 0; s < 200; ++s) {
                    uint32_t v[3] = {0, 0, 0};
                    for (uint32_t i = 0; i < c.dims; ++i) v[i] = (uint32_t)(rng.next_u64() % res);
                    uint32_t h = v[0] ^ (v[1] * 2654435761u);
                    if (c.dims == 3) h ^= v[2] * 805459861u;
                    ASSERT_EQ(grid->row_index(l, v), h % (1u << c.log2_size));
                }
            }
        }
    }
}

TEST(GridIndexing, TiledWrapsVerticesModuloBaseResolution) {
    auto grid = make_grid(3, {{"otype", "TiledGrid"}, {"n_levels", 3}, {"base_resolution", 5}});
    for (uint32_t l = 0; l < 3; ++l) {
        const GridLevel& lv = grid->levels()[l];
        EXPECT_EQ(lv.rows, 125u);
        EXPECT_EQ(lv.indexing, GridIndexing::Tiled);
        EXPECT_GT(lv.resolution, 5u);
        uint32_t v[3] = {1, 2, 3}, w[3] = {6, 2 + 5 * l, 3};
        ASSERT_LT(w[1], lv.resolution);
        EXPECT_EQ(grid->row_index(l, v), grid->row_index(l, w));
        EXPECT_EQ(grid->row_index(l, v), 1u + 2u * 5u + 3u * 25u);
        EXPECT_EQ(grid->row_index(l, w), 1u + ((2u + 5u * l) % 5u) * 5u + 3u * 25u);
    }
}

TEST(GridIndexing, HashCollisionSharesAParameterAndBothGradientsLandThere) {
    // One hashed level: scale 63, resolution 65, 65^2 vertices on 16 rows.
    auto grid = make_grid(2, {{"otype", "HashGrid"}, {"n_levels", 1}, {"n_features_per_level", 1},
                              {"base_resolution", 64}, {"log2_hashmap_size", 4}, {"interpolation", "Nearest"}});
    ASSERT_TRUE(grid->levels()[0].hashed());
    // Two distinct vertices with the same row.
    uint32_t a[2] = {10, 20}, b[2] = {0, 0};
    const uint32_t target = grid->row_index(0, a);
    bool found = false;
    for (b[1] = 30; b[1] < 64 && !found; ++b[1])
        for (b[0] = 1; b[0] < 64 && !found; ++b[0]) found = grid->row_index(0, b) == target;
    ASSERT_TRUE(found);
    --b[0], --b[1];  // undo the loops' last increments
    ASSERT_EQ(grid->row_index(0, b), target);
    // Points at p = vertex + 0.25, whose nearest vertex is that vertex.
    Matrix<double> x(2, 2);
    for (int i = 0; i < 2; ++i) {
        x(0, i) = (a[i] - 0.25) / 63.0;
        x(1, i) = (b[i] - 0.25) / 63.0;
    }
    std::vector<double> params = random_vector(grid->n_params(), 350);
    Matrix<double> y = encode(*grid, params, x);
    EXPECT_EQ(y(0, 0), params[target]);
    EXPECT_EQ(y(1, 0), params[target]);
    Matrix<double> dout(2, 1);
    dout << 0.75, -2.0;
    std::vector<double> dparams(grid->n_params(), 0.0);
    grid->backward(params.data(), x, dout, dparams.data(), nullptr);
    for (size_t r = 0; r < dparams.size(); ++r) EXPECT_EQ(dparams[r], r == target ? 0.75 - 2.0 : 0.0) << r;
}

// ---- Parameters -------------------------------------------------------------

TEST(GridParams, CountsMatchHandComputedTotals) {
    // Defaults (16 levels, F=2, 2^19 rows, base 16, scale 2). 3D: levels 0-2
    // dense (17^3, 33^3, 65^3 rows), 13 hashed levels of 2^19 rows.
    EXPECT_EQ(make_grid(3, {{"otype", "HashGrid"}})->n_params(), 2u * (4913u + 35937u + 274625u + 13u * 524288u));
    // 2D: levels 0-5 dense (17^2 ... 513^2), 10 hashed.
    EXPECT_EQ(make_grid(2, {{"otype", "HashGrid"}})->n_params(),
              2u * (289u + 1089u + 4225u + 16641u + 66049u + 263169u + 10u * 524288u));
    EXPECT_EQ(make_grid(2, {{"otype", "DenseGrid"}, {"n_levels", 3}, {"n_features_per_level", 4}})->n_params(),
              4u * (289u + 1089u + 4225u));
    EXPECT_EQ(make_grid(3, {{"otype", "TiledGrid"}, {"n_levels", 4}, {"n_features_per_level", 8},
                            {"base_resolution", 6}})->n_params(),
              8u * 4u * 216u);
}

TEST(GridParams, LayoutHasOneTensorPerLevel) {
    auto grid = make_grid(2, small_grid("Hash", "Linear", 4));
    auto layout = grid->param_layout();
    ASSERT_EQ(layout.size(), 4u);
    size_t offset = 0;
    for (size_t l = 0; l < layout.size(); ++l) {
        EXPECT_EQ(layout[l].name, "grid.level0" + std::to_string(l));
        EXPECT_EQ(layout[l].offset, offset);
        EXPECT_EQ(layout[l].offset, grid->levels()[l].param_offset);
        ASSERT_EQ(layout[l].shape.size(), 2u);
        EXPECT_EQ(layout[l].shape[0], grid->levels()[l].rows);
        EXPECT_EQ(layout[l].shape[1], 4u);
        EXPECT_EQ(layout[l].row_size, 4u);
        offset += layout[l].size();
    }
    EXPECT_EQ(offset, grid->n_params());
    // Rows 16, 36, 64 dense; level 3 (144 vertices) capped at 64.
    EXPECT_EQ(grid->levels()[3].rows, 64u);
    EXPECT_TRUE(grid->levels()[3].hashed());
    EXPECT_FALSE(grid->levels()[2].hashed());
}

TEST(GridParams, InitIsSeededUniformInPlusMinus1e4) {
    auto grid = make_grid<float>(3, small_grid("Dense", "Linear", 2));
    std::vector<float> a(grid->n_params()), b(grid->n_params()), c(grid->n_params());
    grid->init_params(a.data(), 5);
    grid->init_params(b.data(), 5);
    grid->init_params(c.data(), 6);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    Rng rng(5);
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i], rng.uniform<float>(-1e-4f, 1e-4f));  // drawn in parameter order
        ASSERT_GE(a[i], -1e-4f);
        ASSERT_LE(a[i], 1e-4f);
    }
    float lo = *std::min_element(a.begin(), a.end()), hi = *std::max_element(a.begin(), a.end());
    EXPECT_LT(lo, -0.9e-4f);
    EXPECT_GT(hi, 0.9e-4f);
}

// ---- Determinism and batching -----------------------------------------------

TEST(GridDeterminism, LargeBatchesAreBitIdenticalToPerSampleAndBackwardAccumulates) {
    auto grid = make_grid<float>(3, {{"otype", "HashGrid"}, {"n_levels", 8}, {"log2_hashmap_size", 10}});
    std::vector<float> params(grid->n_params());
    grid->init_params(params.data(), 1);
    for (auto& p : params) p *= 1e4f;
    const int batch = 1000;  // many blocks of samples: exercises the threaded paths
    Matrix<float> x = random_matrix(batch, 3, 360, 0.0, 1.0).cast<float>();
    Matrix<float> y;
    grid->forward(params.data(), x, y);
    for (int i = 0; i < batch; i += 97) {
        Matrix<float> xi = x.row(i), yi;
        grid->forward(params.data(), xi, yi);
        ASSERT_EQ(yi, y.row(i));
    }
    Matrix<float> dout = random_matrix(batch, (int)grid->n_output_dims(), 361).cast<float>();
    std::vector<float> g1(grid->n_params(), 0.f), g2(grid->n_params(), 0.f);
    Matrix<float> din1, din2;
    grid->backward(params.data(), x, dout, g1.data(), &din1);
    grid->backward(params.data(), x, dout, g2.data(), &din2);
    EXPECT_EQ(g1, g2);
    EXPECT_EQ(din1, din2);
    for (int i = 0; i < batch; i += 97) {
        Matrix<float> xi = x.row(i), douti = dout.row(i), dini;
        grid->backward(params.data(), xi, douti, nullptr, &dini);
        ASSERT_EQ(dini, din1.row(i));
    }
    // backward adds into dparams (not bit-exactly 2x: the second pass sums
    // onto non-zero accumulators).
    grid->backward(params.data(), x, dout, g2.data(), nullptr);
    for (size_t i = 0; i < g1.size(); ++i) ASSERT_NEAR(g2[i], 2 * g1[i], 1e-5f * (1 + std::abs(g1[i])));
}

// ---- Config -----------------------------------------------------------------

TEST(GridConfig, AliasesAndTypeField) {
    EXPECT_EQ(make_grid(2, {{"otype", "Grid"}})->options().type, GridType::Hash);
    EXPECT_EQ(make_grid(2, {{"otype", "grid"}, {"type", "dense"}, {"n_levels", 2}})->otype(), "DenseGrid");
    EXPECT_EQ(make_grid(2, {{"otype", "Grid"}, {"type", "Tiled"}})->otype(), "TiledGrid");
    EXPECT_EQ(make_grid(2, {{"otype", "hashgrid"}})->otype(), "HashGrid");
    EXPECT_EQ(make_grid(2, {{"otype", "DenseGrid"}, {"n_levels", 2}})->options().type, GridType::Dense);
    EXPECT_EQ(make_grid(2, {{"otype", "TiledGrid"}})->options().type, GridType::Tiled);
    auto grid = make_grid(3, {{"otype", "HashGrid"}});
    const GridOptions& o = grid->options();
    EXPECT_EQ(o.n_levels, 16u);
    EXPECT_EQ(o.n_features_per_level, 2u);
    EXPECT_EQ(o.log2_hashmap_size, 19u);
    EXPECT_EQ(o.base_resolution, 16u);
    EXPECT_EQ(o.per_level_scale, 2.0);
    EXPECT_EQ(o.interpolation, GridInterpolation::Linear);
    EXPECT_EQ(grid->n_output_dims(), 32u);
    EXPECT_NE(grid->describe().find("16 levels"), std::string::npos);
    EXPECT_NE(grid->describe().find("log2_hashmap_size 19"), std::string::npos);
    EXPECT_NE(grid->describe_levels().find("level15"), std::string::npos);
    EXPECT_NE(grid->describe_levels().find("hash"), std::string::npos);
}

TEST(GridConfig, BadValuesNameTheFieldAndAllowedValues) {
    auto grid = [](uint32_t dims, json extra) {
        json c = {{"otype", "HashGrid"}};
        if (extra.is_object()) c.update(extra);
        create_encoding<double>(dims, c);
    };
    expect_config_error([&] { grid(2, {{"n_features_per_level", 3}}); }, "encoding.n_features_per_level",
                        {"3", "1, 2, 4, 8"});
    expect_config_error([&] { grid(2, {{"log2_hashmap_size", 31}}); }, "encoding.log2_hashmap_size", {"[1, 30]"});
    expect_config_error([&] { grid(2, {{"log2_hashmap_size", 0}}); }, "encoding.log2_hashmap_size");
    expect_config_error([&] { grid(2, {{"n_levels", 0}}); }, "encoding.n_levels", {"positive"});
    expect_config_error([&] { grid(2, {{"base_resolution", -4}}); }, "encoding.base_resolution");
    expect_config_error([&] { grid(2, {{"per_level_scale", 0.5}}); }, "encoding.per_level_scale", {">= 1"});
    expect_config_error([&] { grid(2, {{"interpolation", "Cubic"}}); }, "encoding.interpolation",
                        {"Linear, Nearest, Smoothstep"});
    expect_config_error([&] { create_encoding<double>(2, {{"otype", "Grid"}, {"type", "Sparse"}}); },
                        "encoding.type", {"Hash, Dense, Tiled"});
    expect_config_error([&] { grid(1, {}); }, "encoding.otype", {"2 or 3", "1 is given"});
    expect_config_error([&] { grid(4, {}); }, "encoding.otype", {"2 or 3", "4 are given"});
    // Dense levels must stay addressable.
    expect_config_error([&] { create_encoding<double>(3, {{"otype", "DenseGrid"}}); }, "encoding.n_levels",
                        {"2^30"});
    expect_config_error([&] { grid(2, {{"n_levels", 40}}); }, "encoding.n_levels", {"2^24"});
}
