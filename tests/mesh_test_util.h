// Analytic shapes as triangle meshes, with their exact signed distances, for
// the geometry tests (ground truth, sampling, rendering, marching cubes).
// Meshes are closed, consistently oriented (counter-clockwise from outside)
// and share vertices.
#pragma once

#include "geometry/sdf_field.h"
#include "geometry/triangle_mesh.h"

#include <algorithm>
#include <cmath>

namespace fusedngp::test {

// A UV sphere: `rings` latitude bands, `segments` longitude steps.
inline TriangleMesh make_sphere_mesh(Vec3 center, float radius, uint32_t rings = 48, uint32_t segments = 96) {
    TriangleMesh m;
    const float pi = 3.14159265358979f;
    m.vertices.push_back(center + Vec3{0, radius, 0});  // north pole
    for (uint32_t r = 1; r < rings; ++r) {
        float theta = pi * (float)r / (float)rings;
        for (uint32_t s = 0; s < segments; ++s) {
            float phi = 2 * pi * (float)s / (float)segments;
            m.vertices.push_back(center + Vec3{std::sin(theta) * std::cos(phi), std::cos(theta),
                                               -std::sin(theta) * std::sin(phi)} * radius);
        }
    }
    m.vertices.push_back(center + Vec3{0, -radius, 0});  // south pole
    const uint32_t south = (uint32_t)m.vertices.size() - 1;
    auto ring_vertex = [&](uint32_t r, uint32_t s) { return 1 + (r - 1) * segments + s % segments; };
    for (uint32_t s = 0; s < segments; ++s) m.triangles.push_back({0, ring_vertex(1, s), ring_vertex(1, s + 1)});
    for (uint32_t r = 1; r + 1 < rings; ++r) {
        for (uint32_t s = 0; s < segments; ++s) {
            uint32_t a = ring_vertex(r, s), b = ring_vertex(r + 1, s), c = ring_vertex(r + 1, s + 1), d = ring_vertex(r, s + 1);
            m.triangles.push_back({a, b, c});
            m.triangles.push_back({a, c, d});
        }
    }
    for (uint32_t s = 0; s < segments; ++s) m.triangles.push_back({south, ring_vertex(rings - 1, s + 1), ring_vertex(rings - 1, s)});
    return m;
}

// An axis-aligned box, 12 triangles.
inline TriangleMesh make_box_mesh(Vec3 lo, Vec3 hi) {
    TriangleMesh m;
    for (int i = 0; i < 8; ++i) m.vertices.push_back({i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z});
    // Each face as a quad (a, b, c, d) counter-clockwise seen from outside.
    const uint32_t faces[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
    for (const auto& f : faces) {
        m.triangles.push_back({f[0], f[1], f[2]});
        m.triangles.push_back({f[0], f[2], f[3]});
    }
    return m;
}

// A torus around the y axis: major radius R, minor radius r.
inline TriangleMesh make_torus_mesh(Vec3 center, float major, float minor, uint32_t n_major = 96, uint32_t n_minor = 48) {
    TriangleMesh m;
    const float pi = 3.14159265358979f;
    for (uint32_t i = 0; i < n_major; ++i) {
        float u = 2 * pi * (float)i / (float)n_major;
        for (uint32_t j = 0; j < n_minor; ++j) {
            float v = 2 * pi * (float)j / (float)n_minor;
            float w = major + minor * std::cos(v);
            m.vertices.push_back(center + Vec3{w * std::cos(u), minor * std::sin(v), w * std::sin(u)});
        }
    }
    auto idx = [&](uint32_t i, uint32_t j) { return (i % n_major) * n_minor + j % n_minor; };
    for (uint32_t i = 0; i < n_major; ++i) {
        for (uint32_t j = 0; j < n_minor; ++j) {
            uint32_t a = idx(i, j), b = idx(i + 1, j), c = idx(i + 1, j + 1), d = idx(i, j + 1);
            m.triangles.push_back({a, c, b});
            m.triangles.push_back({a, d, c});
        }
    }
    return m;
}

// Both meshes as one (b's vertex indices shifted past a's); where they
// overlap, the result is self-intersecting.
inline TriangleMesh concatenate_meshes(const TriangleMesh& a, const TriangleMesh& b) {
    TriangleMesh m = a;
    const uint32_t offset = (uint32_t)a.vertices.size();
    m.vertices.insert(m.vertices.end(), b.vertices.begin(), b.vertices.end());
    for (auto t : b.triangles) m.triangles.push_back({t[0] + offset, t[1] + offset, t[2] + offset});
    return m;
}

// Exact signed distances (negative inside) of the analytic shapes.
inline float sphere_sdf(Vec3 p, Vec3 center, float radius) { return length(p - center) - radius; }

// The sphere's distances as a batched field (what the SDF metrics and the
// isosurface extraction sample).
inline SdfBatchFn sphere_field(Vec3 center, float radius) {
    return [=](const Matrix<float>& points, Matrix<float>& values) {
        values.resize(points.rows(), 1);
        for (Eigen::Index i = 0; i < points.rows(); ++i)
            values(i, 0) = sphere_sdf({points(i, 0), points(i, 1), points(i, 2)}, center, radius);
    };
}

inline float box_sdf(Vec3 p, Vec3 lo, Vec3 hi) {
    Vec3 c = (lo + hi) * 0.5f, h = (hi - lo) * 0.5f;
    Vec3 q{std::fabs(p.x - c.x) - h.x, std::fabs(p.y - c.y) - h.y, std::fabs(p.z - c.z) - h.z};
    Vec3 outside = max(q, Vec3{0, 0, 0});
    return length(outside) + std::min(std::max(q.x, std::max(q.y, q.z)), 0.f);
}

inline float torus_sdf(Vec3 p, Vec3 center, float major, float minor) {
    Vec3 d = p - center;
    float ring = std::sqrt(d.x * d.x + d.z * d.z) - major;
    return std::sqrt(ring * ring + d.y * d.y) - minor;
}

} // namespace fusedngp::test
