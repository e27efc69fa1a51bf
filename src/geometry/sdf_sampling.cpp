#include "geometry/sdf_sampling.h"

#include "core/errors.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

namespace {

void require_fraction(float value, const std::string& path, const char* key) {
    if (!(value >= 0.f && value <= 1.f)) {
        throw ConfigError(join_path(path, key), "must be in [0, 1], got " + std::to_string(value));
    }
}

void require_length(float value, const std::string& path, const char* key) {
    if (!(value >= 0.f) || !std::isfinite(value)) {
        throw ConfigError(join_path(path, key), "must be a length >= 0, got " + std::to_string(value));
    }
}

// Rounded to nearest, so that fractions of a power-of-two batch land exactly.
uint32_t boundary(double cumulative_fraction, uint32_t batch) {
    const double b = std::floor(cumulative_fraction * batch + 0.5);
    return b >= batch ? batch : (uint32_t)b;
}

} // namespace

void SdfSamplingSettings::validate(const std::string& path) const {
    require_fraction(uniform_fraction, path, "uniform_fraction");
    require_fraction(surface_fraction, path, "surface_fraction");
    require_fraction(large_offset_fraction, path, "large_offset_fraction");
    require_length(surface_offset_small, path, "surface_offset_small");
    require_length(surface_offset_large, path, "surface_offset_large");
    if (target_sign != "auto" && target_sign != "ray_vote" && target_sign != "pseudo_normal") {
        throw ConfigError(join_path(path, "target_sign"), "must be \"auto\", \"ray_vote\" or \"pseudo_normal\", got \"" +
                                                             target_sign + "\"");
    }
    // A little slack: 0.125 + 0.5 + 0.375 style splits written as decimals.
    const double sum = (double)uniform_fraction + surface_fraction + large_offset_fraction;
    if (sum > 1.0 + 1e-6) {
        throw ConfigError(path, "uniform_fraction + surface_fraction + large_offset_fraction is " +
                                    std::to_string(sum) + ", more than the whole batch");
    }
}

const std::vector<std::string>& SdfSamplingSettings::json_keys() {
    static const std::vector<std::string> keys = {"uniform_fraction", "surface_fraction", "large_offset_fraction",
                                                  "surface_offset_small", "surface_offset_large", "target_sign"};
    return keys;
}

SdfSamplingSettings SdfSamplingSettings::from_json(const json& j, const std::string& path) {
    require_object(j, path);
    SdfSamplingSettings s;
    s.uniform_fraction = (float)get_number(j, path, "uniform_fraction", s.uniform_fraction);
    s.surface_fraction = (float)get_number(j, path, "surface_fraction", s.surface_fraction);
    s.large_offset_fraction = (float)get_number(j, path, "large_offset_fraction", s.large_offset_fraction);
    s.surface_offset_small = (float)get_number(j, path, "surface_offset_small", s.surface_offset_small);
    s.surface_offset_large = (float)get_number(j, path, "surface_offset_large", s.surface_offset_large);
    s.target_sign = get_string(j, path, "target_sign", s.target_sign);
    s.validate(path);
    return s;
}

json SdfSamplingSettings::to_json() const {
    return json{{"uniform_fraction", uniform_fraction},
                {"surface_fraction", surface_fraction},
                {"large_offset_fraction", large_offset_fraction},
                {"surface_offset_small", surface_offset_small},
                {"surface_offset_large", surface_offset_large},
                {"target_sign", target_sign}};
}

SdfSampleLayout sdf_sample_layout(const SdfSamplingSettings& settings, uint32_t batch) {
    settings.validate();
    const double u = settings.uniform_fraction, s = settings.surface_fraction;
    const uint32_t end_uniform = boundary(u, batch);
    const uint32_t end_surface = std::max(end_uniform, boundary(u + s, batch));
    const uint32_t end_small = std::max(end_surface, boundary(1.0 - settings.large_offset_fraction, batch));
    SdfSampleLayout layout;
    layout.n_uniform = end_uniform;
    layout.n_surface = end_surface - end_uniform;
    layout.n_small = end_small - end_surface;
    layout.n_large = batch - end_small;
    layout.sigma_small = settings.surface_offset_small;
    layout.sigma_large = settings.surface_offset_large;
    return layout;
}

void generate_sdf_positions(const SurfaceSampler& surface, const SdfSamplingSettings& settings, uint64_t seed,
                            uint64_t step, uint32_t batch, Matrix<float>& points) {
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    if (layout.n_uniform < batch && surface.empty()) {
        throw InputError("SDF sampling: surface samples were asked for but the mesh has no triangles");
    }
    if (points.rows() != batch || points.cols() != 3) points.resize(batch, 3);
    const SurfaceSamplerView view = surface.view();
    const uint64_t key = sdf_random_key(seed, step, SdfRandomPurpose::Training);
#pragma omp parallel for schedule(static) if (batch > 65536)
    for (int64_t i = 0; i < (int64_t)batch; ++i) {
        const Vec3 p = sdf_training_point(view, layout, key, (uint32_t)i);
        points(i, 0) = p.x;
        points(i, 1) = p.y;
        points(i, 2) = p.z;
    }
}

void generate_sdf_batch(const SurfaceSampler& surface, const SdfSamplingSettings& settings, uint64_t seed,
                        uint64_t step, uint32_t batch, const SdfBatchFn& truth, Matrix<float>& points,
                        Matrix<float>& targets) {
    generate_sdf_positions(surface, settings, seed, step, batch, points);
    if (targets.rows() != batch || targets.cols() != 1) targets.resize(batch, 1);
    // Points exactly on the surface have distance 0 (their sign does not
    // matter): only the others need the truth, half the batch by default.
    const SdfSampleLayout layout = sdf_sample_layout(settings, batch);
    const Eigen::Index n_uniform = layout.n_uniform, n_surface = layout.n_surface;
    const Eigen::Index n_rest = (Eigen::Index)batch - n_uniform - n_surface;
    targets.middleRows(n_uniform, n_surface).setZero();
    Matrix<float> part_points, part_values;
    auto truth_of_rows = [&](Eigen::Index first, Eigen::Index count) {
        if (count == 0) return;
        part_points = points.middleRows(first, count);
        truth(part_points, part_values);
        targets.middleRows(first, count) = part_values;
    };
    truth_of_rows(0, n_uniform);
    truth_of_rows(n_uniform + n_surface, n_rest);
}

} // namespace fusedngp
