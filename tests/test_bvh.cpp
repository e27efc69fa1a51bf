// The triangle BVH: structure invariants of the build, and the closest-point
// and ray queries of geometry/bvh_queries.h against brute force.

#include "core/errors.h"
#include "core/rng.h"
#include "geometry/bvh.h"
#include "geometry/bvh_queries.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace fusedngp {
namespace {

using test::make_box_mesh;
using test::make_sphere_mesh;
using test::make_torus_mesh;

Vec3 random_point(Rng& rng, float lo, float hi) {
    return {rng.uniform(lo, hi), rng.uniform(lo, hi), rng.uniform(lo, hi)};
}

bool box_contains(const BvhNode& n, Vec3 p) {
    return p.x >= n.lo.x && p.x <= n.hi.x && p.y >= n.lo.y && p.y <= n.hi.y && p.z >= n.lo.z && p.z <= n.hi.z;
}

bool same_vec(Vec3 a, Vec3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// Walks the tree from the root: leaves partition the leaf order exactly once,
// every box holds its children and its triangles, depth is as reported.
void expect_valid_bvh(const TriangleBvh& bvh, const TriangleMesh& mesh, uint32_t max_leaf_size) {
    const uint32_t n = (uint32_t)mesh.triangles.size();
    ASSERT_EQ(bvh.triangles.size(), n);
    ASSERT_EQ(bvh.triangle_ids.size(), n);
    std::vector<int> leaf_hits(n, 0);
    std::vector<int> node_visits(bvh.nodes.size(), 0);
    struct Item { uint32_t node, depth; };
    std::vector<Item> todo{{0, 0}};
    uint32_t max_depth = 0;
    while (!todo.empty()) {
        Item it = todo.back();
        todo.pop_back();
        ASSERT_LT(it.node, bvh.nodes.size());
        ++node_visits[it.node];
        max_depth = std::max(max_depth, it.depth);
        const BvhNode& node = bvh.nodes[it.node];
        if (node.count == 0) {
            for (uint32_t c = node.first; c < node.first + 2; ++c) {
                ASSERT_LT(c, bvh.nodes.size());
                EXPECT_TRUE(box_contains(node, bvh.nodes[c].lo) && box_contains(node, bvh.nodes[c].hi));
                todo.push_back({c, it.depth + 1});
            }
            continue;
        }
        EXPECT_LE(node.count, max_leaf_size);
        ASSERT_LE(node.first + node.count, n);
        for (uint32_t i = node.first; i < node.first + node.count; ++i) {
            ++leaf_hits[i];
            const BvhTriangle& t = bvh.triangles[i];
            EXPECT_TRUE(box_contains(node, t.a) && box_contains(node, t.b) && box_contains(node, t.c));
        }
    }
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(leaf_hits[i], 1) << "leaf-order triangle " << i;
    for (size_t i = 0; i < node_visits.size(); ++i) EXPECT_EQ(node_visits[i], 1) << "node " << i;
    EXPECT_EQ(bvh.depth, max_depth);
    EXPECT_LT(bvh.depth, kBvhMaxStack);
    // triangle_ids is a permutation whose triangles are the mesh's, vertex order kept.
    std::vector<uint32_t> ids = bvh.triangle_ids;
    std::sort(ids.begin(), ids.end());
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(ids[i], i);
    for (uint32_t i = 0; i < n; ++i) {
        const auto& t = mesh.triangles[bvh.triangle_ids[i]];
        EXPECT_TRUE(same_vec(bvh.triangles[i].a, mesh.vertices[t[0]]) && same_vec(bvh.triangles[i].b, mesh.vertices[t[1]]) &&
                    same_vec(bvh.triangles[i].c, mesh.vertices[t[2]]));
    }
}

// Triangles of random size and place, some degenerate.
TriangleMesh triangle_soup(uint32_t n, uint64_t seed) {
    Rng rng(seed);
    TriangleMesh m;
    for (uint32_t i = 0; i < n; ++i) {
        Vec3 c = random_point(rng, 0.f, 1.f);
        float s = rng.uniform(0.001f, 0.1f);
        uint32_t v = (uint32_t)m.vertices.size();
        m.vertices.push_back(c);
        m.vertices.push_back(c + random_point(rng, -s, s));
        m.vertices.push_back(i % 17 == 0 ? c : c + random_point(rng, -s, s));  // every 17th is a segment
        m.triangles.push_back({v, v + 1, v + 2});
    }
    return m;
}

TEST(Bvh, InvariantsHoldForMeshesAndLeafSizes) {
    const TriangleMesh meshes[] = {make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.1f, 32, 16),
                                   make_sphere_mesh({0.5f, 0.5f, 0.5f}, 0.4f, 12, 24),
                                   make_box_mesh({0.1f, 0.2f, 0.3f}, {0.9f, 0.8f, 0.7f}), triangle_soup(777, 3)};
    for (const TriangleMesh& mesh : meshes) {
        for (uint32_t leaf : {1u, 4u, 8u}) {
            SCOPED_TRACE(::testing::Message() << mesh.triangles.size() << " triangles, leaf size " << leaf);
            expect_valid_bvh(build_triangle_bvh(mesh, leaf), mesh, leaf);
        }
    }
}

TEST(Bvh, SingleTriangleIsOneLeaf) {
    TriangleMesh m;
    m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    m.triangles = {{0, 1, 2}};
    TriangleBvh bvh = build_triangle_bvh(m);
    ASSERT_EQ(bvh.nodes.size(), 1u);
    EXPECT_EQ(bvh.nodes[0].count, 1u);
    EXPECT_EQ(bvh.depth, 0u);
    expect_valid_bvh(bvh, m, 4);
}

TEST(Bvh, BuildIsDeterministic) {
    TriangleMesh mesh = triangle_soup(2000, 11);
    TriangleBvh a = build_triangle_bvh(mesh), b = build_triangle_bvh(mesh);
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    EXPECT_EQ(std::memcmp(a.nodes.data(), b.nodes.data(), a.nodes.size() * sizeof(BvhNode)), 0);
    EXPECT_EQ(a.triangle_ids, b.triangle_ids);
    EXPECT_EQ(a.depth, b.depth);
}

// 1000 copies of one triangle: no split separates centroids, the median split still bounds the leaves.
TEST(Bvh, IdenticalTrianglesStillSplit) {
    TriangleMesh m;
    m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    m.triangles.assign(1000, {0, 1, 2});
    TriangleBvh bvh = build_triangle_bvh(m, 4);
    expect_valid_bvh(bvh, m, 4);
    EXPECT_LE(bvh.depth, 9u);  // 1000 -> 500 -> ... -> 4 after 8 halvings
}

// Under a tight depth limit the SAH tree would be too deep: the build
// switches to median splits in time and meets the limit exactly; a limit
// that even halving cannot meet is an InputError.
TEST(Bvh, DepthLimitIsMetByMedianSplits) {
    const TriangleMesh mesh = triangle_soup(5000, 9);
    const uint32_t halvings = 11;  // 5000 / 2^11 <= 4
    const TriangleBvh free_bvh = build_triangle_bvh(mesh, 4);
    ASSERT_GT(free_bvh.depth, halvings + 1) << "the SAH alone goes deeper than the limits below";
    for (uint32_t limit = halvings; limit < free_bvh.depth; ++limit) {
        TriangleBvh bvh = build_triangle_bvh(mesh, 4, limit);
        expect_valid_bvh(bvh, mesh, 4);
        EXPECT_LE(bvh.depth, limit);
        // Still a correct BVH for queries.
        BvhView view = host_view(bvh);
        for (Vec3 p : {Vec3{0.1f, 0.5f, 0.3f}, Vec3{0.5f, 0.52f, 0.5f}, Vec3{0.83f, 0.6f, 0.41f}}) {
            float expected = bvh_closest_point(host_view(free_bvh), p).distance_squared;
            EXPECT_NEAR(bvh_closest_point(view, p).distance_squared, expected, 1e-6f * expected);
        }
    }
    EXPECT_THROW(build_triangle_bvh(mesh, 4, halvings - 1), InputError);
    EXPECT_THROW(build_triangle_bvh(mesh, 4, kBvhMaxStack), InputError);
}

TEST(Bvh, RejectsBadInput) {
    TriangleMesh empty;
    EXPECT_THROW(build_triangle_bvh(empty), InputError);
    TriangleMesh bad_index;
    bad_index.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    bad_index.triangles = {{0, 1, 3}};
    EXPECT_THROW(build_triangle_bvh(bad_index), InputError);
    TriangleMesh nan_vertex = bad_index;
    nan_vertex.triangles = {{0, 1, 2}};
    nan_vertex.vertices[1].y = NAN;
    EXPECT_THROW(build_triangle_bvh(nan_vertex), InputError);
    EXPECT_THROW(build_triangle_bvh(make_box_mesh({0, 0, 0}, {1, 1, 1}), 0), InputError);
}

// ---- Closest point -----------------------------------------------------------

TEST(BvhQueries, ClosestPointOnTriangleRegions) {
    const Vec3 a{0, 0, 0}, b{1, 0, 0}, c{0, 1, 0};
    auto q = [&](Vec3 p) { return closest_point_on_triangle(p, a, b, c); };
    auto near = [](Vec3 u, Vec3 v) { return length(u - v) < 1e-6f; };
    EXPECT_TRUE(near(q({0.2f, 0.3f, 0.7f}), {0.2f, 0.3f, 0}));     // face
    EXPECT_TRUE(near(q({-1, -2, 0.5f}), a));                       // vertex a
    EXPECT_TRUE(near(q({2, -0.5f, 0}), b));                        // vertex b
    EXPECT_TRUE(near(q({-0.1f, 3, -1}), c));                       // vertex c
    EXPECT_TRUE(near(q({0.5f, -1, 0.2f}), {0.5f, 0, 0}));          // edge ab
    EXPECT_TRUE(near(q({-1, 0.25f, 0}), {0, 0.25f, 0}));           // edge ca
    EXPECT_TRUE(near(q({1, 1, 0.3f}), {0.5f, 0.5f, 0}));           // edge bc
}

TEST(BvhQueries, ClosestPointOnTriangleMatchesDenseSampling) {
    Rng rng(5);
    for (int trial = 0; trial < 200; ++trial) {
        Vec3 a = random_point(rng, -1, 1), b = random_point(rng, -1, 1), c = random_point(rng, -1, 1);
        Vec3 p = random_point(rng, -2, 2);
        Vec3 q = closest_point_on_triangle(p, a, b, c);
        // q lies on the triangle: zero distance to its plane and inside (areas add up).
        Vec3 n = cross(b - a, c - a);
        float area = length(n);
        EXPECT_NEAR(dot(q - a, n) / area, 0, 1e-5f);
        float parts = length(cross(b - q, c - q)) + length(cross(c - q, a - q)) + length(cross(a - q, b - q));
        EXPECT_NEAR(parts, area, 1e-4f * (1 + area));
        // No sample of the triangle is closer.
        float best = INFINITY;
        const int k = 60;
        for (int i = 0; i <= k; ++i) {
            for (int j = 0; i + j <= k; ++j) {
                Vec3 s = a + (b - a) * ((float)i / k) + (c - a) * ((float)j / k);
                best = std::min(best, length(p - s));
            }
        }
        EXPECT_LE(length(p - q), best + 1e-5f);
    }
}

TEST(BvhQueries, ClosestPointOnDegenerateTriangles) {
    const Vec3 p{0.3f, 2.f, 1.f};
    // Collinear: the segment [(0,0,0), (2,0,0)].
    Vec3 q = closest_point_on_triangle(p, {0, 0, 0}, {1, 0, 0}, {2, 0, 0});
    EXPECT_LT(length(q - Vec3{0.3f, 0, 0}), 1e-6f);
    // Two vertices equal: the segment [(0,0,0), (0,0,1)].
    q = closest_point_on_triangle(p, {0, 0, 0}, {0, 0, 1}, {0, 0, 0});
    EXPECT_LT(length(q - Vec3{0, 0, 1}), 1e-6f);
    // A point.
    q = closest_point_on_triangle(p, {1, 1, 1}, {1, 1, 1}, {1, 1, 1});
    EXPECT_TRUE(same_vec(q, {1, 1, 1}));
    EXPECT_TRUE(same_vec(triangle_normal({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}), {0, 0, 0}));
}

float brute_force_distance_squared(const TriangleMesh& mesh, Vec3 p) {
    float best = INFINITY;
    for (const auto& t : mesh.triangles) {
        Vec3 q = closest_point_on_triangle(p, mesh.vertices[t[0]], mesh.vertices[t[1]], mesh.vertices[t[2]]);
        best = std::min(best, length_squared(p - q));
    }
    return best;
}

void expect_closest_matches_brute_force(const TriangleMesh& mesh, uint32_t leaf, int n_points, uint64_t seed) {
    TriangleBvh bvh = build_triangle_bvh(mesh, leaf);
    BvhView view = host_view(bvh);
    Rng rng(seed);
    for (int i = 0; i < n_points; ++i) {
        Vec3 p = random_point(rng, -0.1f, 1.1f);
        ClosestHit hit = bvh_closest_point(view, p);
        float expected = brute_force_distance_squared(mesh, p);
        // Box pruning may drop a triangle whose distance rounds within an ulp of the best.
        ASSERT_NEAR(hit.distance_squared, expected, 1e-6f * expected + 1e-12f) << "point " << i;
        // The hit is consistent: its point is that triangle's closest point.
        ASSERT_LT(hit.triangle, bvh.triangles.size());
        const BvhTriangle& t = bvh.triangles[hit.triangle];
        EXPECT_TRUE(same_vec(hit.point, closest_point_on_triangle(p, t.a, t.b, t.c)));
        EXPECT_EQ(hit.distance_squared, length_squared(p - hit.point));
    }
}

TEST(BvhQueries, ClosestPointMatchesBruteForceOnTorus) {
    expect_closest_matches_brute_force(make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.1f, 48, 24), 4, 1000, 21);
}

TEST(BvhQueries, ClosestPointMatchesBruteForceOnSoup) {
    expect_closest_matches_brute_force(triangle_soup(1500, 8), 1, 500, 22);
}

// ---- Rays --------------------------------------------------------------------

TEST(BvhQueries, RayCrossingSignFollowsTheNormal) {
    const BvhTriangle t{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};  // normal +z
    const Vec3 inside{0.2f, 0.2f, 0}, outside{2.f, 2.f, 0};
    for (Vec3 dir : {Vec3{0.1f, 0.2f, 1.f}, Vec3{0, 0, 1}, Vec3{-0.3f, 0.1f, 0.5f}}) {
        EXPECT_EQ(ray_triangle_crossing(make_watertight_ray(inside - dir, dir), t), 1);    // leaves along +z
        EXPECT_EQ(ray_triangle_crossing(make_watertight_ray(inside + dir, -dir), t), -1);  // enters along -z
        EXPECT_EQ(ray_triangle_crossing(make_watertight_ray(inside + dir, dir), t), 0);    // behind the origin
        EXPECT_EQ(ray_triangle_crossing(make_watertight_ray(outside - dir, dir), t), 0);   // misses
    }
    // Dominant x and y axes too.
    const BvhTriangle tx{{0, 0, 0}, {0, 1, 0}, {0, 0, 1}};  // normal +x
    EXPECT_EQ(ray_triangle_crossing(make_watertight_ray({-1, 0.2f, 0.2f}, {1, 0.1f, 0}), tx), 1);
    EXPECT_EQ(ray_triangle_crossing(make_watertight_ray({1, 0.2f, 0.2f}, {-1, 0.1f, 0}), tx), -1);
    const BvhTriangle ty{{0, 0, 0}, {0, 0, 1}, {1, 0, 0}};  // normal +y
    EXPECT_EQ(ray_triangle_crossing(make_watertight_ray({0.2f, -1, 0.2f}, {0, 1, 0.1f}), ty), 1);
    EXPECT_EQ(ray_triangle_crossing(make_watertight_ray({0.2f, 1, 0.2f}, {0, -1, 0.1f}), ty), -1);
}

// A ray exactly through the shared edge or the shared vertex of a planar fan
// crosses it once: no double count, no gap.
TEST(BvhQueries, RayThroughSharedEdgesAndVerticesCountsOnce) {
    // Square [0,1]^2 in z = 0 as two triangles (normal +z), diagonal from (0,0) to (1,1).
    const BvhTriangle t0{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}}, t1{{0, 0, 0}, {1, 1, 0}, {0, 1, 0}};
    for (Vec3 origin : {Vec3{0.5f, 0.5f, -1}, Vec3{0.25f, 0.25f, -2}, Vec3{0, 0, -1}, Vec3{1, 1, -1}}) {
        for (Vec3 dir : {Vec3{0, 0, 1}, Vec3{0.25f, 0.25f, 1}}) {
            WatertightRay r = make_watertight_ray(origin, dir);
            int along_edge = ray_triangle_crossing(r, t0) + ray_triangle_crossing(r, t1);
            Vec3 hit = origin + dir * (-origin.z / dir.z);
            bool on_square = hit.x >= 0 && hit.x <= 1 && hit.y >= 0 && hit.y <= 1;
            // The outer corners (0,0) and (1,1) are the square's own boundary: claimed by one side or none.
            if (hit.x > 0 && hit.x < 1) { EXPECT_EQ(along_edge, on_square ? 1 : 0) << origin.x << " " << dir.x; }
        }
    }
    // A fan of 6 triangles around (0,0,0) in z = 0: a ray through the centre vertex counts once.
    std::vector<BvhTriangle> fan;
    for (int k = 0; k < 6; ++k) {
        // (k + 1) % 6: the last triangle closes the fan on exactly the first one's vertex.
        float a0 = 2 * 3.14159265f * k / 6, a1 = 2 * 3.14159265f * ((k + 1) % 6) / 6;
        fan.push_back({{0, 0, 0}, {std::cos(a0), std::sin(a0), 0}, {std::cos(a1), std::sin(a1), 0}});
    }
    for (Vec3 dir : {Vec3{0, 0, 1}, Vec3{0.3f, -0.2f, 1}, Vec3{0, 0, -1}}) {
        WatertightRay r = make_watertight_ray(dir * -1.f, dir);
        int sum = 0;
        for (const BvhTriangle& t : fan) sum += ray_triangle_crossing(r, t);
        EXPECT_EQ(sum, dir.z > 0 ? 1 : -1);
    }
}

// Exact generalised winding number (sum of signed solid angles / 4 pi, Van
// Oosterom and Strackee), in double, brute force.
double generalized_winding_number(const TriangleMesh& mesh, Vec3 p) {
    double total = 0;
    for (const auto& t : mesh.triangles) {
        double v[3][3];
        for (int k = 0; k < 3; ++k) {
            Vec3 d = mesh.vertices[t[k]] - p;
            v[k][0] = d.x, v[k][1] = d.y, v[k][2] = d.z;
        }
        auto dotd = [](const double* x, const double* y) { return x[0] * y[0] + x[1] * y[1] + x[2] * y[2]; };
        double la = std::sqrt(dotd(v[0], v[0])), lb = std::sqrt(dotd(v[1], v[1])), lc = std::sqrt(dotd(v[2], v[2]));
        double bxc[3] = {v[1][1] * v[2][2] - v[1][2] * v[2][1], v[1][2] * v[2][0] - v[1][0] * v[2][2],
                         v[1][0] * v[2][1] - v[1][1] * v[2][0]};
        double det = dotd(v[0], bxc);
        double denom = la * lb * lc + dotd(v[0], v[1]) * lc + dotd(v[0], v[2]) * lb + dotd(v[1], v[2]) * la;
        total += 2 * std::atan2(det, denom);
    }
    return total / (4 * 3.14159265358979323846);
}

TEST(BvhQueries, RayWindingEqualsGeneralizedWindingNumber) {
    const TriangleMesh torus = make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.12f, 32, 16);
    const TriangleMesh spheres = test::concatenate_meshes(make_sphere_mesh({0.4f, 0.5f, 0.5f}, 0.3f, 12, 24),
                                                          make_sphere_mesh({0.6f, 0.55f, 0.5f}, 0.25f, 10, 20));
    for (const TriangleMesh* mesh : {&torus, &spheres}) {
        TriangleBvh bvh = build_triangle_bvh(*mesh);
        BvhView view = host_view(bvh);
        Rng rng(31);
        int counts[3] = {0, 0, 0};
        for (int i = 0; i < 400; ++i) {
            Vec3 p = random_point(rng, -0.1f, 1.1f);
            double gwn = generalized_winding_number(*mesh, p);
            int expected = (int)std::lround(gwn);
            ASSERT_NEAR(gwn, expected, 1e-3) << "closed mesh: an integer";
            if (expected >= 0 && expected <= 2) ++counts[expected];
            for (uint32_t r = 0; r < kMaxSignRays; ++r) {
                ASSERT_EQ(bvh_ray_winding(view, p, sign_ray_direction(r)), expected) << "point " << i << " ray " << r;
            }
            EXPECT_EQ(bvh_ray_winding(view, p, {0, 0, 1}), expected) << "axis-aligned ray, point " << i;
        }
        EXPECT_GT(counts[0], 0);
        EXPECT_GT(counts[1], 0);
        if (mesh == &spheres) { EXPECT_GT(counts[2], 0) << "some points lie in the overlap"; }
    }
}

TEST(BvhQueries, SignRayDirectionsAreUnitAndOffAxis) {
    for (uint32_t i = 0; i < kMaxSignRays; ++i) {
        Vec3 d = sign_ray_direction(i);
        EXPECT_NEAR(length(d), 1.f, 1e-6f);
        EXPECT_GT(std::min({std::fabs(d.x), std::fabs(d.y), std::fabs(d.z)}), 0.1f);
        for (uint32_t j = 0; j < i; ++j) EXPECT_LT(dot(d, sign_ray_direction(j)), 0.95f) << i << " " << j;
    }
    for (uint32_t i = 0; i < kDefaultSignRays; ++i)
        for (uint32_t j = 0; j < i; ++j) EXPECT_LT(dot(sign_ray_direction(i), sign_ray_direction(j)), 0.43f);  // > 64 degrees
}

} // namespace
} // namespace fusedngp
