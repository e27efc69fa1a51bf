#include "geometry/mesh_checks.h"

#include "core/errors.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

namespace fusedngp {
namespace {

// Exact position as bits; adding +0 turns -0 into +0 so both weld together.
std::array<uint32_t, 3> position_key(Vec3 p) {
    std::array<uint32_t, 3> key;
    for (int i = 0; i < 3; ++i) {
        float c = p[i] + 0.f;
        std::memcpy(&key[i], &c, sizeof(float));
    }
    return key;
}

bool repeats_index(const std::array<uint32_t, 3>& t) { return t[0] == t[1] || t[1] == t[2] || t[0] == t[2]; }

uint64_t edge_key(uint32_t a, uint32_t b) {
    if (a > b) std::swap(a, b);
    return (uint64_t)a << 32 | b;
}

struct EdgeCounts {
    size_t boundary = 0, non_manifold = 0;
};

// Counts how many triangles use each undirected edge, by sorting the edge list.
EdgeCounts count_edges(const TriangleMesh& mesh, const std::vector<uint32_t>& classes) {
    std::vector<uint64_t> edges;
    edges.reserve(mesh.triangles.size() * 3);
    for (const auto& t : mesh.triangles) {
        std::array<uint32_t, 3> w{classes[t[0]], classes[t[1]], classes[t[2]]};
        if (repeats_index(w)) continue;  // collapsed: its "edges" would be loops or doubled
        for (int i = 0; i < 3; ++i) edges.push_back(edge_key(w[i], w[(i + 1) % 3]));
    }
    std::sort(edges.begin(), edges.end());
    EdgeCounts counts;
    for (size_t i = 0; i < edges.size();) {
        size_t j = i;
        while (j < edges.size() && edges[j] == edges[i]) ++j;
        if (j - i == 1) ++counts.boundary;
        if (j - i > 2) ++counts.non_manifold;
        i = j;
    }
    return counts;
}

bool degenerate_in(const TriangleMesh& mesh, const std::array<uint32_t, 3>& t) {
    return repeats_index(t) || is_degenerate_triangle(mesh.vertices[t[0]], mesh.vertices[t[1]], mesh.vertices[t[2]]);
}

std::string format_point(Vec3 p) {
    char buffer[96];
    std::snprintf(buffer, sizeof(buffer), "[%.4g %.4g %.4g]", p.x, p.y, p.z);
    return buffer;
}

} // namespace

std::string MeshReport::describe() const {
    std::string s = std::to_string(n_triangles) + " triangles, " + std::to_string(n_vertices) + " vertices";
    if (bounds.empty()) return s + ", empty";
    s += ", bounds " + format_point(bounds.lo) + "-" + format_point(bounds.hi);
    if (watertight()) {
        s += ", watertight";
    } else {
        s += ", " + std::to_string(boundary_edges) + " boundary edges, " + std::to_string(non_manifold_edges) +
             " non-manifold edges";
    }
    if (degenerate_triangles > 0) s += ", " + std::to_string(degenerate_triangles) + " degenerate triangles";
    return s;
}

bool is_degenerate_triangle(Vec3 a, Vec3 b, Vec3 c) {
    // In double, so the test does not depend on float rounding of the cross product.
    auto sub = [](Vec3 p, Vec3 q) { return std::array<double, 3>{(double)p.x - q.x, (double)p.y - q.y, (double)p.z - q.z}; };
    auto len2 = [](const std::array<double, 3>& v) { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; };
    const auto e1 = sub(b, a), e2 = sub(c, a), e3 = sub(c, b);
    const std::array<double, 3> n{e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    const double longest2 = std::max({len2(e1), len2(e2), len2(e3)});
    return std::sqrt(len2(n)) <= 1e-7 * longest2;
}

MeshReport analyse_mesh(const TriangleMesh& mesh) {
    MeshReport report;
    report.n_vertices = mesh.vertices.size();
    report.n_triangles = mesh.triangles.size();
    report.bounds = mesh.bounds();
    for (const auto& t : mesh.triangles) report.degenerate_triangles += degenerate_in(mesh, t) ? 1 : 0;
    const EdgeCounts edges = count_edges(mesh, position_classes(mesh.vertices));
    report.boundary_edges = edges.boundary;
    report.non_manifold_edges = edges.non_manifold;
    return report;
}

size_t remove_degenerate_triangles(TriangleMesh& mesh) {
    const size_t before = mesh.triangles.size();
    auto& tris = mesh.triangles;
    tris.erase(std::remove_if(tris.begin(), tris.end(), [&](const auto& t) { return degenerate_in(mesh, t); }), tris.end());
    return before - tris.size();
}

std::vector<uint32_t> position_classes(const std::vector<Vec3>& vertices) {
    // Sorting by (position, index) puts equal positions together with their
    // first occurrence leading the run.
    std::vector<std::array<uint32_t, 3>> keys(vertices.size());
    for (size_t i = 0; i < vertices.size(); ++i) keys[i] = position_key(vertices[i]);
    std::vector<uint32_t> order(vertices.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] != keys[b] ? keys[a] < keys[b] : a < b; });
    std::vector<uint32_t> classes(vertices.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j < order.size() && keys[order[j]] == keys[order[i]]) classes[order[j++]] = order[i];
        i = j;
    }
    return classes;
}

TriangleMesh weld_vertices(const TriangleMesh& mesh) {
    const std::vector<uint32_t> classes = position_classes(mesh.vertices);
    std::vector<uint32_t> new_index(mesh.vertices.size());
    TriangleMesh welded;
    for (size_t i = 0; i < mesh.vertices.size(); ++i) {
        if (classes[i] != i) {
            new_index[i] = new_index[classes[i]];  // its class leader comes earlier
            continue;
        }
        new_index[i] = (uint32_t)welded.vertices.size();
        welded.vertices.push_back(mesh.vertices[i]);
        if (!mesh.normals.empty()) welded.normals.push_back(mesh.normals[i]);
        if (!mesh.colors.empty()) welded.colors.push_back(mesh.colors[i]);
    }
    welded.triangles.reserve(mesh.triangles.size());
    for (const auto& t : mesh.triangles) welded.triangles.push_back({new_index[t[0]], new_index[t[1]], new_index[t[2]]});
    return welded;
}

UnitCubeTransform fit_unit_cube(const Box3& bounds, float fill) {
    if (bounds.empty()) throw InputError("cannot fit an empty bounding box into the unit cube (no vertices)");
    const Vec3 extent = bounds.extent();
    const float largest = std::max({extent.x, extent.y, extent.z});
    if (!(largest > 0) || !std::isfinite(largest)) {
        throw InputError("cannot fit the mesh into the unit cube: its bounding box " + format_point(bounds.lo) + "-" +
                         format_point(bounds.hi) + " has no size");
    }
    if (!(fill > 0) || !std::isfinite(fill)) throw InputError("unit cube fill must be positive, got " + std::to_string(fill));
    UnitCubeTransform t;
    t.center = bounds.center();
    t.scale = fill / largest;
    return t;
}

void apply_transform(TriangleMesh& mesh, const UnitCubeTransform& transform, bool to_unit) {
    for (Vec3& v : mesh.vertices) v = to_unit ? transform.to_unit(v) : transform.from_unit(v);
}

} // namespace fusedngp
