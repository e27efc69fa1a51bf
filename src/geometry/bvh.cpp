// Binned-SAH build of the triangle BVH (bvh.h). Iterative over an explicit
// work list, so a deep tree cannot overflow the host stack; near the depth
// limit it switches to median splits, which halve a node and so always finish
// within max_depth (itself under kBvhMaxStack) when the mesh can at all. The same mesh always gives the same tree.
#include "geometry/bvh.h"

#include "core/errors.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace fusedngp {
namespace {

constexpr int kSahBins = 16;

struct BuildTriangle {
    Box3 box;
    Vec3 centroid;
};

struct WorkItem {
    uint32_t node;
    uint32_t begin, end;  // range of the build order
    uint32_t depth;
};

// Levels of halving until `count` triangles fit in leaves of `leaf_size`.
uint32_t median_levels(uint32_t count, uint32_t leaf_size) {
    uint32_t levels = 0;
    for (uint64_t capacity = leaf_size; capacity < count; capacity *= 2) ++levels;
    return levels;
}

float half_area(const Box3& b) {
    if (b.empty()) return 0.f;
    Vec3 e = b.extent();
    return e.x * e.y + e.y * e.z + e.z * e.x;
}

int bin_of(float c, float lo, float scale) {
    int bin = (int)((c - lo) * scale);
    return std::min(std::max(bin, 0), kSahBins - 1);
}

struct SahSplit {
    int axis = -1;
    int bin = 0;  // left side: bins [0, bin]
    float lo = 0, scale = 0;
};

// The cheapest binned split with both sides non-empty; axis -1 when the
// centroids coincide on every axis.
SahSplit best_sah_split(const std::vector<BuildTriangle>& tris, const uint32_t* order, uint32_t count) {
    Box3 centroids;
    for (uint32_t i = 0; i < count; ++i) centroids.extend(tris[order[i]].centroid);
    SahSplit best;
    float best_cost = INFINITY;
    for (int axis = 0; axis < 3; ++axis) {
        const float lo = centroids.lo[axis], extent = centroids.hi[axis] - centroids.lo[axis];
        if (!(extent > 0)) continue;
        const float scale = (float)kSahBins / extent;
        Box3 boxes[kSahBins];
        uint32_t counts[kSahBins] = {};
        for (uint32_t i = 0; i < count; ++i) {
            const BuildTriangle& t = tris[order[i]];
            int b = bin_of(t.centroid[axis], lo, scale);
            boxes[b].extend(t.box);
            ++counts[b];
        }
        // Suffix sweep for the right sides, prefix sweep for the left.
        float right_cost[kSahBins];
        Box3 right;
        uint32_t right_count = 0;
        for (int b = kSahBins - 1; b > 0; --b) {
            right.extend(boxes[b]);
            right_count += counts[b];
            right_cost[b] = half_area(right) * (float)right_count;
        }
        Box3 left;
        uint32_t left_count = 0;
        for (int b = 0; b + 1 < kSahBins; ++b) {
            left.extend(boxes[b]);
            left_count += counts[b];
            if (left_count == 0 || left_count == count) continue;
            float cost = half_area(left) * (float)left_count + right_cost[b + 1];
            if (cost < best_cost) {
                best_cost = cost;
                best = SahSplit{axis, b, lo, scale};
            }
        }
    }
    return best;
}

// Reorders order[0, count) and returns the size of the left part (0 < m < count).
uint32_t split_node(const std::vector<BuildTriangle>& tris, uint32_t* order, uint32_t count, bool use_sah) {
    if (use_sah) {
        SahSplit s = best_sah_split(tris, order, count);
        if (s.axis >= 0) {
            uint32_t* mid = std::partition(order, order + count, [&](uint32_t t) {
                return bin_of(tris[t].centroid[s.axis], s.lo, s.scale) <= s.bin;
            });
            return (uint32_t)(mid - order);
        }
    }
    // Median of the centroids along the box's longest axis, ties by index,
    // so even identical triangles split evenly.
    Box3 centroids;
    for (uint32_t i = 0; i < count; ++i) centroids.extend(tris[order[i]].centroid);
    Vec3 e = centroids.extent();
    int axis = e.x >= e.y && e.x >= e.z ? 0 : (e.y >= e.z ? 1 : 2);
    uint32_t half = count / 2;
    std::nth_element(order, order + half, order + count, [&](uint32_t a, uint32_t b) {
        float ca = tris[a].centroid[axis], cb = tris[b].centroid[axis];
        return ca < cb || (ca == cb && a < b);
    });
    return half;
}

std::vector<BuildTriangle> build_triangles(const TriangleMesh& mesh) {
    const size_t n_vertices = mesh.vertices.size();
    for (size_t v = 0; v < n_vertices; ++v) {
        const Vec3& p = mesh.vertices[v];
        if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z)) {
            throw InputError("mesh: vertex " + std::to_string(v) + " has a non-finite coordinate");
        }
    }
    std::vector<BuildTriangle> tris(mesh.triangles.size());
    for (size_t t = 0; t < tris.size(); ++t) {
        for (uint32_t index : mesh.triangles[t]) {
            if (index >= n_vertices) {
                throw InputError("mesh: triangle " + std::to_string(t) + " refers to vertex " + std::to_string(index) +
                                 " of " + std::to_string(n_vertices));
            }
            tris[t].box.extend(mesh.vertices[index]);
        }
        tris[t].centroid = tris[t].box.center();
    }
    return tris;
}

} // namespace

TriangleBvh build_triangle_bvh(const TriangleMesh& mesh, uint32_t max_leaf_size, uint32_t max_depth) {
    if (mesh.triangles.empty()) throw InputError("mesh: no triangles to build a BVH over");
    if (mesh.triangles.size() >= (1u << 31)) throw InputError("mesh: too many triangles for a BVH (2^31 or more)");
    if (max_leaf_size == 0) throw InputError("BVH: max_leaf_size must be at least 1");
    if (max_depth >= kBvhMaxStack) {
        throw InputError("BVH: max_depth " + std::to_string(max_depth) + " needs a traversal stack over " +
                         std::to_string(kBvhMaxStack));
    }
    if (median_levels((uint32_t)mesh.triangles.size(), max_leaf_size) > max_depth) {
        throw InputError("mesh: " + std::to_string(mesh.triangles.size()) + " triangles in leaves of " +
                         std::to_string(max_leaf_size) + " need a BVH deeper than " + std::to_string(max_depth));
    }
    const std::vector<BuildTriangle> tris = build_triangles(mesh);
    const uint32_t n = (uint32_t)tris.size();

    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;

    TriangleBvh bvh;
    bvh.nodes.reserve(2 * (size_t)n);
    bvh.nodes.emplace_back();
    std::vector<WorkItem> work{{0, 0, n, 0}};
    while (!work.empty()) {
        WorkItem item = work.back();
        work.pop_back();
        Box3 box;
        for (uint32_t i = item.begin; i < item.end; ++i) box.extend(tris[order[i]].box);
        const uint32_t count = item.end - item.begin;
        bvh.nodes[item.node].lo = box.lo;
        bvh.nodes[item.node].hi = box.hi;
        bvh.depth = std::max(bvh.depth, item.depth);
        if (item.depth > max_depth) {  // cannot happen: the median fallback below keeps within max_depth
            throw InputError("mesh: BVH deeper than " + std::to_string(max_depth));
        }
        if (count <= max_leaf_size) {
            bvh.nodes[item.node].first = item.begin;
            bvh.nodes[item.node].count = count;
            continue;
        }
        // SAH only while a worst-case split (one triangle peeled off) could
        // still be finished by median splits within max_depth.
        const bool use_sah = item.depth + 1 + median_levels(count, max_leaf_size) <= max_depth;
        const uint32_t left = split_node(tris, order.data() + item.begin, count, use_sah);
        const uint32_t children = (uint32_t)bvh.nodes.size();
        bvh.nodes.emplace_back();
        bvh.nodes.emplace_back();
        bvh.nodes[item.node].first = children;
        bvh.nodes[item.node].count = 0;
        // Right first, so the left subtree is built (and laid out) next.
        work.push_back({children + 1, item.begin + left, item.end, item.depth + 1});
        work.push_back({children, item.begin, item.begin + left, item.depth + 1});
    }

    bvh.triangles.resize(n);
    bvh.triangle_ids = order;
    for (uint32_t i = 0; i < n; ++i) {
        const auto& t = mesh.triangles[order[i]];
        bvh.triangles[i] = BvhTriangle{mesh.vertices[t[0]], mesh.vertices[t[1]], mesh.vertices[t[2]]};
    }
    return bvh;
}

} // namespace fusedngp
