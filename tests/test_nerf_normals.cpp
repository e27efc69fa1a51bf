// The app's normals view (nerf/nerf_normals.h): on an analytic sphere of
// density, the normals at the exact depth are the sphere's; a flat field
// faces the camera; misses show the background.
#include "nerf/nerf_normals.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fusedngp::nerf {
namespace {

const Vec3 kCentre{0.5f, 0.5f, 0.5f};
constexpr float kRadius = 0.25f;

Camera front_camera() {
    Camera c;
    c.pose.position = {0.5f, 0.55f, 2.f};
    c.intrinsics = {32, 32, 40.f, 40.f, 16.f, 16.f};
    return c;
}

// Distance along each pixel's centre ray to the sphere, 0 for a miss.
Image sphere_depth(const Camera& camera) {
    Image depth;
    depth.width = depth.height = 32;
    depth.channels = 1;
    depth.pixels.assign(32 * 32, 0.f);
    for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
            const Ray r = camera_ray(camera, x + 0.5f, y + 0.5f);
            const Vec3 oc = r.origin - kCentre;
            const float b = dot(oc, r.direction), c = dot(oc, oc) - kRadius * kRadius, disc = b * b - c;
            if (disc > 0) depth.pixels[(size_t)y * 32 + x] = -b - std::sqrt(disc);
        }
    }
    return depth;
}

TEST(NerfNormals, SphereOfDensityShowsItsOwnNormals) {
    const SigmaField sphere = [](const Matrix<float>& p, std::vector<float>& sigma) {
        sigma.resize((size_t)p.rows());
        for (Eigen::Index i = 0; i < p.rows(); ++i) {
            const float r = length(Vec3{p(i, 0), p(i, 1), p(i, 2)} - kCentre);
            sigma[(size_t)i] = std::exp(40.f * (kRadius - r));
        }
    };
    const Camera camera = front_camera();
    const Image depth = sphere_depth(camera);
    const Vec3 bg{0.1f, 0.2f, 0.3f};
    const Image rgb = normals_from_depth(sphere, camera, depth, bg);
    ASSERT_EQ(rgb.channels, 3);
    int hits = 0;
    float worst = 0;
    for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
            const float d = depth.pixels[(size_t)y * 32 + x];
            const Ray r = camera_ray(camera, x + 0.5f, y + 0.5f);
            Vec3 expected = bg;
            if (d > 0) {
                const Vec3 n = normalize(r.origin + r.direction * d - kCentre);
                expected = (n + Vec3{1, 1, 1}) * 0.5f;
                ++hits;
            }
            for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(rgb.at(x, y, c) - expected[c]));
        }
    }
    EXPECT_GT(hits, 100);
    EXPECT_LT(hits, 32 * 32);
    EXPECT_LT(worst, 2e-3f);
}

TEST(NerfNormals, FlatFieldFacesTheCamera) {
    const SigmaField flat = [](const Matrix<float>& p, std::vector<float>& sigma) { sigma.assign((size_t)p.rows(), 5.f); };
    const Camera camera = front_camera();
    Image depth = sphere_depth(camera);
    const Image rgb = normals_from_depth(flat, camera, depth, {0, 0, 0});
    const Ray r = camera_ray(camera, 16.5f, 16.5f);
    ASSERT_GT(depth.pixels[16 * 32 + 16], 0.f);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(rgb.at(16, 16, c), 0.5f * (1.f - r.direction[c]), 1e-6f);
}

} // namespace
} // namespace fusedngp::nerf
