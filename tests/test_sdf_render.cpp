// The CPU sphere tracer against analytic answers: hit mask and depth of a
// sphere against the exact ray/sphere intersection, normals against the
// analytic normal, shading and AO behaviour, the march rule's edge cases
// (overshooting fields, solids cut by the cube, NaN fields, max_steps) and
// the batching contract (one field call per march step).
#include "render/sdf_render.h"
#include "render/sphere_trace_math.h"

#include "io_test_util.h"
#include "sphere_trace_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace fusedngp;
using namespace fusedngp::test;

namespace {

constexpr uint32_t kWidth = 64, kHeight = 48;

Vec3 pixel_rgb(const Image& image, uint32_t i) {
    return {image.pixels[3 * i], image.pixels[3 * i + 1], image.pixels[3 * i + 2]};
}

bool is_background(Vec3 rgb, Vec3 background) {
    return rgb.x == background.x && rgb.y == background.y && rgb.z == background.z;
}

Ray pixel_ray(const Camera& c, uint32_t i) {
    return camera_ray(c, (float)(i % c.intrinsics.width) + 0.5f, (float)(i / c.intrinsics.width) + 0.5f);
}

// Counts the calls and the points a field is asked for.
struct CountingField {
    SdfBatchFn inner;
    uint64_t calls = 0, points = 0;
    SdfBatchFn fn() {
        return [this](const Matrix<float>& p, Matrix<float>& v) {
            ++calls;
            points += (uint64_t)p.rows();
            inner(p, v);
        };
    }
};

// The L-shaped union of a floor slab and a wall: a concave edge along z at x = y = 0.4.
float l_shape_sdf(Vec3 p) {
    return std::min(box_sdf(p, {0.2f, 0.2f, 0.2f}, {0.8f, 0.4f, 0.8f}), box_sdf(p, {0.2f, 0.2f, 0.2f}, {0.4f, 0.8f, 0.8f}));
}

} // namespace

TEST(SdfRender, HitMaskAndDepthMatchAnalyticSphere) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SphereTraceSettings settings;
    SdfRenderStats stats;
    const SdfTrace trace = trace_sdf(camera, analytic_field(test_sphere_sdf), settings, &stats);
    ASSERT_EQ(trace.depth.size(), (size_t)kWidth * kHeight);
    uint32_t checked_hits = 0, head_on = 0, checked_misses = 0, hits = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        const bool hit = std::isfinite(trace.depth[i]);
        hits += hit ? 1 : 0;
        const Ray r = pixel_ray(camera, i);
        const SphereHit expected = analytic_sphere_hit(r);
        if (near_silhouette(expected)) continue;
        ASSERT_EQ(hit, expected.hit) << "pixel " << i % kWidth << "," << i / kWidth;
        if (!hit) {
            ++checked_misses;
            continue;
        }
        ++checked_hits;
        // The march stops short of the surface, never past it, for an exact SDF.
        EXPECT_LE(trace.depth[i], expected.t + 1e-5f);
        EXPECT_NEAR(trace.depth[i], expected.t, depth_tolerance(r, expected, settings.hit_epsilon));
        if (std::fabs(dot(r.direction, expected.normal)) >= 0.5f) {
            ++head_on;
            EXPECT_NEAR(trace.depth[i], expected.t, 1e-3f) << "pixel " << i % kWidth << "," << i / kWidth;
        }
    }
    EXPECT_GT(checked_hits, 500u);
    EXPECT_GT(head_on, 300u);
    EXPECT_GT(checked_misses, 1000u);
    EXPECT_EQ(stats.hit_pixels, hits);
}

TEST(SdfRender, NormalsMatchAnalyticNormal) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SphereTraceSettings settings;
    const Image image = render_sdf(camera, analytic_field(test_sphere_sdf), SdfRenderMode::Normals, settings);
    EXPECT_EQ(image.width, (int)kWidth);
    EXPECT_EQ(image.height, (int)kHeight);
    EXPECT_EQ(image.channels, 3);
    EXPECT_EQ(image.color_space, ColorSpace::Srgb);
    uint32_t checked = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        const SphereHit expected = analytic_sphere_hit(pixel_ray(camera, i));
        if (near_silhouette(expected)) continue;
        const Vec3 rgb = pixel_rgb(image, i);
        if (!expected.hit) {
            EXPECT_TRUE(is_background(rgb, settings.background));
            continue;
        }
        const Vec3 want = expected.normal * 0.5f + Vec3{0.5f, 0.5f, 0.5f};
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(rgb[c], want[c], 2e-2f) << "pixel " << i << " channel " << c;
        ++checked;
    }
    EXPECT_GT(checked, 500u);
}

TEST(SdfRender, DepthModeMapsDistanceToGreyNearBright) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SdfBatchFn field = analytic_field(test_sphere_sdf);
    const Image image = render_sdf(camera, field, SdfRenderMode::Depth);
    const SdfTrace trace = trace_sdf(camera, field);
    float near_t = 0, far_t = 0;
    unit_cube_depth_range(camera.pose.position, near_t, far_t);
    float nearest = 1e9f, farthest = 0, grey_nearest = 0, grey_farthest = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        if (!std::isfinite(trace.depth[i])) continue;
        const Vec3 rgb = pixel_rgb(image, i);
        EXPECT_EQ(rgb.x, rgb.y);
        EXPECT_EQ(rgb.x, rgb.z);
        EXPECT_NEAR(rgb.x, (far_t - trace.depth[i]) / (far_t - near_t), 1e-6f);
        if (trace.depth[i] < nearest) nearest = trace.depth[i], grey_nearest = rgb.x;
        if (trace.depth[i] > farthest) farthest = trace.depth[i], grey_farthest = rgb.x;
    }
    EXPECT_GT(grey_nearest, grey_farthest + 0.1f) << "near is bright";
    EXPECT_LE(near_t, nearest);
    EXPECT_GE(far_t, farthest);
}

TEST(SdfRender, CostModeShowsStepsOnHits) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SdfBatchFn field = analytic_field(test_sphere_sdf);
    const SphereTraceSettings settings;
    const Image image = render_sdf(camera, field, SdfRenderMode::Cost, settings);
    const SdfTrace trace = trace_sdf(camera, field, settings);
    uint32_t hits = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        const Vec3 rgb = pixel_rgb(image, i);
        if (!std::isfinite(trace.depth[i])) {
            EXPECT_TRUE(is_background(rgb, settings.background));
            continue;
        }
        ++hits;
        EXPECT_GE(trace.steps[i], 1u);
        const Vec3 want = cost_ramp((float)trace.steps[i] / (float)settings.max_steps);
        for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(rgb[c], want[c]);
        EXPECT_LT(rgb.x, rgb.z) << "an exact SDF converges in few steps: the cheap (blue) end";
    }
    EXPECT_GT(hits, 500u);
    EXPECT_EQ(cost_ramp(0).z, 1.f);
    EXPECT_EQ(cost_ramp(1).x, 1.f);
}

TEST(SdfRender, ShadeIsBrighterFacingTheLight) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    SphereTraceSettings settings;
    settings.light_direction = camera.pose.right * 3.f;  // from the side: half the disc lit; normalised when used
    const Image image = render_sdf(camera, analytic_field(test_sphere_sdf), SdfRenderMode::Shade, settings);
    const Vec3 light = normalize(settings.light_direction);
    float lit_min = 2, dark_max = -1;
    uint32_t lit = 0, dark = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        const SphereHit expected = analytic_sphere_hit(pixel_ray(camera, i));
        if (!expected.hit || near_silhouette(expected)) continue;
        const Vec3 rgb = pixel_rgb(image, i);
        const float brightness = rgb.x + rgb.y + rgb.z;
        const float facing = dot(expected.normal, light);
        if (facing > 0.7f) lit_min = std::min(lit_min, brightness), ++lit;
        if (facing < 0.f) dark_max = std::max(dark_max, brightness), ++dark;
        // Monotone in the facing angle: the exact Lambert value of the analytic normal.
        const Vec3 want = lambert_colour(expected.normal, settings.light_direction);
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(rgb[c], want[c], 2e-2f);
    }
    ASSERT_GT(lit, 20u);
    ASSERT_GT(dark, 20u);
    EXPECT_GT(lit_min, dark_max + 0.5f);
}

TEST(SdfRender, AoIsLowerInAConcaveCornerThanOnAnOpenFace) {
    const Camera camera{look_at({1.4f, 1.3f, 0.5f}, {0.55f, 0.4f, 0.5f}), intrinsics_from_fov(96, 72, 40.f)};
    const SdfBatchFn field = analytic_field(l_shape_sdf);
    const Image image = render_sdf(camera, field, SdfRenderMode::Ao);
    const SdfTrace trace = trace_sdf(camera, field);
    float corner_max = -1, open_min = 2;
    uint32_t corner = 0, open = 0;
    for (uint32_t i = 0; i < (uint32_t)image.pixel_count(); ++i) {
        const Vec3 rgb = pixel_rgb(image, i);
        EXPECT_GE(rgb.x, 0.f);
        EXPECT_LE(rgb.x, 1.f);
        if (!std::isfinite(trace.depth[i])) continue;
        const Ray r = pixel_ray(camera, i);
        const Vec3 p = r.origin + r.direction * trace.depth[i];
        const bool on_floor_top = std::fabs(p.y - 0.4f) < 2e-3f && std::fabs(p.z - 0.5f) < 0.2f;
        if (on_floor_top && p.x > 0.405f && p.x < 0.45f) corner_max = std::max(corner_max, rgb.x), ++corner;
        if (on_floor_top && p.x > 0.6f && p.x < 0.75f) open_min = std::min(open_min, rgb.x), ++open;
    }
    ASSERT_GT(corner, 3u);
    ASSERT_GT(open, 20u);
    EXPECT_GT(open_min, 0.97f) << "an open flat face is unoccluded";
    EXPECT_LT(corner_max, open_min - 0.1f);
}

TEST(SdfRender, OvershootingFieldStepsBackToTheSurface) {
    // 1.5x the distance: each 0.9 step overshoots by 35 %, the signed rule steps back.
    // |sdf| < eps now means a gap below eps / 1.5, on either side of the surface.
    const auto steep = [](Vec3 p) { return 1.5f * test_sphere_sdf(p); };
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SphereTraceSettings settings;
    SdfRenderStats stats;
    const SdfTrace trace = trace_sdf(camera, analytic_field(steep), settings, &stats);
    uint32_t checked = 0, beyond = 0;
    for (uint32_t i = 0; i < kWidth * kHeight; ++i) {
        const Ray r = pixel_ray(camera, i);
        const SphereHit expected = analytic_sphere_hit(r);
        if (!expected.hit || near_silhouette(expected)) continue;
        ASSERT_TRUE(std::isfinite(trace.depth[i]));
        EXPECT_NEAR(trace.depth[i], expected.t, depth_tolerance(r, expected, settings.hit_epsilon / 1.5f));
        beyond += trace.depth[i] > expected.t ? 1 : 0;
        ++checked;
    }
    EXPECT_GT(checked, 500u);
    EXPECT_GT(beyond, 50u) << "some rays end inside after stepping back";
}

TEST(SdfRender, SolidCutByTheCubeIsHitAtTheEntry) {
    // A sphere enclosing the whole cube: every ray entering the cube starts inside.
    const auto big = [](Vec3 p) { return sphere_sdf(p, {0.5f, 0.5f, 0.5f}, 1.f); };
    const Camera camera = sphere_test_camera(32, 24);
    SdfRenderStats stats;
    const SdfTrace trace = trace_sdf(camera, analytic_field(big), {}, &stats);
    uint32_t entered = 0;
    for (uint32_t i = 0; i < 32 * 24; ++i) {
        const Ray r = pixel_ray(camera, i);
        float t_enter = 0, t_exit = 0;
        if (!unit_cube_span(r.origin, r.direction, t_enter, t_exit)) {
            EXPECT_FALSE(std::isfinite(trace.depth[i]));
            EXPECT_EQ(trace.steps[i], 0u);
            continue;
        }
        ++entered;
        EXPECT_EQ(trace.depth[i], t_enter);
        EXPECT_EQ(trace.steps[i], 1u);
    }
    EXPECT_GT(entered, 100u);
    EXPECT_EQ(stats.hit_pixels, entered);
}

TEST(SdfRender, MaxStepsIsRespected) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    CountingField counting{analytic_field(test_sphere_sdf)};
    SphereTraceSettings settings;
    settings.max_steps = 3;
    SdfRenderStats stats, full_stats;
    const SdfTrace trace = trace_sdf(camera, counting.fn(), settings, &stats);
    uint64_t total = 0;
    for (uint32_t s : trace.steps) {
        EXPECT_LE(s, 3u);
        total += s;
    }
    EXPECT_EQ(stats.total_steps, total);
    EXPECT_LE(counting.calls, 3u);
    trace_sdf(camera, analytic_field(test_sphere_sdf), {}, &full_stats);
    EXPECT_LT(stats.hit_pixels, full_stats.hit_pixels / 2) << "3 steps are too few to converge on most rays";
    settings.max_steps = 0;
    const Image none = render_sdf(camera, analytic_field(test_sphere_sdf), SdfRenderMode::Shade, settings, &stats);
    EXPECT_EQ(stats.field_evaluations, 0u);
    for (float v : none.pixels) EXPECT_EQ(v, 1.f);
}

TEST(SdfRender, OneBatchedFieldCallPerStep) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const SphereTraceSettings settings;
    const uint64_t probes[] = {6, 6, 0, 6 + settings.ao_samples, 0};  // per hit, by mode
    const uint32_t extra_calls[] = {1, 1, 0, 2, 0};
    CountingField march_only{analytic_field(test_sphere_sdf)};
    SdfRenderStats march_stats;
    const SdfTrace trace = trace_sdf(camera, march_only.fn(), settings, &march_stats);
    const uint32_t longest = *std::max_element(trace.steps.begin(), trace.steps.end());
    EXPECT_EQ(march_only.calls, longest) << "the wavefront needs one call per step of the longest ray";
    EXPECT_EQ(march_stats.field_evaluations, march_only.points);
    EXPECT_EQ(march_stats.total_steps, march_only.points);
    for (uint32_t m = 0; m < 5; ++m) {
        CountingField counting{analytic_field(test_sphere_sdf)};
        SdfRenderStats stats;
        render_sdf(camera, counting.fn(), (SdfRenderMode)m, settings, &stats);
        EXPECT_EQ(counting.calls, longest + extra_calls[m]) << to_string((SdfRenderMode)m);
        EXPECT_EQ(stats.field_evaluations, counting.points);
        EXPECT_EQ(stats.total_steps, march_stats.total_steps);
        EXPECT_EQ(stats.hit_pixels, march_stats.hit_pixels);
        EXPECT_EQ(stats.field_evaluations, stats.total_steps + probes[m] * stats.hit_pixels);
    }
}

TEST(SdfRender, NanFieldGivesBackground) {
    const Camera camera = sphere_test_camera(kWidth, kHeight);
    const auto nan_field = [](Vec3) { return std::numeric_limits<float>::quiet_NaN(); };
    SphereTraceSettings settings;
    settings.background = {0.1f, 0.2f, 0.3f};
    for (uint32_t m = 0; m < 5; ++m) {
        SdfRenderStats stats;
        const Image image = render_sdf(camera, analytic_field(nan_field), (SdfRenderMode)m, settings, &stats);
        EXPECT_EQ(stats.hit_pixels, 0u);
        for (uint32_t i = 0; i < kWidth * kHeight; ++i) EXPECT_TRUE(is_background(pixel_rgb(image, i), settings.background));
    }
}

TEST(SdfRender, RaysMissingTheCubeNeverCallTheField) {
    Camera camera = sphere_test_camera(kWidth, kHeight);
    camera.pose = look_at(camera.pose.position, camera.pose.position * 2.f);  // looking away
    CountingField counting{analytic_field(test_sphere_sdf)};
    const Image image = render_sdf(camera, counting.fn(), SdfRenderMode::Shade);
    EXPECT_EQ(counting.calls, 0u);
    for (float v : image.pixels) EXPECT_EQ(v, 1.f);
}

TEST(SdfRender, UnitCubeSpan) {
    float t0 = 0, t1 = 0;
    ASSERT_TRUE(unit_cube_span({0.5f, 0.5f, 3}, {0, 0, -1}, t0, t1));
    EXPECT_FLOAT_EQ(t0, 2.f);
    EXPECT_FLOAT_EQ(t1, 3.f);
    ASSERT_TRUE(unit_cube_span({0.5f, 0.5f, 0.5f}, {0, 0, -1}, t0, t1));  // from inside: starts at 0
    EXPECT_FLOAT_EQ(t0, 0.f);
    EXPECT_FLOAT_EQ(t1, 0.5f);
    EXPECT_FALSE(unit_cube_span({1.5f, 0.5f, 3}, {0, 0, -1}, t0, t1));  // parallel, outside the x slab
    EXPECT_FALSE(unit_cube_span({0.5f, 0.5f, 3}, {0, 0, 1}, t0, t1));   // behind the camera
    EXPECT_FALSE(unit_cube_span({0.5f, 3, 3}, normalize(Vec3{0, 1, -1}), t0, t1));
}

TEST(SdfRender, ModeNames) {
    for (uint32_t m = 0; m < 5; ++m) EXPECT_EQ((uint32_t)parse_sdf_render_mode(to_string((SdfRenderMode)m)), m);
    EXPECT_EQ(parse_sdf_render_mode("Normals"), SdfRenderMode::Normals);
    expect_input_error([] { parse_sdf_render_mode("phong"); }, {"\"phong\"", "shade, normals, depth, ao, cost"});
}

TEST(SdfRender, BadImageSizeIsAnInputError) {
    Camera camera = sphere_test_camera(kWidth, kHeight);
    camera.intrinsics.width = 0;
    expect_input_error([&] { render_sdf(camera, analytic_field(test_sphere_sdf), SdfRenderMode::Shade); }, {"0x48"});
}
