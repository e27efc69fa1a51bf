// The SDF mode's training-sample generator: settings, the batch layout,
// area-uniform surface points, the offsets' distribution, determinism and
// targets (geometry/sdf_sampling.h, surface_sampler.h, sdf_sampling_math.h).
#include "core/errors.h"
#include "geometry/sdf_sampling.h"
#include "geometry/sdf_sampling_math.h"
#include "geometry/surface_sampler.h"

#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace fusedngp;

namespace {

const Vec3 kBoxLo{0.25f, 0.3f, 0.35f}, kBoxHi{0.75f, 0.7f, 0.65f};

TriangleMesh two_triangles_area_3_to_1() {
    TriangleMesh m;
    // Triangle 0: legs 1 and 1 (area 1/2); triangle 1: legs 3 and 1 (area 3/2), far away.
    m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {5, 0, 0}, {8, 0, 0}, {5, 1, 0}};
    m.triangles = {{0, 1, 2}, {3, 4, 5}};
    return m;
}

Vec3 row(const Matrix<float>& m, int64_t i) { return {m(i, 0), m(i, 1), m(i, 2)}; }

struct Moments {
    double mean[3] = {0, 0, 0}, stddev[3] = {0, 0, 0};
    double within_one_sigma = 0;  // fraction of |offset component| < sigma, all axes pooled
};

// Offsets of samples [first, first + n) from the surface points they were
// drawn from (the same counters with sigma = 0).
Moments offset_moments(const SurfaceSampler& surface, const Matrix<float>& points, uint64_t key, uint32_t first,
                       uint32_t n, float sigma) {
    Moments m;
    double sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0};
    uint64_t within = 0;
    for (uint32_t i = first; i < first + n; ++i) {
        const Vec3 offset = row(points, i) - sdf_near_surface_point(surface.view(), key, i, 0.f);
        for (int a = 0; a < 3; ++a) {
            sum[a] += offset[a];
            sum_sq[a] += (double)offset[a] * offset[a];
            within += std::fabs(offset[a]) < sigma;
        }
    }
    for (int a = 0; a < 3; ++a) {
        m.mean[a] = sum[a] / n;
        m.stddev[a] = std::sqrt(sum_sq[a] / n - m.mean[a] * m.mean[a]);
    }
    m.within_one_sigma = (double)within / (3.0 * n);
    return m;
}

} // namespace

// ---- Random numbers ----------------------------------------------------------

TEST(SdfSamplingMath, MixIsSplitMix64) {
    // SplitMix64 seeded with 0 outputs mix(0 + golden ratio) first (published test vector).
    EXPECT_EQ(splitmix64_mix(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);
}

TEST(SdfSamplingMath, UniformsInRangeAndIndependentOfOrder) {
    const uint64_t key = sdf_random_key(7, 3, SdfRandomPurpose::Training);
    double sum = 0;
    for (uint32_t i = 0; i < 100000; ++i) {
        const float u = sdf_uniform01(key, i, i % kSdfStreams);
        ASSERT_GE(u, 0.f);
        ASSERT_LT(u, 1.f);
        sum += u;
    }
    EXPECT_NEAR(sum / 100000, 0.5, 0.003);  // 3.3 standard errors
    // A counter's value does not depend on what was drawn before it.
    EXPECT_EQ(sdf_uniform01(key, 12345, 2), sdf_uniform01(key, 12345, 2));
    EXPECT_NE(sdf_uniform01(key, 12345, 2), sdf_uniform01(key, 12345, 3));
    EXPECT_NE(sdf_random_key(7, 3, SdfRandomPurpose::Training), sdf_random_key(7, 3, SdfRandomPurpose::Iou));
    EXPECT_NE(sdf_random_key(7, 3, SdfRandomPurpose::Training), sdf_random_key(7, 4, SdfRandomPurpose::Training));
    EXPECT_NE(sdf_random_key(7, 3, SdfRandomPurpose::Training), sdf_random_key(8, 3, SdfRandomPurpose::Training));
}

TEST(SdfSamplingMath, BoxMullerIsStandardNormal) {
    const uint64_t key = sdf_random_key(1, 0, SdfRandomPurpose::Training);
    const int n = 100000;
    double sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0}, cross_xy = 0;
    for (int i = 0; i < n; ++i) {
        const Vec3 z = sdf_gaussian3(key, i);
        for (int a = 0; a < 3; ++a) {
            ASSERT_TRUE(std::isfinite(z[a]));
            sum[a] += z[a];
            sum_sq[a] += (double)z[a] * z[a];
        }
        cross_xy += (double)z.x * z.y;
    }
    for (int a = 0; a < 3; ++a) {
        EXPECT_NEAR(sum[a] / n, 0.0, 0.015);     // standard error 0.0032
        EXPECT_NEAR(sum_sq[a] / n, 1.0, 0.03);   // standard error 0.0045
    }
    EXPECT_NEAR(cross_xy / n, 0.0, 0.015);  // the pair's two outputs are uncorrelated
}

// ---- Settings ------------------------------------------------------------------

TEST(SdfSamplingSettings, DefaultsAreInstantNgps) {
    const SdfSamplingSettings s;
    EXPECT_FLOAT_EQ(s.uniform_fraction, 1.f / 8);
    EXPECT_FLOAT_EQ(s.surface_fraction, 4.f / 8);
    EXPECT_FLOAT_EQ(s.small_offset_fraction(), 3.f / 8);
    EXPECT_FLOAT_EQ(s.large_offset_fraction, 0.f);
    EXPECT_FLOAT_EQ(s.surface_offset_small, std::sqrt(3.f) / 2 / 1024);
    EXPECT_FLOAT_EQ(s.surface_offset_large, 1.f / 128);
}

TEST(SdfSamplingSettings, JsonMissingKeysKeepDefaultsAndRoundTrips) {
    const SdfSamplingSettings defaults;
    const SdfSamplingSettings empty = SdfSamplingSettings::from_json(json::object());
    EXPECT_EQ(empty.to_json(), defaults.to_json());

    const SdfSamplingSettings s =
        SdfSamplingSettings::from_json(json{{"uniform_fraction", 0.25}, {"large_offset_fraction", 0.25},
                                            {"surface_offset_large", 0.01}});
    EXPECT_FLOAT_EQ(s.uniform_fraction, 0.25f);
    EXPECT_FLOAT_EQ(s.large_offset_fraction, 0.25f);
    EXPECT_FLOAT_EQ(s.surface_offset_large, 0.01f);
    EXPECT_FLOAT_EQ(s.surface_fraction, defaults.surface_fraction);
    EXPECT_FLOAT_EQ(s.surface_offset_small, defaults.surface_offset_small);

    const SdfSamplingSettings back = SdfSamplingSettings::from_json(s.to_json());
    EXPECT_EQ(back.to_json(), s.to_json());
    for (const std::string& key : SdfSamplingSettings::json_keys()) EXPECT_TRUE(s.to_json().contains(key)) << key;
    EXPECT_EQ(s.to_json().size(), SdfSamplingSettings::json_keys().size());
}

TEST(SdfSamplingSettings, BadValuesNameTheirPath) {
    auto path_of_error = [](const json& j) -> std::string {
        try {
            SdfSamplingSettings::from_json(j);
        } catch (const ConfigError& e) {
            return e.path();
        }
        return "(no error)";
    };
    EXPECT_EQ(path_of_error(json{{"uniform_fraction", "half"}}), "sampling.uniform_fraction");
    EXPECT_EQ(path_of_error(json{{"surface_fraction", -0.1}}), "sampling.surface_fraction");
    EXPECT_EQ(path_of_error(json{{"large_offset_fraction", 1.5}}), "sampling.large_offset_fraction");
    EXPECT_EQ(path_of_error(json{{"surface_offset_small", -1e-3}}), "sampling.surface_offset_small");
    EXPECT_EQ(path_of_error(json{{"surface_offset_large", true}}), "sampling.surface_offset_large");
    EXPECT_EQ(path_of_error(json{{"uniform_fraction", 0.6}, {"surface_fraction", 0.6}}), "sampling");
    EXPECT_EQ(path_of_error(json::array()), "sampling");
    EXPECT_EQ(path_of_error(json{{"target_sign", "rays"}}), "sampling.target_sign");
    EXPECT_EQ(path_of_error(json{{"target_sign", 1}}), "sampling.target_sign");
    EXPECT_EQ(path_of_error(json{{"uniform_fraction", 1.0}, {"surface_fraction", 0.0}}), "(no error)");
    EXPECT_EQ(path_of_error(json{{"target_sign", "pseudo_normal"}}), "(no error)");
}

// ---- Layout --------------------------------------------------------------------

TEST(SdfSampleLayout, DefaultSplitOfAPowerOfTwoBatch) {
    const SdfSampleLayout l = sdf_sample_layout(SdfSamplingSettings{}, 1u << 18);
    EXPECT_EQ(l.n_uniform, 1u << 15);
    EXPECT_EQ(l.n_surface, 1u << 17);
    EXPECT_EQ(l.n_small, 3u << 15);
    EXPECT_EQ(l.n_large, 0u);
    EXPECT_EQ(l.batch(), 1u << 18);
    EXPECT_EQ(sdf_sample_kind(l, 0), SdfSampleKind::Uniform);
    EXPECT_EQ(sdf_sample_kind(l, (1u << 15) - 1), SdfSampleKind::Uniform);
    EXPECT_EQ(sdf_sample_kind(l, 1u << 15), SdfSampleKind::Surface);
    EXPECT_EQ(sdf_sample_kind(l, (1u << 18) - 1), SdfSampleKind::SmallOffset);
}

TEST(SdfSampleLayout, CountsAlwaysAddUpToTheBatch) {
    SdfSamplingSettings s;
    s.uniform_fraction = 0.3f;
    s.surface_fraction = 0.3f;
    s.large_offset_fraction = 0.4f;  // nothing left for the small offset
    for (uint32_t batch : {0u, 1u, 7u, 1001u, 65537u}) {
        const SdfSampleLayout l = sdf_sample_layout(s, batch);
        EXPECT_EQ(l.batch(), batch);
        EXPECT_LE(l.n_small, 1u);  // only rounding
        EXPECT_NEAR(l.n_uniform, 0.3 * batch, 1.0);
        EXPECT_NEAR(l.n_large, 0.4 * batch, 1.0);
    }
    s.uniform_fraction = 0.9f;
    s.surface_fraction = 0.2f;
    EXPECT_THROW(sdf_sample_layout(s, 100), ConfigError);
}

// ---- Surface sampler -----------------------------------------------------------

TEST(SurfaceSampler, CdfOfABox) {
    const SurfaceSampler s(test::make_box_mesh(kBoxLo, kBoxHi));
    const Vec3 e = kBoxHi - kBoxLo;
    EXPECT_NEAR(s.total_area(), 2.0 * (e.x * e.y + e.y * e.z + e.z * e.x), 1e-6);
    ASSERT_EQ(s.n_triangles(), 12u);
    EXPECT_EQ(s.cdf().back(), 1.f);
    for (size_t t = 1; t < s.cdf().size(); ++t) EXPECT_GT(s.cdf()[t], s.cdf()[t - 1]);
}

TEST(SurfaceSampler, BadMeshesAreInputErrors) {
    EXPECT_THROW(SurfaceSampler(TriangleMesh{}), InputError);
    TriangleMesh flat;
    flat.vertices = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
    flat.triangles = {{0, 1, 2}};
    EXPECT_THROW(SurfaceSampler{flat}, InputError);
    TriangleMesh bad_index = two_triangles_area_3_to_1();
    bad_index.triangles[1][2] = 6;
    EXPECT_THROW(SurfaceSampler{bad_index}, InputError);
}

TEST(SurfaceSampler, ZeroAreaTrianglesAreNeverPicked) {
    TriangleMesh m = two_triangles_area_3_to_1();
    m.vertices.push_back({9, 9, 9});
    m.triangles.insert(m.triangles.begin(), {6, 6, 6});  // first and last: degenerate
    m.triangles.push_back({6, 6, 6});
    const SurfaceSampler s(m);
    const SurfaceSamplerView v = s.view();
    for (int i = 0; i < 10000; ++i) {
        const uint32_t t = sample_triangle_index(v, (float)i / 10000.f);
        ASSERT_TRUE(t == 1 || t == 2) << t;
    }
    EXPECT_EQ(sample_triangle_index(v, 0.f), 1u);
    EXPECT_EQ(sample_triangle_index(v, 1.f - 1.f / 16777216.f), 2u);
}

TEST(SurfaceSampler, UniformByArea) {
    const SurfaceSampler s(two_triangles_area_3_to_1());
    const SurfaceSamplerView v = s.view();
    const uint64_t key = sdf_random_key(3, 0, SdfRandomPurpose::Training);
    const int n = 100000;
    int on_large = 0;
    double sum_x_small = 0, sum_y_small = 0, sum_x_large = 0, sum_y_large = 0;
    for (int i = 0; i < n; ++i) {
        const Vec3 p = sdf_near_surface_point(v, key, i, 0.f);
        ASSERT_EQ(p.z, 0.f);
        if (p.x >= 5.f) {
            ++on_large;
            ASSERT_LE((p.x - 5.f) / 3.f + p.y, 1.f + 1e-6f);  // inside triangle 1
            sum_x_large += p.x;
            sum_y_large += p.y;
        } else {
            ASSERT_LE(p.x + p.y, 1.f + 1e-6f);  // inside triangle 0
            ASSERT_GE(std::min(p.x, p.y), 0.f);
            sum_x_small += p.x;
            sum_y_small += p.y;
        }
    }
    // 3:1 by area: 3/4 of the points, standard error 0.0014.
    EXPECT_NEAR((double)on_large / n, 0.75, 0.006);
    // Uniform inside each triangle: the mean is the centroid (standard errors < 0.005).
    const int on_small = n - on_large;
    EXPECT_NEAR(sum_x_small / on_small, 1.0 / 3, 0.006);
    EXPECT_NEAR(sum_y_small / on_small, 1.0 / 3, 0.006);
    EXPECT_NEAR(sum_x_large / on_large, 6.0, 0.01);
    EXPECT_NEAR(sum_y_large / on_large, 1.0 / 3, 0.006);
}

// ---- Training batches ----------------------------------------------------------

TEST(SdfSampling, EachKindIsWhereItSaysAndFractionsHold) {
    const SurfaceSampler surface(test::make_box_mesh(kBoxLo, kBoxHi));
    const SdfSamplingSettings settings;  // instant-ngp's split
    const uint32_t batch = 1u << 16;
    Matrix<float> points;
    generate_sdf_positions(surface, settings, 11, 5, batch, points);
    ASSERT_EQ(points.rows(), batch);
    ASSERT_EQ(points.cols(), 3);
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    uint32_t counts[4] = {0, 0, 0, 0}, far_uniform = 0;
    double max_surface_distance = 0, sum_small_sq = 0;
    Vec3 uniform_mean{0, 0, 0};
    for (uint32_t i = 0; i < batch; ++i) {
        const Vec3 p = row(points, i);
        const float d = test::box_sdf(p, kBoxLo, kBoxHi);
        const SdfSampleKind kind = sdf_sample_kind(layout, i);
        ++counts[(int)kind];
        if (kind == SdfSampleKind::Uniform) {
            for (int a = 0; a < 3; ++a) {
                ASSERT_GE(p[a], 0.f);
                ASSERT_LT(p[a], 1.f);
            }
            uniform_mean += p;
            far_uniform += std::fabs(d) > 0.05f;
        } else if (kind == SdfSampleKind::Surface) {
            max_surface_distance = std::max(max_surface_distance, (double)std::fabs(d));
        } else {
            sum_small_sq += (double)d * d;
        }
    }
    EXPECT_EQ(counts[0], batch / 8);
    EXPECT_EQ(counts[1], batch / 2);
    EXPECT_EQ(counts[2], 3 * batch / 8);
    EXPECT_EQ(counts[3], 0u);
    EXPECT_LT(max_surface_distance, 1e-6);
    // Uniform points are not drawn to the surface: most are farther than 0.05
    // (the shell |d| <= 0.05 around this box is ~10% of the cube).
    EXPECT_GT((double)far_uniform / counts[0], 0.8);
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(uniform_mean[a] / counts[0], 0.5, 0.01);
    // Offset points are near the surface: off a flat face the signed distance
    // is the offset's normal component, so its rms is the offset's sigma.
    EXPECT_NEAR(std::sqrt(sum_small_sq / counts[2]) / settings.surface_offset_small, 1.0, 0.05);
}

TEST(SdfSampling, OffsetsHaveTheirStandardDeviations) {
    const SurfaceSampler surface(test::make_sphere_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 16, 32));
    SdfSamplingSettings settings;
    settings.uniform_fraction = 0.f;
    settings.surface_fraction = 0.f;
    settings.large_offset_fraction = 0.5f;
    const uint32_t batch = 200000;  // 1e5 small, 1e5 large
    Matrix<float> points;
    generate_sdf_positions(surface, settings, 21, 9, batch, points);
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    ASSERT_EQ(layout.n_small, 100000u);
    ASSERT_EQ(layout.n_large, 100000u);
    const uint64_t key = sdf_random_key(21, 9, SdfRandomPurpose::Training);
    const Moments small = offset_moments(surface, points, key, 0, layout.n_small, settings.surface_offset_small);
    const Moments large =
        offset_moments(surface, points, key, layout.n_small, layout.n_large, settings.surface_offset_large);
    for (int a = 0; a < 3; ++a) {
        // Standard error of a standard deviation from 1e5 samples: 0.22%.
        EXPECT_NEAR(small.stddev[a] / settings.surface_offset_small, 1.0, 0.02) << a;
        EXPECT_NEAR(large.stddev[a] / settings.surface_offset_large, 1.0, 0.02) << a;
        EXPECT_NEAR(small.mean[a] / settings.surface_offset_small, 0.0, 0.02) << a;
        EXPECT_NEAR(large.mean[a] / settings.surface_offset_large, 0.0, 0.02) << a;
    }
    // Gaussian, not just the right width: 68.3% within one sigma.
    EXPECT_NEAR(small.within_one_sigma, 0.6827, 0.01);
    EXPECT_NEAR(large.within_one_sigma, 0.6827, 0.01);
}

TEST(SdfSampling, SameSeedAndStepSamePointsOtherwiseDifferent) {
    const SurfaceSampler surface(test::make_box_mesh(kBoxLo, kBoxHi));
    const SdfSamplingSettings settings;
    Matrix<float> a, b, c, d;
    generate_sdf_positions(surface, settings, 42, 100, 4096, a);
    generate_sdf_positions(surface, settings, 42, 100, 4096, b);
    generate_sdf_positions(surface, settings, 42, 101, 4096, c);
    generate_sdf_positions(surface, settings, 43, 100, 4096, d);
    EXPECT_TRUE(a == b);
    auto n_equal_rows = [&](const Matrix<float>& x, const Matrix<float>& y) {
        int n = 0;
        for (int64_t i = 0; i < x.rows(); ++i) n += x.row(i) == y.row(i);
        return n;
    };
    EXPECT_EQ(n_equal_rows(a, c), 0);
    EXPECT_EQ(n_equal_rows(a, d), 0);
}

TEST(SdfSampling, TargetsAreTheTruthAtThePoints) {
    const Vec3 center{0.5f, 0.5f, 0.5f};
    const float radius = 0.3f;
    const SurfaceSampler surface(test::make_sphere_mesh(center, radius, 16, 32));
    SdfBatchFn truth = [&](const Matrix<float>& p, Matrix<float>& values) {
        values.resize(p.rows(), 1);
        for (int64_t i = 0; i < p.rows(); ++i) values(i, 0) = test::sphere_sdf(row(p, i), center, radius);
    };
    Matrix<float> points, targets;
    generate_sdf_batch(surface, SdfSamplingSettings{}, 5, 0, 1000, truth, points, targets);
    ASSERT_EQ(targets.rows(), 1000);
    ASSERT_EQ(targets.cols(), 1);
    Matrix<float> only_points;
    generate_sdf_positions(surface, SdfSamplingSettings{}, 5, 0, 1000, only_points);
    EXPECT_TRUE(points == only_points);
    // Exact surface points get 0 without asking the truth; every other point its truth.
    const SdfSampleLayout layout = sdf_sample_layout(SdfSamplingSettings{}, 1000);
    ASSERT_GT(layout.n_surface, 0u);
    for (int64_t i = 0; i < 1000; ++i) {
        const bool on_surface = i >= layout.n_uniform && i < layout.n_uniform + layout.n_surface;
        if (on_surface) EXPECT_EQ(targets(i, 0), 0.f) << i;
        else EXPECT_EQ(targets(i, 0), test::sphere_sdf(row(points, i), center, radius)) << i;
    }
}

TEST(SdfSampling, SurfacePointsNeedAMesh) {
    const SurfaceSampler none;
    Matrix<float> points;
    EXPECT_THROW(generate_sdf_positions(none, SdfSamplingSettings{}, 0, 0, 64, points), InputError);
    SdfSamplingSettings uniform_only;
    uniform_only.uniform_fraction = 1.f;
    uniform_only.surface_fraction = 0.f;
    generate_sdf_positions(none, uniform_only, 0, 0, 64, points);
    EXPECT_EQ(points.rows(), 64);
}
