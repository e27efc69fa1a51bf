// SurfaceSampler: points uniformly distributed by area on a triangle mesh.
// The host builds a flat triangle list and the area CDF once; the sampling
// itself is a pair of host/device functions on a plain view of pointers, so
// the CPU loops and the CUDA kernels (gpu/geometry/sdf_sampling_device.h)
// pick the same triangle and the same point for the same three uniforms.
#pragma once

#include "geometry/triangle_mesh.h"
#include "geometry/vec3.h"

#include <cstdint>
#include <vector>

namespace fusedngp {

// Raw pointers into a SurfaceSampler's arrays (host or device memory).
// corners: 3 per triangle (a, b, c); cdf[t] = area of triangles [0, t] over
// the total area, so cdf[n_triangles - 1] == 1 exactly.
struct SurfaceSamplerView {
    const Vec3* corners = nullptr;
    const float* cdf = nullptr;
    uint32_t n_triangles = 0;
};

// The first triangle t with u < cdf[t], for u in [0, 1): triangle t is picked
// with probability area(t) / total area. Triangles of zero area (cdf equal to
// the previous entry) are never picked.
FUSEDNGP_HD uint32_t sample_triangle_index(const SurfaceSamplerView& view, float u) {
    uint32_t lo = 0, hi = view.n_triangles - 1;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (u < view.cdf[mid]) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// Uniform by area inside triangle t: with s = sqrt(u1) the barycentrics
// (1 - s, s (1 - u2), s u2) have the uniform density over the triangle.
FUSEDNGP_HD Vec3 point_in_triangle(const SurfaceSamplerView& view, uint32_t t, float u1, float u2) {
    const Vec3 a = view.corners[3 * t], b = view.corners[3 * t + 1], c = view.corners[3 * t + 2];
    const float s = sqrtf(u1);
    return a * (1.f - s) + b * (s * (1.f - u2)) + c * (s * u2);
}

// Unit geometric normal of triangle t (counter-clockwise seen from outside).
FUSEDNGP_HD Vec3 triangle_normal(const SurfaceSamplerView& view, uint32_t t) {
    const Vec3 a = view.corners[3 * t], b = view.corners[3 * t + 1], c = view.corners[3 * t + 2];
    return normalize(cross(b - a, c - a));
}

// u0 picks the triangle, (u1, u2) the point in it; all in [0, 1).
FUSEDNGP_HD Vec3 sample_surface_point(const SurfaceSamplerView& view, float u0, float u1, float u2) {
    return point_in_triangle(view, sample_triangle_index(view, u0), u1, u2);
}

class SurfaceSampler {
public:
    SurfaceSampler() = default;  // no triangles: only uniform-cube sampling works
    // Throws InputError when the mesh has no triangle of positive area or an
    // index points past the vertices.
    explicit SurfaceSampler(const TriangleMesh& mesh);

    SurfaceSamplerView view() const { return {corners_.data(), cdf_.data(), (uint32_t)cdf_.size()}; }
    uint32_t n_triangles() const { return (uint32_t)cdf_.size(); }
    bool empty() const { return cdf_.empty(); }
    double total_area() const { return total_area_; }
    const std::vector<Vec3>& corners() const { return corners_; }
    const std::vector<float>& cdf() const { return cdf_; }

private:
    std::vector<Vec3> corners_;
    std::vector<float> cdf_;
    double total_area_ = 0;
};

} // namespace fusedngp
