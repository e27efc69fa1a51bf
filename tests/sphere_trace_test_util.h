// Known answers for the sphere-tracing tests (CPU and GPU): an analytic
// sphere as a batched field, the exact ray/sphere intersection, and the
// camera the tests look through.
#pragma once

#include "geometry/sdf_field.h"
#include "mesh_test_util.h"
#include "render/camera.h"

#include <cmath>
#include <limits>

namespace fusedngp::test {

const Vec3 kSphereCenter{0.5f, 0.5f, 0.5f};
constexpr float kSphereRadius = 0.3f;

// Pixels whose ray passes within this distance of the sphere's silhouette
// (|distance of the ray's line to the centre - radius| below it) are left out
// of exact comparisons: a sampled march may legitimately decide either way.
constexpr float kSilhouetteMargin = 0.01f;

// A point-wise function Vec3 -> float as a batched host field.
template <typename Sdf>
SdfBatchFn analytic_field(Sdf sdf) {
    return [sdf](const Matrix<float>& points, Matrix<float>& values) {
        values.resize(points.rows(), 1);
        for (Eigen::Index i = 0; i < points.rows(); ++i) values(i, 0) = sdf({points(i, 0), points(i, 1), points(i, 2)});
    };
}

inline float test_sphere_sdf(Vec3 p) { return sphere_sdf(p, kSphereCenter, kSphereRadius); }

struct SphereHit {
    bool hit = false;
    float t = std::numeric_limits<float>::infinity();  // distance along the ray
    Vec3 normal;
    float line_distance = 0;  // of the ray's line from the centre
};

// Exact intersection in double precision (the ray starts outside the sphere).
inline SphereHit analytic_sphere_hit(const Ray& r, Vec3 center = kSphereCenter, float radius = kSphereRadius) {
    const double ox = r.origin.x - center.x, oy = r.origin.y - center.y, oz = r.origin.z - center.z;
    const double dx = r.direction.x, dy = r.direction.y, dz = r.direction.z;
    const double b = ox * dx + oy * dy + oz * dz;
    const double oo = ox * ox + oy * oy + oz * oz;
    SphereHit h;
    h.line_distance = (float)std::sqrt(std::fmax(oo - b * b, 0.0));
    const double disc = b * b - (oo - (double)radius * radius);
    if (disc < 0 || -b - std::sqrt(disc) < 0) return h;
    h.hit = true;
    const double t = -b - std::sqrt(disc);
    h.t = (float)t;
    h.normal = normalize(Vec3{(float)(ox + t * dx), (float)(oy + t * dy), (float)(oz + t * dz)});
    return h;
}

inline bool near_silhouette(const SphereHit& h, float radius = kSphereRadius, float margin = kSilhouetteMargin) {
    return std::fabs(h.line_distance - radius) < margin;
}

// Looking at the sphere from above and to the side (from outside the cube);
// the sphere fills about 70 % of the image height.
inline Camera sphere_test_camera(uint32_t width, uint32_t height) {
    return Camera{orbit_pose(30, 20, 1.25f), intrinsics_from_fov(width, height, 40.f)};
}

// How far along the ray a march that stops at |sdf| < hit_epsilon may lie
// before the surface: the gap to the surface is below hit_epsilon, and along
// a ray meeting the surface at cos_incidence = |dot(direction, normal)| that
// is hit_epsilon / cos_incidence (to first order; 10 % slack for the
// curvature). For head-on pixels (cos >= 0.5) and the default 5e-4 this is
// within 1e-3.
inline float depth_tolerance(const Ray& r, const SphereHit& h, float hit_epsilon) {
    const float cos_incidence = std::fabs(dot(r.direction, h.normal));
    return 1.1f * hit_epsilon / cos_incidence + 1e-5f;
}

} // namespace fusedngp::test
