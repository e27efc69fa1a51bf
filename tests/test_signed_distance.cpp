// GroundTruthSdf against the exact signed distances of the analytic shapes
// the test meshes approximate, with error bounds derived from the meshes'
// construction; signs on a mesh with a hole and on overlapping shells.

#include "core/errors.h"
#include "core/math_constants.h"
#include "core/rng.h"
#include "geometry/bvh_queries.h"
#include "geometry/signed_distance.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <vector>

namespace fusedngp {
namespace {

using test::box_sdf;
using test::make_box_mesh;
using test::make_sphere_mesh;
using test::make_torus_mesh;
using test::sphere_sdf;
using test::torus_sdf;

// Float rounding of vertices, closest points and square roots at unit scale.
constexpr float kRounding = 2e-6f;

const Vec3 kDistanceCenter{0.5f, 0.5f, 0.5f};

std::vector<Vec3> random_points(uint32_t n, uint64_t seed, float lo = -0.1f, float hi = 1.1f) {
    Rng rng(seed);
    std::vector<Vec3> points(n);
    for (Vec3& p : points) p = {rng.uniform(lo, hi), rng.uniform(lo, hi), rng.uniform(lo, hi)};
    return points;
}

// The mesh of a sphere with its vertices on the sphere is convex (checked)
// and so lies between the ball of radius min_plane (the closest face plane to
// the centre) and the sphere. A larger solid has a smaller signed distance,
// so 0 <= sd_mesh - sd_sphere <= radius - min_plane everywhere.
float sphere_mesh_gap(const TriangleMesh& mesh, Vec3 center, float radius) {
    double min_plane = radius;
    for (const auto& t : mesh.triangles) {
        Vec3 a = mesh.vertices[t[0]];
        Vec3 n = normalize(cross(mesh.vertices[t[1]] - a, mesh.vertices[t[2]] - a));
        min_plane = std::min(min_plane, (double)dot(a - center, n));
        for (size_t v = 0; v < mesh.vertices.size(); v += 7) EXPECT_LE(dot(mesh.vertices[v] - a, n), 1e-6f) << "not convex";
    }
    return (float)(radius - min_plane);
}

TEST(GroundTruthSdf, SphereWithinItsInscribedGap) {
    const float radius = 0.35f;
    const TriangleMesh mesh = make_sphere_mesh(kDistanceCenter, radius);
    const float gap = sphere_mesh_gap(mesh, kDistanceCenter, radius);
    EXPECT_GT(gap, 1e-4f);
    EXPECT_LT(gap, 5e-4f);  // ~ r (1 - cos 2.65 deg): half a quad's diagonal
    GroundTruthSdf sdf(mesh);
    int inside = 0;
    for (Vec3 p : random_points(3000, 1)) {
        float excess = sdf.signed_distance(p) - sphere_sdf(p, kDistanceCenter, radius);
        ASSERT_GE(excess, -kRounding) << p.x << " " << p.y << " " << p.z;
        ASSERT_LE(excess, gap + kRounding) << p.x << " " << p.y << " " << p.z;
        inside += sphere_sdf(p, kDistanceCenter, radius) < 0;
    }
    EXPECT_GT(inside, 100);
}

TEST(GroundTruthSdf, BoxIsExact) {
    const Vec3 lo{0.2f, 0.25f, 0.3f}, hi{0.8f, 0.7f, 0.65f};
    GroundTruthSdf sdf(make_box_mesh(lo, hi));
    for (Vec3 p : random_points(3000, 2)) ASSERT_NEAR(sdf.signed_distance(p), box_sdf(p, lo, hi), kRounding);
    // Grid-aligned points on the faces' diagonals and the box's centre planes.
    for (float x : {0.2f, 0.5f, 0.8f, 0.9f})
        for (float y : {0.25f, 0.475f, 0.7f})
            for (float z : {0.3f, 0.475f, 0.65f, 0.1f}) ASSERT_NEAR(sdf.signed_distance({x, y, z}), box_sdf({x, y, z}, lo, hi), kRounding);
}

// The torus mesh puts its vertices on the torus and splits planar trapezoids
// (between two meridians and two minor angles). Its points are those of the
// meridians' inscribed n_minor-gons (at most r (1 - cos(pi / n_minor)) inside
// the tube) swept by chords between meridians (at most (R + r)(1 - cos(pi /
// n_major)) off the swept circle). So the mesh surface lies between the tubes
// of radius r - s and r + s around the core circle, s the sum; the mesh's
// solid then lies between those solid tori, and monotonicity of signed
// distance in the solid gives |sd_mesh - sd_torus| <= s.
TEST(GroundTruthSdf, TorusWithinItsChordBound) {
    const float major = 0.3f, minor = 0.1f;
    const uint32_t n_major = 96, n_minor = 48;
    const float s = minor * (1 - std::cos(kPiFloat / n_minor)) + (major + minor) * (1 - std::cos(kPiFloat / n_major));
    EXPECT_LT(s, 5e-4f);
    GroundTruthSdf sdf(make_torus_mesh(kDistanceCenter, major, minor, n_major, n_minor));
    int inside = 0;
    for (Vec3 p : random_points(3000, 3)) {
        float exact = torus_sdf(p, kDistanceCenter, major, minor);
        ASSERT_NEAR(sdf.signed_distance(p), exact, s + kRounding) << p.x << " " << p.y << " " << p.z;
        inside += exact < 0;
    }
    EXPECT_GT(inside, 30);
    // Points in the hole and on the axis are outside.
    EXPECT_GT(sdf.signed_distance(kDistanceCenter), 0.19f);
    EXPECT_GT(sdf.signed_distance({0.5f, 0.8f, 0.5f}), 0.f);
}

// A sphere with its north cap removed (the pole fan and the next band, 288
// triangles: a hole of radius r sin(7.5 deg) ~ 0.046). Rays through the hole
// give a wrong winding, but from 0.2 away the hole spans under 27 degrees, so
// at most one of the 7 directions (65 degrees apart) goes through it and the
// vote is right.
TEST(GroundTruthSdf, SphereWithAHoleSignsPointsAwayFromIt) {
    const float radius = 0.35f;
    TriangleMesh mesh = make_sphere_mesh(kDistanceCenter, radius);
    mesh.triangles.erase(mesh.triangles.begin(), mesh.triangles.begin() + 3 * 96);  // the pole fan, then ring 1's band
    const Vec3 hole = kDistanceCenter + Vec3{0, radius, 0};
    GroundTruthSdf sdf(mesh);
    const BvhView view = host_view(sdf.bvh());
    int wrong_rays = 0, checked = 0;
    for (Vec3 p : random_points(4000, 4)) {
        const float exact = sphere_sdf(p, kDistanceCenter, radius);
        if (std::fabs(exact) < 1e-3f) continue;  // the mesh's own gap is ~4e-4
        for (uint32_t r = 0; r < kDefaultSignRays; ++r) wrong_rays += (bvh_ray_winding(view, p, sign_ray_direction(r)) != 0) != (exact < 0);
        if (length(p - hole) < 0.2f) continue;
        ++checked;
        ASSERT_EQ(inside_by_rays(view, p, kDefaultSignRays), exact < 0) << p.x << " " << p.y << " " << p.z;
        ASSERT_EQ(sdf.signed_distance(p) < 0, exact < 0);
    }
    EXPECT_GT(wrong_rays, 0) << "some rays do pass through the hole: the vote is what keeps the sign right";
    EXPECT_GT(checked, 3000);
}

// Two overlapping spheres as one self-intersecting mesh: inside either is
// inside (winding 2 in the overlap, where parity would say outside).
// Outside both, the distance is that of the union.
TEST(GroundTruthSdf, OverlappingShellsAreInsideTheUnion) {
    const Vec3 ca{0.4f, 0.5f, 0.5f}, cb{0.62f, 0.52f, 0.5f};
    const float ra = 0.3f, rb = 0.25f;
    const TriangleMesh a = make_sphere_mesh(ca, ra, 24, 48), b = make_sphere_mesh(cb, rb, 24, 48);
    const float gap = std::max(sphere_mesh_gap(a, ca, ra), sphere_mesh_gap(b, cb, rb));
    GroundTruthSdf sdf(test::concatenate_meshes(a, b));
    const BvhView view = host_view(sdf.bvh());
    int in_both = 0;
    for (Vec3 p : random_points(3000, 5)) {
        const float da = sphere_sdf(p, ca, ra), db = sphere_sdf(p, cb, rb), exact = std::min(da, db);
        if (std::fabs(da) < 2 * gap || std::fabs(db) < 2 * gap) continue;
        const float value = sdf.signed_distance(p);
        ASSERT_EQ(value < 0, exact < 0) << p.x << " " << p.y << " " << p.z;
        if (exact > 0) { ASSERT_NEAR(value, exact, gap + kRounding); }
        if (da < 0 && db < 0) {
            ++in_both;
            ASSERT_EQ(bvh_ray_winding(view, p, sign_ray_direction(0)), 2);
        }
    }
    EXPECT_GT(in_both, 50);
}

TEST(GroundTruthSdf, FieldMatchesPointQueriesAndOutlivesTheObject) {
    std::vector<Vec3> points = random_points(2500, 6);  // over two OpenMP chunks
    Matrix<float> batch(points.size(), 3);
    for (size_t i = 0; i < points.size(); ++i) batch.row(i) << points[i].x, points[i].y, points[i].z;
    std::vector<float> expected;
    SdfBatchFn field;
    {
        GroundTruthSdf sdf(make_torus_mesh(kDistanceCenter, 0.3f, 0.1f, 48, 24), 5);
        EXPECT_EQ(sdf.sign_rays(), 5u);
        for (Vec3 p : points) expected.push_back(sdf.signed_distance(p));
        field = sdf.field();
    }
    Matrix<float> values;
    field(batch, values);
    ASSERT_EQ(values.rows(), (Eigen::Index)points.size());
    ASSERT_EQ(values.cols(), 1);
    for (size_t i = 0; i < points.size(); ++i) ASSERT_EQ(values(i, 0), expected[i]) << i;
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
    omp_set_num_threads(2);
    Matrix<float> threaded;
    field(batch, threaded);
    omp_set_num_threads(threads);
    EXPECT_TRUE(threaded == values);
#endif
    Matrix<float> wrong(4, 2);
    EXPECT_THROW(field(wrong, values), InputError);
}

TEST(GroundTruthSdf, ClosestGivesDistanceAndTheTriangleNormal) {
    const float major = 0.3f, minor = 0.1f;
    GroundTruthSdf sdf(make_torus_mesh(kDistanceCenter, major, minor));
    const std::vector<Vec3> points = random_points(2000, 7);
    std::vector<float> distances;
    std::vector<Vec3> normals;
    sdf.closest(points, distances, normals);
    ASSERT_EQ(distances.size(), points.size());
    ASSERT_EQ(normals.size(), points.size());
    for (size_t i = 0; i < points.size(); ++i) {
        const Vec3 p = points[i];
        EXPECT_EQ(distances[i], std::fabs(sdf.signed_distance(p)));
        EXPECT_NEAR(length(normals[i]), 1.f, 1e-5f);
        // The exact torus's outward normal at the nearest point; mesh faces
        // are at most half a face (~2 degrees) off it.
        Vec3 d = p - kDistanceCenter;
        Vec3 ring = normalize(Vec3{d.x, 0, d.z}) * major;
        Vec3 outward = normalize(d - ring);
        if (std::fabs(torus_sdf(p, kDistanceCenter, major, minor)) > 0.01f) { EXPECT_GT(dot(normals[i], outward), 0.99f) << i; }
    }
}

// ---- The pseudo-normal sign ------------------------------------------------

// Both signs on the same points: the distances are the same closest-point
// query, so only the sign may differ.
void expect_pseudo_normal_sign_is_exact(const TriangleMesh& mesh, float (*exact)(Vec3), float band, uint64_t seed) {
    GroundTruthSdf sdf(mesh);
    ASSERT_TRUE(sdf.has_pseudo_normals()) << sdf.no_pseudo_normals_reason();
    const BvhView view = host_view(sdf.bvh());
    int inside = 0, checked = 0;
    for (Vec3 p : random_points(4000, seed)) {
        const float by_votes = signed_distance(view, p, kDefaultSignRays, SignMethod::RayVote);
        const float by_normals = signed_distance(view, p, kDefaultSignRays, SignMethod::PseudoNormal);
        ASSERT_EQ(std::fabs(by_normals), std::fabs(by_votes));
        const float e = exact(p);
        if (std::fabs(e) < band) continue;  // the mesh is within `band` of the exact shape
        ++checked;
        ASSERT_EQ(by_normals < 0, e < 0) << p.x << " " << p.y << " " << p.z;
        inside += e < 0;
    }
    EXPECT_GT(checked, 3500);
    EXPECT_GT(inside, 30);
}

TEST(GroundTruthSdf, PseudoNormalSignIsExactOnASphereATorusAndABox) {
    expect_pseudo_normal_sign_is_exact(make_sphere_mesh(kDistanceCenter, 0.35f), [](Vec3 p) { return sphere_sdf(p, kDistanceCenter, 0.35f); },
                                       1e-3f, 11);
    expect_pseudo_normal_sign_is_exact(make_torus_mesh(kDistanceCenter, 0.3f, 0.1f), [](Vec3 p) { return torus_sdf(p, kDistanceCenter, 0.3f, 0.1f); },
                                       1e-3f, 12);
    expect_pseudo_normal_sign_is_exact(make_box_mesh({0.2f, 0.25f, 0.3f}, {0.8f, 0.7f, 0.65f}),
                                       [](Vec3 p) { return box_sdf(p, {0.2f, 0.25f, 0.3f}, {0.8f, 0.7f, 0.65f}); }, kRounding, 13);
}

// Around a box's corners and edges the closest feature is a vertex or an
// edge, where a face normal alone gives the wrong side: points in a small
// ball around each corner, inside and outside.
TEST(GroundTruthSdf, PseudoNormalSignIsRightAroundCornersAndEdges) {
    const Vec3 lo{0.2f, 0.25f, 0.3f}, hi{0.8f, 0.7f, 0.65f};
    GroundTruthSdf sdf(make_box_mesh(lo, hi));
    ASSERT_TRUE(sdf.has_pseudo_normals());
    const SdfBatchFn field = sdf.field(SignMethod::PseudoNormal);
    Rng rng(14);
    Matrix<float> points(8 * 500, 3), values;
    for (int corner = 0; corner < 8; ++corner) {
        const Vec3 c{corner & 1 ? hi.x : lo.x, corner & 2 ? hi.y : lo.y, corner & 4 ? hi.z : lo.z};
        for (int i = 0; i < 500; ++i) {
            const Vec3 p = c + Vec3{rng.uniform(-0.02f, 0.02f), rng.uniform(-0.02f, 0.02f), rng.uniform(-0.02f, 0.02f)};
            points.row(corner * 500 + i) << p.x, p.y, p.z;
        }
    }
    field(points, values);
    int inside = 0;
    for (Eigen::Index i = 0; i < points.rows(); ++i) {
        const Vec3 p{points(i, 0), points(i, 1), points(i, 2)};
        const float exact = box_sdf(p, lo, hi);
        ASSERT_NEAR(values(i, 0), exact, kRounding) << p.x << " " << p.y << " " << p.z;
        inside += exact < 0;
    }
    EXPECT_GT(inside, 400);  // an eighth of each ball is inside
}

TEST(GroundTruthSdf, PseudoNormalsOfAnInsideOutMeshAreFlipped) {
    TriangleMesh mesh = make_torus_mesh(kDistanceCenter, 0.3f, 0.1f, 48, 24);
    for (auto& t : mesh.triangles) std::swap(t[1], t[2]);
    GroundTruthSdf sdf(mesh);
    ASSERT_TRUE(sdf.has_pseudo_normals());
    for (Vec3 p : random_points(2000, 15)) {
        const float exact = torus_sdf(p, kDistanceCenter, 0.3f, 0.1f);
        if (std::fabs(exact) < 2e-3f) continue;
        ASSERT_EQ(signed_distance(host_view(sdf.bvh()), p, kDefaultSignRays, SignMethod::PseudoNormal) < 0, exact < 0);
    }
}

// Open or inconsistently oriented meshes have no pseudo-normals, and the
// pseudo-normal sign then falls back to the vote.
TEST(GroundTruthSdf, OpenOrMisorientedMeshesHaveNoPseudoNormals) {
    TriangleMesh holed = make_sphere_mesh(kDistanceCenter, 0.35f);
    holed.triangles.erase(holed.triangles.begin(), holed.triangles.begin() + 96);
    GroundTruthSdf open(holed);
    EXPECT_FALSE(open.has_pseudo_normals());
    EXPECT_NE(open.no_pseudo_normals_reason().find("boundary"), std::string::npos) << open.no_pseudo_normals_reason();
    Matrix<float> points(1000, 3), by_votes, by_normals;
    Rng rng(16);
    for (Eigen::Index i = 0; i < points.rows(); ++i) points.row(i) << rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0, 1);
    open.field(SignMethod::RayVote)(points, by_votes);
    open.field(SignMethod::PseudoNormal)(points, by_normals);
    EXPECT_TRUE(by_votes == by_normals);

    TriangleMesh flipped_one = make_box_mesh({0, 0, 0}, {1, 1, 1});
    std::swap(flipped_one.triangles[0][1], flipped_one.triangles[0][2]);
    GroundTruthSdf misoriented(flipped_one);
    EXPECT_FALSE(misoriented.has_pseudo_normals());
    EXPECT_NE(misoriented.no_pseudo_normals_reason().find("orientation"), std::string::npos)
        << misoriented.no_pseudo_normals_reason();
}

// The feature reported with the closest point: the region the point projects into.
TEST(ClosestPointOnTriangle, ReportsTheFeature) {
    const Vec3 a{0, 0, 0}, b{1, 0, 0}, c{0, 1, 0};
    struct Case { Vec3 p; uint32_t feature; };
    const Case cases[] = {{{0.2f, 0.2f, 0.5f}, kFeatureFace},   {{-1, -1, 0.1f}, kFeatureVertexA},
                          {{2, -0.5f, 0}, kFeatureVertexB},     {{-0.5f, 2, 0}, kFeatureVertexC},
                          {{0.5f, -1, 0.3f}, kFeatureEdgeAB},   {{1, 1, -0.2f}, kFeatureEdgeBC},
                          {{-1, 0.5f, 0}, kFeatureEdgeCA}};
    for (const Case& k : cases) {
        uint32_t feature = 99;
        const Vec3 q = closest_point_on_triangle(k.p, a, b, c, feature);
        EXPECT_EQ(feature, k.feature) << k.p.x << " " << k.p.y << " " << k.p.z;
        const Vec3 plain = closest_point_on_triangle(k.p, a, b, c);
        EXPECT_EQ(q.x, plain.x);
        EXPECT_EQ(q.y, plain.y);
        EXPECT_EQ(q.z, plain.z);
    }
    uint32_t feature = 99;
    closest_point_on_triangle({0.5f, 0.5f, 1}, a, b, a + (b - a) * 0.5f, feature);  // degenerate
    EXPECT_EQ(feature, kFeatureUnknown);
}

TEST(GroundTruthSdf, RejectsBadSignRays) {
    const TriangleMesh box = make_box_mesh({0, 0, 0}, {1, 1, 1});
    for (uint32_t bad : {0u, 2u, 8u, 17u}) EXPECT_THROW(GroundTruthSdf(box, bad), InputError) << bad;
    for (uint32_t good : {1u, 7u, 15u}) EXPECT_NO_THROW(GroundTruthSdf(box, good));
    EXPECT_THROW(GroundTruthSdf(TriangleMesh{}), InputError);
}

} // namespace
} // namespace fusedngp
