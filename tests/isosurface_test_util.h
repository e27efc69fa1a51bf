// Checks on extracted isosurfaces shared by the CPU and GPU marching-cubes
// tests: closedness and orientation, Euler characteristic, signed volume,
// and mesh equality.
#pragma once

#include "geometry/marching_cubes.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace fusedngp::test {

// An SdfBatchFn from a per-point function.
template <typename PointFn>
SdfBatchFn batch_field(PointFn fn) {
    return [fn](const Matrix<float>& points, Matrix<float>& values) {
        values.resize(points.rows(), 1);
        for (Eigen::Index r = 0; r < points.rows(); ++r) values(r, 0) = fn(Vec3{points(r, 0), points(r, 1), points(r, 2)});
    };
}

inline uint64_t edge_key(uint32_t a, uint32_t b) { return (uint64_t)a << 32 | b; }

// Every directed edge appears exactly once and its reverse exactly once: each
// undirected edge is shared by exactly 2 triangles that wind consistently.
inline bool closed_and_consistently_oriented(const TriangleMesh& mesh) {
    std::map<uint64_t, int> directed;
    for (const auto& t : mesh.triangles) {
        for (int c = 0; c < 3; ++c) {
            if (t[c] >= mesh.vertices.size()) return false;
            if (++directed[edge_key(t[c], t[(c + 1) % 3])] > 1) return false;
        }
    }
    for (const auto& [key, count] : directed) {
        if (!directed.count(edge_key((uint32_t)key, (uint32_t)(key >> 32)))) return false;
    }
    return true;
}

// V - E + F, with E from the undirected edges.
inline long euler_characteristic(const TriangleMesh& mesh) {
    std::map<uint64_t, int> edges;
    for (const auto& t : mesh.triangles) {
        for (int c = 0; c < 3; ++c) {
            const uint32_t a = t[c], b = t[(c + 1) % 3];
            edges[edge_key(std::min(a, b), std::max(a, b))]++;
        }
    }
    return (long)mesh.vertices.size() - (long)edges.size() + (long)mesh.triangles.size();
}

inline double signed_volume(const TriangleMesh& mesh) {
    double volume = 0;
    for (const auto& t : mesh.triangles) {
        const Vec3 a = mesh.vertices[t[0]], b = mesh.vertices[t[1]], c = mesh.vertices[t[2]];
        volume += (double)dot(a, cross(b, c)) / 6.0;
    }
    return volume;
}

inline size_t distinct_positions(const TriangleMesh& mesh) {
    std::vector<std::array<float, 3>> p;
    for (const Vec3& v : mesh.vertices) p.push_back({v.x, v.y, v.z});
    std::sort(p.begin(), p.end());
    return (size_t)(std::unique(p.begin(), p.end()) - p.begin());
}

// Same vertex order and triangles; positions and normals within the tolerances.
inline void expect_same_mesh(const TriangleMesh& expected, const TriangleMesh& actual, float position_tolerance, float normal_tolerance) {
    ASSERT_EQ(expected.vertices.size(), actual.vertices.size());
    ASSERT_EQ(expected.triangles.size(), actual.triangles.size());
    ASSERT_EQ(expected.normals.size(), actual.normals.size());
    float worst_position = 0, worst_normal = 0;
    for (size_t v = 0; v < expected.vertices.size(); ++v) {
        worst_position = std::max(worst_position, length(expected.vertices[v] - actual.vertices[v]));
        worst_normal = std::max(worst_normal, length(expected.normals[v] - actual.normals[v]));
    }
    EXPECT_LE(worst_position, position_tolerance);
    EXPECT_LE(worst_normal, normal_tolerance);
    size_t differing_triangles = 0;
    for (size_t t = 0; t < expected.triangles.size(); ++t) differing_triangles += expected.triangles[t] != actual.triangles[t];
    EXPECT_EQ(differing_triangles, 0u);
}

} // namespace fusedngp::test
