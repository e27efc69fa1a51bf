#include "geometry/pseudo_normals.h"

#include "geometry/bvh_queries.h"
#include "geometry/mesh_checks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <vector>

namespace fusedngp {
namespace {

struct Vec3d {
    double x = 0, y = 0, z = 0;
};

Vec3d to_double(Vec3 v) { return {v.x, v.y, v.z}; }
Vec3d operator-(Vec3d a, Vec3d b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec3d operator+(Vec3d a, Vec3d b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
Vec3d operator*(Vec3d a, double s) { return {a.x * s, a.y * s, a.z * s}; }
double dot(Vec3d a, Vec3d b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3d cross(Vec3d a, Vec3d b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }

// Unit vector in float; zero stays zero (a degenerate face contributes nothing).
Vec3 unit(Vec3d v) {
    const double len = std::sqrt(dot(v, v));
    if (!(len > 0)) return Vec3{0, 0, 0};
    return Vec3{(float)(v.x / len), (float)(v.y / len), (float)(v.z / len)};
}

double angle_between(Vec3d u, Vec3d v) {
    const double nu = std::sqrt(dot(u, u)), nv = std::sqrt(dot(v, v));
    if (!(nu > 0 && nv > 0)) return 0;
    return std::acos(std::clamp(dot(u, v) / (nu * nv), -1.0, 1.0));
}

uint64_t directed_edge(uint32_t from, uint32_t to) { return ((uint64_t)from << 32) | to; }
uint64_t undirected_edge(uint32_t a, uint32_t b) { return a < b ? directed_edge(a, b) : directed_edge(b, a); }

bool fail(std::string* why_not, const std::string& why) {
    if (why_not) *why_not = why;
    return false;
}

// Every directed edge once and its reverse once: closed, manifold, and each
// pair of neighbouring faces oriented alike.
bool closed_and_oriented(const std::vector<std::array<uint32_t, 3>>& welded, std::string* why_not) {
    std::vector<uint64_t> edges;
    edges.reserve(3 * welded.size());
    for (const auto& t : welded)
        for (int k = 0; k < 3; ++k) edges.push_back(directed_edge(t[k], t[(k + 1) % 3]));
    std::sort(edges.begin(), edges.end());
    if (std::adjacent_find(edges.begin(), edges.end()) != edges.end()) {
        return fail(why_not, "an edge is used twice in the same direction (inconsistent orientation or a non-manifold edge)");
    }
    for (uint64_t e : edges) {
        const uint64_t reverse = directed_edge((uint32_t)e, (uint32_t)(e >> 32));
        if (!std::binary_search(edges.begin(), edges.end(), reverse)) return fail(why_not, "the mesh has boundary edges");
    }
    return true;
}

} // namespace

bool attach_pseudo_normals(const TriangleMesh& mesh, TriangleBvh& bvh, std::string* why_not) {
    bvh.pseudo_normals.clear();
    if (mesh.triangles.empty()) return fail(why_not, "the mesh has no triangles");
    const std::vector<uint32_t> classes = position_classes(mesh.vertices);
    std::vector<std::array<uint32_t, 3>> welded(mesh.triangles.size());
    for (size_t t = 0; t < mesh.triangles.size(); ++t) {
        for (int k = 0; k < 3; ++k) welded[t][k] = classes[mesh.triangles[t][k]];
        if (welded[t][0] == welded[t][1] || welded[t][1] == welded[t][2] || welded[t][2] == welded[t][0]) {
            return fail(why_not, "a triangle repeats a vertex");
        }
    }
    if (!closed_and_oriented(welded, why_not)) return false;

    // Face normals, the enclosed volume's sign, and the vertex and edge sums.
    std::vector<Vec3d> face(welded.size());
    std::vector<Vec3d> vertex_sum(mesh.vertices.size());
    std::unordered_map<uint64_t, Vec3d> edge_sum;
    edge_sum.reserve(2 * welded.size());
    double volume6 = 0;
    for (size_t t = 0; t < welded.size(); ++t) {
        const Vec3d p[3] = {to_double(mesh.vertices[welded[t][0]]), to_double(mesh.vertices[welded[t][1]]),
                            to_double(mesh.vertices[welded[t][2]])};
        volume6 += dot(p[0], cross(p[1], p[2]));
        const Vec3d n = cross(p[1] - p[0], p[2] - p[0]);
        const double len = std::sqrt(dot(n, n));
        face[t] = len > 0 ? n * (1.0 / len) : Vec3d{};
        for (int k = 0; k < 3; ++k) {
            const Vec3d at = p[k], next = p[(k + 1) % 3], prev = p[(k + 2) % 3];
            vertex_sum[welded[t][k]] = vertex_sum[welded[t][k]] + face[t] * angle_between(next - at, prev - at);
            Vec3d& e = edge_sum[undirected_edge(welded[t][k], welded[t][(k + 1) % 3])];
            e = e + face[t];
        }
    }
    if (!(volume6 != 0)) return fail(why_not, "the mesh encloses no volume");
    const double outward = volume6 > 0 ? 1.0 : -1.0;  // inside-out meshes get flipped normals

    bvh.pseudo_normals.resize(bvh.triangles.size());
    for (size_t i = 0; i < bvh.triangles.size(); ++i) {
        const uint32_t t = bvh.triangle_ids[i];
        const auto& w = welded[t];
        BvhPseudoNormals& out = bvh.pseudo_normals[i];
        out.feature[kFeatureFace] = unit(face[t] * outward);
        for (int k = 0; k < 3; ++k) {
            out.feature[kFeatureVertexA + k] = unit(vertex_sum[w[k]] * outward);
            out.feature[kFeatureEdgeAB + k] = unit(edge_sum.at(undirected_edge(w[k], w[(k + 1) % 3])) * outward);
        }
    }
    return true;
}

} // namespace fusedngp
