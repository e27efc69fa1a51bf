// The per-ray math of the wavefront sphere tracer, written once for the CPU
// renderer (render/sdf_render.cpp) and its CUDA twin (kernels/render/
// sdf_render.cu): ray start, the march update, the normal and AO probes and
// the shading of every mode.
//
// March rule. A ray starts where it enters the unit cube [0,1]^3 (slab test;
// t = 0 when the camera is inside) and, with s = sdf(origin + t * direction):
//   * s not finite (NaN, inf)          -> missed: there is no surface to trust;
//   * |s| < hit_epsilon                -> hit at t;
//   * s <= -hit_epsilon at the entry   -> hit at the entry: the solid is cut
//                                         open by the cube face, show the cut;
//   * otherwise                        t = max(t_enter, t + step_scale * s).
// A positive s steps forward; a negative one (the last step overshot, which a
// learned field that is not an exact distance can do) steps back by the same
// rule, so the ray closes in on the surface from either side. A ray that
// leaves the cube (t > t_exit) or has used max_steps evaluations is missed.
// Every step is one field evaluation, counted in TraceRay::steps.
#pragma once

#include "geometry/vec3.h"
#include "render/camera.h"
#include "render/sdf_render_settings.h"

#include <cstdint>

namespace fusedngp {

enum TraceStatus : uint32_t { kRayMarching = 0, kRayHit = 1, kRayMissed = 2 };

struct TraceRay {
    Vec3 origin;
    Vec3 direction;       // unit length, so t is a distance
    float t = 0;          // current distance along the ray (the hit distance once hit)
    float t_enter = 0;    // entry into the unit cube
    float t_exit = 0;     // exit from the unit cube
    uint32_t steps = 0;   // field evaluations so far
    uint32_t status = kRayMissed;
};

constexpr float kFloatBig = 3.0e38f;

// [t_enter, t_exit] of the ray inside [0,1]^3 with t >= 0; false when it misses.
FUSEDNGP_HD bool unit_cube_span(Vec3 origin, Vec3 direction, float& t_enter, float& t_exit) {
    return ray_box_interval(origin, safe_inverse(direction), Box3{{0, 0, 0}, {1, 1, 1}}, t_enter, t_exit);
}

// The ray through the centre of pixel (px, py), placed at its cube entry.
FUSEDNGP_HD TraceRay start_trace_ray(const Camera& camera, uint32_t px, uint32_t py, const SphereTraceSettings& s) {
    const Ray r = camera_ray(camera, (float)px + 0.5f, (float)py + 0.5f);
    TraceRay ray;
    ray.origin = r.origin;
    ray.direction = r.direction;
    const bool enters = unit_cube_span(r.origin, r.direction, ray.t_enter, ray.t_exit);
    ray.t = ray.t_enter;
    ray.status = enters && s.max_steps > 0 ? kRayMarching : kRayMissed;
    return ray;
}

FUSEDNGP_HD Vec3 trace_point(const TraceRay& ray) { return ray.origin + ray.direction * ray.t; }

// One march step with the field's value at trace_point(ray) (rule above).
FUSEDNGP_HD void advance_trace_ray(TraceRay& ray, float sdf, const SphereTraceSettings& s) {
    ray.steps += 1;
    if (!(fabsf(sdf) <= kFloatBig)) {
        ray.status = kRayMissed;
        return;
    }
    if (fabsf(sdf) < s.hit_epsilon || (sdf < 0 && ray.t <= ray.t_enter)) {
        ray.status = kRayHit;
        return;
    }
    ray.t = fmaxf(ray.t_enter, ray.t + s.step_scale * sdf);
    if (ray.t > ray.t_exit || ray.steps >= s.max_steps) ray.status = kRayMissed;
}

// ---- normals: central differences ----
// Probe k in [0, 6) samples p + sign * normal_epsilon * e_axis with axis = k / 2
// and sign + for even k. Accumulating sign * value over the six probes (in
// order k = 0..5, on both CPU and GPU) gives 2 * eps * grad sdf(p) + O(eps^3),
// so normalize() of it is the unit normal to O(eps^2).

FUSEDNGP_HD int normal_probe_axis(int probe) { return probe / 2; }
FUSEDNGP_HD float normal_probe_sign(int probe) { return probe % 2 == 0 ? 1.f : -1.f; }

FUSEDNGP_HD Vec3 normal_probe_point(Vec3 p, int probe, float normal_epsilon) {
    p[normal_probe_axis(probe)] += normal_probe_sign(probe) * normal_epsilon;
    return p;
}

FUSEDNGP_HD void accumulate_gradient(Vec3& gradient, int probe, float value) {
    gradient[normal_probe_axis(probe)] += normal_probe_sign(probe) * value;
}

// ---- ambient occlusion (the classic SDF estimate) ----
// Sample i (0-based) at height h_i = (i + 1) * ao_step along the normal sees
// sdf_i; an open surface has sdf_i = h_i, nearby geometry makes it smaller.
// occlusion = sum_i w_i * clamp((h_i - sdf_i) / h_i, 0, 1) with w_i = 2^-i,
// AO = 1 - occlusion / sum_i w_i: 1 on an open flat face, down to 0 when
// every sample sits on a surface.

FUSEDNGP_HD float ao_height(uint32_t sample, const SphereTraceSettings& s) { return (float)(sample + 1) * s.ao_step; }
FUSEDNGP_HD float ao_weight(uint32_t sample) { return 1.f / (float)(1u << (sample < 30 ? sample : 30)); }

FUSEDNGP_HD Vec3 ao_probe_point(Vec3 p, Vec3 normal, uint32_t sample, const SphereTraceSettings& s) {
    return p + normal * ao_height(sample, s);
}

// NaN values count as open (fmaxf drops the NaN).
FUSEDNGP_HD float ao_term(uint32_t sample, float value, const SphereTraceSettings& s) {
    const float h = ao_height(sample, s);
    return ao_weight(sample) * fminf(fmaxf((h - value) / h, 0.f), 1.f);
}

FUSEDNGP_HD float ao_from_occlusion(float occlusion, const SphereTraceSettings& s) {
    float total = 0;
    for (uint32_t i = 0; i < s.ao_samples; ++i) total += ao_weight(i);
    return total > 0 ? fminf(fmaxf(1.f - occlusion / total, 0.f), 1.f) : 1.f;
}

// ---- shading ----

// Near bright: grey = clamp((far - t) / (far - near), 0, 1), where near and
// far are the camera's distances to the closest point and to the farthest
// corner of the unit cube, so any visible surface maps into [0, 1].
FUSEDNGP_HD void unit_cube_depth_range(Vec3 position, float& near_t, float& far_t) {
    const Vec3 closest = min(max(position, Vec3{0, 0, 0}), Vec3{1, 1, 1});
    near_t = length(position - closest);
    far_t = 0;
    for (int c = 0; c < 8; ++c) {
        const Vec3 corner{(float)(c & 1), (float)((c >> 1) & 1), (float)((c >> 2) & 1)};
        far_t = fmaxf(far_t, length(corner - position));
    }
}

FUSEDNGP_HD float depth_grey(float t, float near_t, float far_t) {
    return fminf(fmaxf((far_t - t) / (far_t - near_t), 0.f), 1.f);
}

FUSEDNGP_HD float linear_to_srgb_hd(float v) {
    v = fminf(fmaxf(v, 0.f), 1.f);
    return v <= 0.0031308f ? v * 12.92f : 1.055f * powf(v, 1.f / 2.4f) - 0.055f;
}

// Lambert on a clay base colour with a little ambient, in linear light,
// encoded to sRGB.
FUSEDNGP_HD Vec3 lambert_colour(Vec3 normal, Vec3 light_direction) {
    const Vec3 base{0.80f, 0.72f, 0.62f};
    const float ambient = 0.08f;
    const float diffuse = fmaxf(dot(normal, normalize(light_direction)), 0.f);
    const Vec3 linear = base * (ambient + (1.f - ambient) * diffuse);
    return {linear_to_srgb_hd(linear.x), linear_to_srgb_hd(linear.y), linear_to_srgb_hd(linear.z)};
}

// v in [0, 1]: blue -> green -> red, piecewise linear.
FUSEDNGP_HD Vec3 cost_ramp(float v) {
    v = fminf(fmaxf(v, 0.f), 1.f);
    if (v < 0.5f) return Vec3{0, 2 * v, 1 - 2 * v};
    return Vec3{2 * v - 1, 2 - 2 * v, 0};
}

// The pixel's sRGB colour. `gradient` and `occlusion` are the accumulated
// probes (zero when the mode needs none). Misses show the background in
// every mode (their cost is in the stats).
FUSEDNGP_HD Vec3 shade_pixel(SdfRenderMode mode, const TraceRay& ray, Vec3 gradient, float occlusion,
                             const SphereTraceSettings& s, float near_t, float far_t) {
    if (ray.status != kRayHit) return s.background;
    const Vec3 normal = normalize(gradient);
    switch (mode) {
    case SdfRenderMode::Shade: return lambert_colour(normal, s.light_direction);
    case SdfRenderMode::Normals: return normal * 0.5f + Vec3{0.5f, 0.5f, 0.5f};
    case SdfRenderMode::Depth: {
        const float g = depth_grey(ray.t, near_t, far_t);
        return {g, g, g};
    }
    case SdfRenderMode::Ao: {
        const float g = ao_from_occlusion(occlusion, s);
        return {g, g, g};
    }
    case SdfRenderMode::Cost: return cost_ramp((float)ray.steps / (float)s.max_steps);
    default: return s.background;
    }
}

FUSEDNGP_HD bool mode_needs_normals(SdfRenderMode mode) {
    return mode == SdfRenderMode::Shade || mode == SdfRenderMode::Normals || mode == SdfRenderMode::Ao;
}

} // namespace fusedngp
