// TriangleBvh: a bounding volume hierarchy over a mesh's triangles, built on
// the host and flattened into two arrays that the same traversal code walks
// on the CPU and on the GPU (geometry/bvh_queries.h). See docs/SDF.md.
#pragma once

#include "geometry/triangle_mesh.h"
#include "geometry/vec3.h"

#include <cstdint>
#include <vector>

namespace fusedngp {

// 32 bytes. Inner node: count == 0, children at `first` and `first + 1`.
// Leaf: triangles [first, first + count) of TriangleBvh::triangles.
struct BvhNode {
    Vec3 lo;
    uint32_t first = 0;
    Vec3 hi;
    uint32_t count = 0;
};

struct BvhTriangle {
    Vec3 a, b, c;
};

// Unit pseudo-normals of one triangle's 7 features, indexed by
// TriangleFeature (bvh_queries.h): the face normal; each vertex's
// angle-weighted normal over the triangles around it; each edge's mean of its
// two faces' normals. The side of the closest feature's pseudo-normal is the
// sign of the distance on a closed, consistently oriented mesh (see
// geometry/pseudo_normals.h).
struct BvhPseudoNormals {
    Vec3 feature[7];
};

constexpr uint32_t kBvhMaxStack = 64;

struct TriangleBvh {
    std::vector<BvhNode> nodes;            // nodes[0] is the root
    std::vector<BvhTriangle> triangles;    // in leaf order
    std::vector<uint32_t> triangle_ids;    // the mesh's index of each leaf-order triangle
    std::vector<BvhPseudoNormals> pseudo_normals;  // leaf order; empty unless attach_pseudo_normals succeeded
    uint32_t depth = 0;                    // longest root-to-leaf path (traversal stacks need < kBvhMaxStack)
};

// Binned SAH; near max_depth it falls back to median splits, so the tree is
// never deeper than max_depth (at most kBvhMaxStack - 1, the default).
// Throws InputError when the mesh has no triangles, an index out of range or
// a non-finite vertex, or needs more than max_depth levels even when halved
// at every level.
TriangleBvh build_triangle_bvh(const TriangleMesh& mesh, uint32_t max_leaf_size = 4,
                               uint32_t max_depth = kBvhMaxStack - 1);

// Raw pointers into a TriangleBvh's arrays (host or device memory).
struct BvhView {
    const BvhNode* nodes = nullptr;
    const BvhTriangle* triangles = nullptr;
    uint32_t n_nodes = 0;
    uint32_t n_triangles = 0;
    const BvhPseudoNormals* pseudo_normals = nullptr;  // null when the BVH has none
};

inline BvhView host_view(const TriangleBvh& bvh) {
    return BvhView{bvh.nodes.data(), bvh.triangles.data(), (uint32_t)bvh.nodes.size(), (uint32_t)bvh.triangles.size(),
                   bvh.pseudo_normals.empty() ? nullptr : bvh.pseudo_normals.data()};
}

} // namespace fusedngp
