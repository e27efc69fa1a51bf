// SDF quality metrics against analytic answers (geometry/sdf_metrics.h):
// IoU of spheres, the band error of shifted spheres, Chamfer distance and
// normal consistency of boxes, with a brute-force closest-point function
// (every triangle, through bvh_queries.h's closest point on one triangle,
// which tests/test_bvh.cpp checks on its own).
#include "core/errors.h"
#include "geometry/bvh_queries.h"
#include "geometry/sdf_metrics.h"

#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

using namespace fusedngp;

namespace {

const Vec3 kMetricsCenter{0.5f, 0.5f, 0.5f};


// Every triangle for every point; the normal is the closest triangle's.
ClosestFn brute_force_closest(const TriangleMesh& mesh) {
    return [&mesh](const std::vector<Vec3>& points, std::vector<float>& distances, std::vector<Vec3>& normals) {
        distances.assign(points.size(), 0.f);
        normals.assign(points.size(), Vec3{});
        for (size_t i = 0; i < points.size(); ++i) {
            float best = std::numeric_limits<float>::max();
            for (const auto& t : mesh.triangles) {
                const Vec3 a = mesh.vertices[t[0]], b = mesh.vertices[t[1]], c = mesh.vertices[t[2]];
                const float d = length(points[i] - closest_point_on_triangle(points[i], a, b, c));
                if (d < best) {
                    best = d;
                    normals[i] = cross(b - a, c - a);  // unnormalised on purpose: the metric normalises
                }
            }
            distances[i] = best;
        }
    };
}

TriangleMesh scaled(TriangleMesh mesh, Vec3 center, float s) {
    for (Vec3& v : mesh.vertices) v = center + (v - center) * s;
    return mesh;
}

} // namespace

// ---- IoU -------------------------------------------------------------------------

TEST(SdfIou, ConcentricSpheresGiveTheVolumeRatio) {
    const uint64_t n = 1u << 20;
    const IouResult r = sdf_iou(test::sphere_field(kMetricsCenter, 0.2f), test::sphere_field(kMetricsCenter, 0.3f), n, 1);
    EXPECT_EQ(r.n_points, n);
    // (r1 / r2)^3; the standard error on ~113k points inside either is 0.0014.
    EXPECT_NEAR(r.iou, std::pow(0.2 / 0.3, 3), 0.006);
    EXPECT_NEAR((double)r.inside_either / n, 4.0 / 3.0 * M_PI * 0.027, 0.0015);
    EXPECT_DOUBLE_EQ(r.iou, (double)r.inside_both / r.inside_either);
}

TEST(SdfIou, FieldWithItselfDisjointAndEmpty) {
    const SdfBatchFn sphere = test::sphere_field(kMetricsCenter, 0.25f);
    const IouResult self = sdf_iou(sphere, sphere, 100000, 2);
    EXPECT_EQ(self.iou, 1.0);
    EXPECT_EQ(self.inside_both, self.inside_either);
    EXPECT_GT(self.inside_both, 0u);

    const IouResult disjoint =
        sdf_iou(test::sphere_field({0.2f, 0.5f, 0.5f}, 0.15f), test::sphere_field({0.8f, 0.5f, 0.5f}, 0.15f), 100000, 2);
    EXPECT_EQ(disjoint.iou, 0.0);
    EXPECT_EQ(disjoint.inside_both, 0u);
    EXPECT_GT(disjoint.inside_either, 0u);

    const SdfBatchFn outside_everywhere = test::sphere_field({5, 5, 5}, 0.1f);
    const IouResult empty = sdf_iou(outside_everywhere, outside_everywhere, 1000, 2);
    EXPECT_EQ(empty.inside_either, 0u);
    EXPECT_EQ(empty.iou, 1.0);
}

TEST(SdfIou, ChunkedSeededAndBoundedCalls) {
    // n spans two chunks and a remainder; the fields see at most a chunk at a time.
    const uint64_t n = 2 * kSdfMetricChunk + 777;
    int64_t largest_call = 0;
    uint64_t points_seen = 0;
    const SdfBatchFn inner = test::sphere_field(kMetricsCenter, 0.2f);
    SdfBatchFn counted = [&](const Matrix<float>& p, Matrix<float>& v) {
        largest_call = std::max<int64_t>(largest_call, p.rows());
        points_seen += p.rows();
        inner(p, v);
    };
    const SdfBatchFn outer = test::sphere_field(kMetricsCenter, 0.3f);
    const IouResult a = sdf_iou(counted, outer, n, 9);
    EXPECT_EQ(largest_call, (int64_t)kSdfMetricChunk);
    EXPECT_EQ(points_seen, n);
    const IouResult b = sdf_iou(inner, outer, n, 9);
    EXPECT_EQ(a.inside_both, b.inside_both);
    EXPECT_EQ(a.inside_either, b.inside_either);
    const IouResult c = sdf_iou(inner, outer, n, 10);
    EXPECT_NE(a.inside_either, c.inside_either);  // another seed, other points
}

// ---- Band error ------------------------------------------------------------------

TEST(SdfBandError, ZeroForItselfAndTheShiftForAGrownSphere) {
    const float radius = 0.3f, grow = 0.004f;
    const SurfaceSampler surface(test::make_sphere_mesh(kMetricsCenter, radius, 16, 32));
    const SdfBatchFn truth = test::sphere_field(kMetricsCenter, radius);
    const BandErrorResult self = sdf_band_error(surface, truth, truth, 50000, 3);
    EXPECT_EQ(self.mean_abs_error, 0.0);
    EXPECT_EQ(self.n_points, 50000u);
    // |(|p - c| - r - e) - (|p - c| - r)| = e at every point, up to float rounding.
    const BandErrorResult grown = sdf_band_error(surface, test::sphere_field(kMetricsCenter, radius + grow), truth, 50000, 3);
    EXPECT_NEAR(grown.mean_abs_error, grow, 1e-6);
    EXPECT_THROW(sdf_band_error(SurfaceSampler{}, truth, truth, 10, 3), InputError);
}

TEST(SdfBandError, PointsLieInTheBand) {
    // A field that records its points' distance to the sphere: rms = band.
    const float radius = 0.3f;
    const SurfaceSampler surface(test::make_sphere_mesh(kMetricsCenter, radius, 48, 96));
    double sum_sq = 0;
    uint64_t n_seen = 0;
    SdfBatchFn recorder = [&](const Matrix<float>& p, Matrix<float>& v) {
        v.setZero(p.rows(), 1);
        for (int64_t i = 0; i < p.rows(); ++i) {
            const double d = test::sphere_sdf({p(i, 0), p(i, 1), p(i, 2)}, kMetricsCenter, radius);
            sum_sq += d * d;
        }
        n_seen += p.rows();
    };
    const SdfBatchFn zero = [](const Matrix<float>& p, Matrix<float>& v) { v.setZero(p.rows(), 1); };
    sdf_band_error(surface, recorder, zero, 100000, 4, 1.f / 128);
    ASSERT_EQ(n_seen, 100000u);
    // Normal component of N(0, band^2) per axis (plus the UV sphere's 1e-4 chord error).
    EXPECT_NEAR(std::sqrt(sum_sq / 100000) * 128, 1.0, 0.03);
}

// ---- Chamfer and normal consistency ----------------------------------------------

TEST(ChamferDistance, MeshWithItselfIsZeroAndConsistent) {
    const TriangleMesh sphere = test::make_sphere_mesh(kMetricsCenter, 0.3f, 8, 16);
    const ChamferResult r = chamfer_distance(sphere, brute_force_closest(sphere), sphere, brute_force_closest(sphere), 2000, 5);
    EXPECT_EQ(r.n_samples, 2000u);
    EXPECT_LT(r.chamfer, 1e-6);
    EXPECT_LT(r.chamfer_squared, 1e-12);
    EXPECT_NEAR(r.normal_consistency, 1.0, 1e-3);
}

TEST(ChamferDistance, BoxAndItsScaledCopy) {
    // A = [-1, 1]^3, B = A scaled by 1.1. Every point of A is 0.1 from B;
    // a point (1.1, y, z) of B is sqrt(0.1^2 + (|y|-1)_+^2 + (|z|-1)_+^2) from A.
    const Vec3 center{0, 0, 0};
    const TriangleMesh a = test::make_box_mesh({-1, -1, -1}, {1, 1, 1});
    const TriangleMesh b = scaled(a, center, 1.1f);
    double expected_b_to_a = 0, expected_b_to_a_squared = 0;
    const int cells = 1000;
    for (int i = 0; i < cells; ++i) {
        for (int j = 0; j < cells; ++j) {
            const double y = -1.1 + 2.2 * (i + 0.5) / cells, z = -1.1 + 2.2 * (j + 0.5) / cells;
            const double ey = std::max(std::fabs(y) - 1.0, 0.0), ez = std::max(std::fabs(z) - 1.0, 0.0);
            expected_b_to_a += std::sqrt(0.01 + ey * ey + ez * ez);
            expected_b_to_a_squared += 0.01 + ey * ey + ez * ez;
        }
    }
    expected_b_to_a /= (double)cells * cells;
    expected_b_to_a_squared /= (double)cells * cells;

    const ChamferResult r = chamfer_distance(a, brute_force_closest(a), b, brute_force_closest(b), 20000, 6);
    EXPECT_NEAR(r.mean_a_to_b, 0.1, 1e-5);
    // Per-sample spread ~0.015: standard error 1e-4.
    EXPECT_NEAR(r.mean_b_to_a, expected_b_to_a, 5e-4);
    EXPECT_NEAR(r.chamfer, 0.1 + expected_b_to_a, 5e-4);
    EXPECT_NEAR(r.chamfer_squared, 0.01 + expected_b_to_a_squared, 2e-4);
    // A's faces see B's parallel faces; of B's points, those with |y|, |z| <= 1
    // ((2 / 2.2)^2 = 82.6% of each face) do too.
    EXPECT_NEAR(r.normal_consistency_a_to_b, 1.0, 1e-6);
    EXPECT_GT(r.normal_consistency_b_to_a, 0.826 - 0.01);
    EXPECT_NEAR(r.normal_consistency, 0.5 * (r.normal_consistency_a_to_b + r.normal_consistency_b_to_a), 1e-12);
}

TEST(ChamferDistance, BadArgumentsThrow) {
    const TriangleMesh box = test::make_box_mesh({0, 0, 0}, {1, 1, 1});
    const ClosestFn closest = brute_force_closest(box);
    EXPECT_THROW(chamfer_distance(box, closest, box, closest, 0, 1), std::invalid_argument);
    const ClosestFn short_answer = [](const std::vector<Vec3>&, std::vector<float>& d, std::vector<Vec3>& n) {
        d.assign(1, 0.f);
        n.assign(1, Vec3{0, 0, 1});
    };
    EXPECT_THROW(chamfer_distance(box, short_answer, box, short_answer, 10, 1), std::invalid_argument);
    EXPECT_THROW(chamfer_distance(TriangleMesh{}, closest, box, closest, 10, 1), InputError);
}
