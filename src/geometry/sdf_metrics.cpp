#include "geometry/sdf_metrics.h"

#include "core/errors.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fusedngp {

namespace {

void set_point(Matrix<float>& points, int64_t row, Vec3 p) {
    points(row, 0) = p.x;
    points(row, 1) = p.y;
    points(row, 2) = p.z;
}

// Evaluates both fields on the chunk's points (values sized n x 1 first).
void evaluate_both(const SdfBatchFn& model, const SdfBatchFn& truth, const Matrix<float>& points,
                   Matrix<float>& model_values, Matrix<float>& truth_values) {
    model_values.resize(points.rows(), 1);
    truth_values.resize(points.rows(), 1);
    model(points, model_values);
    truth(points, truth_values);
}

struct DirectionResult {
    double mean = 0, mean_squared = 0, normal_consistency = 0;
};

// Samples `from` and measures them against the other mesh through `closest`.
DirectionResult one_direction(const SurfaceSampler& from, const ClosestFn& closest, uint32_t n, uint64_t key) {
    const SurfaceSamplerView view = from.view();
    std::vector<Vec3> points(n), sample_normals(n), closest_normals;
    std::vector<float> distances;
    for (uint32_t j = 0; j < n; ++j) {
        const uint32_t t = sample_triangle_index(view, sdf_uniform01(key, j, kStreamPosition));
        points[j] = point_in_triangle(view, t, sdf_uniform01(key, j, kStreamPosition + 1),
                                      sdf_uniform01(key, j, kStreamPosition + 2));
        sample_normals[j] = triangle_normal(view, t);
    }
    closest(points, distances, closest_normals);
    if (distances.size() != n || closest_normals.size() != n) {
        throw std::invalid_argument("chamfer_distance: ClosestFn gave " + std::to_string(distances.size()) +
                                    " distances and " + std::to_string(closest_normals.size()) + " normals for " +
                                    std::to_string(n) + " points");
    }
    DirectionResult r;
    for (uint32_t j = 0; j < n; ++j) {
        const double d = distances[j];
        r.mean += d;
        r.mean_squared += d * d;
        r.normal_consistency += std::fabs(dot(sample_normals[j], normalize(closest_normals[j])));
    }
    r.mean /= n;
    r.mean_squared /= n;
    r.normal_consistency /= n;
    return r;
}

} // namespace

IouResult iou_from_counts(uint64_t n_points, uint64_t inside_both, uint64_t inside_either) {
    IouResult r;
    r.n_points = n_points;
    r.inside_both = inside_both;
    r.inside_either = inside_either;
    r.iou = inside_either ? (double)inside_both / (double)inside_either : 1.0;
    return r;
}

IouResult sdf_iou(const SdfBatchFn& model, const SdfBatchFn& truth, uint64_t n_points, uint64_t seed) {
    const uint64_t key = sdf_random_key(seed, 0, SdfRandomPurpose::Iou);
    Matrix<float> points, model_values, truth_values;
    uint64_t both = 0, either = 0;
    for (uint64_t first = 0; first < n_points; first += kSdfMetricChunk) {
        const int64_t m = (int64_t)std::min<uint64_t>(kSdfMetricChunk, n_points - first);
        points.resize(m, 3);
        for (int64_t i = 0; i < m; ++i) set_point(points, i, sdf_cube_point(key, first + i));
        evaluate_both(model, truth, points, model_values, truth_values);
        for (int64_t i = 0; i < m; ++i) {
            const bool in_model = sdf_inside(model_values(i, 0)), in_truth = sdf_inside(truth_values(i, 0));
            both += in_model && in_truth;
            either += in_model || in_truth;
        }
    }
    return iou_from_counts(n_points, both, either);
}

BandErrorResult sdf_band_error(const SurfaceSampler& surface, const SdfBatchFn& model, const SdfBatchFn& truth,
                               uint64_t n_points, uint64_t seed, float band) {
    if (surface.empty()) throw InputError("SDF band error: the mesh has no triangles");
    const SurfaceSamplerView view = surface.view();
    const uint64_t key = sdf_random_key(seed, 0, SdfRandomPurpose::Band);
    Matrix<float> points, model_values, truth_values;
    double sum = 0;
    for (uint64_t first = 0; first < n_points; first += kSdfMetricChunk) {
        const int64_t m = (int64_t)std::min<uint64_t>(kSdfMetricChunk, n_points - first);
        points.resize(m, 3);
        for (int64_t i = 0; i < m; ++i) set_point(points, i, sdf_near_surface_point(view, key, first + i, band));
        evaluate_both(model, truth, points, model_values, truth_values);
        for (int64_t i = 0; i < m; ++i) sum += std::fabs((double)model_values(i, 0) - (double)truth_values(i, 0));
    }
    BandErrorResult r;
    r.n_points = n_points;
    r.mean_abs_error = n_points ? sum / (double)n_points : 0.0;
    return r;
}

ChamferResult chamfer_distance(const TriangleMesh& a, const ClosestFn& closest_on_a, const TriangleMesh& b,
                               const ClosestFn& closest_on_b, uint32_t n_samples, uint64_t seed) {
    if (n_samples == 0) throw std::invalid_argument("chamfer_distance: n_samples must be positive");
    const SurfaceSampler sampler_a(a), sampler_b(b);
    const DirectionResult ab =
        one_direction(sampler_a, closest_on_b, n_samples, sdf_random_key(seed, 0, SdfRandomPurpose::Chamfer));
    const DirectionResult ba =
        one_direction(sampler_b, closest_on_a, n_samples, sdf_random_key(seed, 1, SdfRandomPurpose::Chamfer));
    ChamferResult r;
    r.mean_a_to_b = ab.mean;
    r.mean_b_to_a = ba.mean;
    r.chamfer = ab.mean + ba.mean;
    r.chamfer_squared = ab.mean_squared + ba.mean_squared;
    r.normal_consistency_a_to_b = ab.normal_consistency;
    r.normal_consistency_b_to_a = ba.normal_consistency;
    r.normal_consistency = 0.5 * (ab.normal_consistency + ba.normal_consistency);
    r.n_samples = n_samples;
    return r;
}

} // namespace fusedngp
