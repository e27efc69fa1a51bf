#include "render/sdf_render.h"

#include "core/errors.h"
#include "core/json_fields.h"
#include "render/sphere_trace_math.h"

#include <limits>
#include <stdexcept>

namespace fusedngp {
namespace {

const char* const kModeNames[] = {"shade", "normals", "depth", "ao", "cost"};

void check_size(const Camera& camera) {
    const CameraIntrinsics& k = camera.intrinsics;
    if (k.width == 0 || k.height == 0 || k.width > kMaxRenderSide || k.height > kMaxRenderSide) {
        throw InputError("render: image size " + std::to_string(k.width) + "x" + std::to_string(k.height) +
                         " is not in [1, " + std::to_string(kMaxRenderSide) + "]^2");
    }
}

// One batched field call; checks the callee answered every point.
void evaluate(const SdfBatchFn& field, const Matrix<float>& points, Matrix<float>& values, SdfRenderStats& stats) {
    values.resize(points.rows(), 1);
    field(points, values);
    if (values.size() != points.rows()) {
        throw std::runtime_error("SDF field returned " + std::to_string(values.size()) + " values for " +
                                 std::to_string(points.rows()) + " points");
    }
    stats.field_evaluations += (uint64_t)points.rows();
}

void set_row(Matrix<float>& points, Eigen::Index row, Vec3 p) {
    points(row, 0) = p.x;
    points(row, 1) = p.y;
    points(row, 2) = p.z;
}

// Wavefront march: all rays still marching are evaluated in one batch per step.
std::vector<TraceRay> march(const Camera& camera, const SdfBatchFn& field, const SphereTraceSettings& s,
                            SdfRenderStats& stats) {
    check_size(camera);
    const uint32_t width = camera.intrinsics.width, height = camera.intrinsics.height;
    std::vector<TraceRay> rays((size_t)width * height);
    std::vector<uint32_t> active, still_active;
    for (uint32_t py = 0; py < height; ++py) {
        for (uint32_t px = 0; px < width; ++px) {
            const uint32_t i = py * width + px;
            rays[i] = start_trace_ray(camera, px, py, s);
            if (rays[i].status == kRayMarching) active.push_back(i);
        }
    }
    Matrix<float> points, values;
    while (!active.empty()) {
        points.resize((Eigen::Index)active.size(), 3);
        for (size_t j = 0; j < active.size(); ++j) set_row(points, (Eigen::Index)j, trace_point(rays[active[j]]));
        evaluate(field, points, values, stats);
        stats.total_steps += active.size();
        still_active.clear();
        for (size_t j = 0; j < active.size(); ++j) {
            TraceRay& ray = rays[active[j]];
            advance_trace_ray(ray, values.data()[j], s);
            if (ray.status == kRayMarching) still_active.push_back(active[j]);
        }
        active.swap(still_active);
    }
    return rays;
}

std::vector<uint32_t> hit_pixels(const std::vector<TraceRay>& rays) {
    std::vector<uint32_t> hits;
    for (uint32_t i = 0; i < (uint32_t)rays.size(); ++i) {
        if (rays[i].status == kRayHit) hits.push_back(i);
    }
    return hits;
}

// Six probes per hit in one batch, row probe * n_hits + j, accumulated in probe order.
void probe_gradients(const std::vector<TraceRay>& rays, const std::vector<uint32_t>& hits, const SdfBatchFn& field,
                     const SphereTraceSettings& s, std::vector<Vec3>& gradients, SdfRenderStats& stats) {
    const Eigen::Index n = (Eigen::Index)hits.size();
    Matrix<float> points(6 * n, 3), values;
    for (int probe = 0; probe < 6; ++probe) {
        for (Eigen::Index j = 0; j < n; ++j) {
            set_row(points, probe * n + j, normal_probe_point(trace_point(rays[hits[j]]), probe, s.normal_epsilon));
        }
    }
    evaluate(field, points, values, stats);
    for (int probe = 0; probe < 6; ++probe) {
        for (Eigen::Index j = 0; j < n; ++j) accumulate_gradient(gradients[hits[j]], probe, values.data()[probe * n + j]);
    }
}

// ao_samples probes per hit along the normal in one batch, accumulated in sample order.
void probe_occlusion(const std::vector<TraceRay>& rays, const std::vector<uint32_t>& hits, const SdfBatchFn& field,
                     const SphereTraceSettings& s, const std::vector<Vec3>& gradients, std::vector<float>& occlusion,
                     SdfRenderStats& stats) {
    const Eigen::Index n = (Eigen::Index)hits.size();
    Matrix<float> points((Eigen::Index)s.ao_samples * n, 3), values;
    for (uint32_t sample = 0; sample < s.ao_samples; ++sample) {
        for (Eigen::Index j = 0; j < n; ++j) {
            const uint32_t i = hits[j];
            set_row(points, sample * n + j, ao_probe_point(trace_point(rays[i]), normalize(gradients[i]), sample, s));
        }
    }
    evaluate(field, points, values, stats);
    for (uint32_t sample = 0; sample < s.ao_samples; ++sample) {
        for (Eigen::Index j = 0; j < n; ++j) occlusion[hits[j]] += ao_term(sample, values.data()[sample * n + j], s);
    }
}

} // namespace

SdfRenderMode parse_sdf_render_mode(const std::string& name) {
    for (uint32_t m = 0; m < 5; ++m) {
        if (equals_ignore_case(name, kModeNames[m])) return (SdfRenderMode)m;
    }
    throw InputError("unknown SDF render mode \"" + name + "\" (allowed: shade, normals, depth, ao, cost)");
}

const char* to_string(SdfRenderMode mode) {
    const uint32_t m = (uint32_t)mode;
    return m < 5 ? kModeNames[m] : "unknown";
}

SdfTrace trace_sdf(const Camera& camera, const SdfBatchFn& field, const SphereTraceSettings& settings,
                   SdfRenderStats* stats) {
    SdfRenderStats local;
    const std::vector<TraceRay> rays = march(camera, field, settings, local);
    SdfTrace trace;
    trace.width = camera.intrinsics.width;
    trace.height = camera.intrinsics.height;
    trace.depth.resize(rays.size());
    trace.steps.resize(rays.size());
    for (size_t i = 0; i < rays.size(); ++i) {
        const bool hit = rays[i].status == kRayHit;
        trace.depth[i] = hit ? rays[i].t : std::numeric_limits<float>::infinity();
        trace.steps[i] = rays[i].steps;
        local.hit_pixels += hit ? 1 : 0;
    }
    if (stats) *stats = local;
    return trace;
}

Image render_sdf(const Camera& camera, const SdfBatchFn& field, SdfRenderMode mode,
                 const SphereTraceSettings& settings, SdfRenderStats* stats) {
    SdfRenderStats local;
    const std::vector<TraceRay> rays = march(camera, field, settings, local);
    const std::vector<uint32_t> hits = hit_pixels(rays);
    local.hit_pixels = (uint32_t)hits.size();
    std::vector<Vec3> gradients(rays.size(), Vec3{0, 0, 0});
    std::vector<float> occlusion(rays.size(), 0.f);
    if (mode_needs_normals(mode) && !hits.empty()) probe_gradients(rays, hits, field, settings, gradients, local);
    if (mode == SdfRenderMode::Ao && !hits.empty() && settings.ao_samples > 0) {
        probe_occlusion(rays, hits, field, settings, gradients, occlusion, local);
    }
    float near_t = 0, far_t = 1;
    unit_cube_depth_range(camera.pose.position, near_t, far_t);
    Image image = make_image((int)camera.intrinsics.width, (int)camera.intrinsics.height, 3, ColorSpace::Srgb);
    for (size_t i = 0; i < rays.size(); ++i) {
        const Vec3 rgb = shade_pixel(mode, rays[i], gradients[i], occlusion[i], settings, near_t, far_t);
        for (int c = 0; c < 3; ++c) image.pixels[3 * i + (size_t)c] = rgb[c];
    }
    if (stats) *stats = local;
    return image;
}

} // namespace fusedngp
