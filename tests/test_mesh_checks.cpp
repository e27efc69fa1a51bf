// Mesh checks: edge counts (boundary, non-manifold) on closed, open, finned
// and seam-split meshes; degenerate triangles; welding; the unit-cube fit.
#include "geometry/mesh_checks.h"

#include "core/errors.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <string>

using namespace fusedngp;
using fusedngp::test::make_box_mesh;

namespace {

TriangleMesh unit_box() { return make_box_mesh({0, 0, 0}, {1, 2, 3}); }

// The same box with every triangle on its own 3 vertices, as exporters write
// meshes with per-face normals: 36 vertices, seams everywhere.
TriangleMesh split_box() {
    const TriangleMesh box = unit_box();
    TriangleMesh split;
    for (const auto& t : box.triangles) {
        const uint32_t first = (uint32_t)split.vertices.size();
        for (uint32_t v : t) split.vertices.push_back(box.vertices[v]);
        split.triangles.push_back({first, first + 1, first + 2});
    }
    return split;
}

bool mentions(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

} // namespace

TEST(MeshChecks, ClosedMeshesAreWatertight) {
    const MeshReport box = analyse_mesh(unit_box());
    EXPECT_EQ(box.n_vertices, 8u);
    EXPECT_EQ(box.n_triangles, 12u);
    EXPECT_EQ(box.boundary_edges, 0u);
    EXPECT_EQ(box.non_manifold_edges, 0u);
    EXPECT_EQ(box.degenerate_triangles, 0u);
    EXPECT_TRUE(box.watertight());
    EXPECT_EQ(box.describe(), "12 triangles, 8 vertices, bounds [0 0 0]-[1 2 3], watertight");
    EXPECT_TRUE(analyse_mesh(fusedngp::test::make_sphere_mesh({0, 0, 0}, 1, 12, 24)).watertight());
    EXPECT_TRUE(analyse_mesh(fusedngp::test::make_torus_mesh({0, 0, 0}, 1, 0.25f, 24, 12)).watertight());
}

TEST(MeshChecks, RemovedTriangleLeavesThreeBoundaryEdges) {
    TriangleMesh box = unit_box();
    box.triangles.erase(box.triangles.begin() + 5);
    const MeshReport report = analyse_mesh(box);
    EXPECT_EQ(report.boundary_edges, 3u);
    EXPECT_EQ(report.non_manifold_edges, 0u);
    EXPECT_FALSE(report.watertight());
    EXPECT_TRUE(mentions(report.describe(), "11 triangles, 8 vertices")) << report.describe();
    EXPECT_TRUE(mentions(report.describe(), ", 3 boundary edges, 0 non-manifold edges")) << report.describe();
}

TEST(MeshChecks, FinMakesANonManifoldEdge) {
    // A third triangle on the box edge from vertex 0 to vertex 4, sticking out.
    TriangleMesh box = unit_box();
    box.vertices.push_back({-1, -1, 0.5f});
    box.triangles.push_back({0, 4, 8});
    const MeshReport report = analyse_mesh(box);
    EXPECT_EQ(report.non_manifold_edges, 1u);
    EXPECT_EQ(report.boundary_edges, 2u);  // the fin's free edges
    EXPECT_FALSE(report.watertight());
}

TEST(MeshChecks, DuplicatedSeamVerticesStillWatertight) {
    const TriangleMesh split = split_box();
    const MeshReport report = analyse_mesh(split);
    EXPECT_EQ(report.n_vertices, 36u);
    EXPECT_TRUE(report.watertight()) << report.describe();

    // A sphere whose first ring is duplicated for the last triangles (a UV seam).
    TriangleMesh sphere = fusedngp::test::make_sphere_mesh({0, 0, 0}, 1, 6, 8);
    const uint32_t copy = (uint32_t)sphere.vertices.size();
    sphere.vertices.push_back(sphere.vertices[1]);
    for (auto& t : sphere.triangles) {
        if (&t - sphere.triangles.data() >= 4) break;  // only some triangles use the copy
        for (uint32_t& v : t) v = v == 1 ? copy : v;
    }
    EXPECT_TRUE(analyse_mesh(sphere).watertight());
}

TEST(MeshChecks, EmptyMeshIsNotWatertight) {
    const MeshReport report = analyse_mesh(TriangleMesh{});
    EXPECT_FALSE(report.watertight());
    EXPECT_EQ(report.describe(), "0 triangles, 0 vertices, empty");
}

TEST(MeshChecks, DegenerateTrianglesAreCountedAndRemoved) {
    TriangleMesh box = unit_box();
    box.vertices.push_back({0.5f, 1.f, 1.5f});  // 8: on the segment from vertex 0 to vertex 7
    box.vertices.push_back({1, 2, 3});          // 9: a copy of vertex 7's position
    box.triangles.insert(box.triangles.begin() + 3, {1, 1, 2});  // repeated index
    box.triangles.push_back({0, 8, 7});                           // collinear
    box.triangles.push_back({7, 9, 3});                           // two corners at one position
    const MeshReport report = analyse_mesh(box);
    EXPECT_EQ(report.degenerate_triangles, 3u);
    EXPECT_TRUE(mentions(report.describe(), ", 3 degenerate triangles")) << report.describe();

    EXPECT_EQ(remove_degenerate_triangles(box), 3u);
    EXPECT_EQ(box.triangles, unit_box().triangles);  // the rest, in order
    EXPECT_EQ(box.vertices.size(), 10u);
    EXPECT_EQ(remove_degenerate_triangles(box), 0u);
    EXPECT_TRUE(analyse_mesh(box).watertight());
}

TEST(MeshChecks, ThinButRealTrianglesAreNotDegenerate) {
    EXPECT_FALSE(is_degenerate_triangle({0, 0, 0}, {1, 0, 0}, {0.5f, 1e-5f, 0}));
    EXPECT_FALSE(is_degenerate_triangle({1000, 1000, 1000}, {1000.001f, 1000, 1000}, {1000, 1000.001f, 1000}));
    EXPECT_TRUE(is_degenerate_triangle({0, 0, 0}, {1, 0, 0}, {0.5f, 1e-9f, 0}));
    EXPECT_TRUE(is_degenerate_triangle({2, 2, 2}, {2, 2, 2}, {2, 2, 2}));
    TriangleMesh only_bad;
    only_bad.vertices = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}};
    only_bad.triangles = {{0, 1, 2}, {0, 0, 1}};
    EXPECT_EQ(remove_degenerate_triangles(only_bad), 2u);
    EXPECT_TRUE(only_bad.triangles.empty());
}

TEST(MeshChecks, WeldingMergesExactPositionsKeepingFirstAttributes) {
    TriangleMesh m;
    m.vertices = {{0, 0, 0}, {1, 0, 0}, {-0.f, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1e-7f, 0}};
    m.colors = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}, {5, 5, 5}, {6, 6, 6}};
    m.triangles = {{0, 1, 3}, {2, 4, 5}};
    EXPECT_EQ(position_classes(m.vertices), (std::vector<uint32_t>{0, 1, 0, 3, 1, 5}));
    const TriangleMesh w = weld_vertices(m);
    ASSERT_EQ(w.vertices.size(), 4u);
    EXPECT_EQ(w.vertices[3].y, 1e-7f);
    EXPECT_EQ(w.colors, (std::vector<std::array<uint8_t, 3>>{{1, 1, 1}, {2, 2, 2}, {4, 4, 4}, {6, 6, 6}}));
    EXPECT_EQ(w.triangles, (std::vector<std::array<uint32_t, 3>>{{0, 1, 2}, {0, 1, 3}}));
    EXPECT_TRUE(w.normals.empty());
}

TEST(MeshChecks, FitUnitCubeCentresAndScalesTheLargestExtent) {
    TriangleMesh m = make_box_mesh({-1, 0, 2}, {3, 1, 4});
    const TriangleMesh original = m;
    const UnitCubeTransform t = fit_unit_cube(m.bounds());
    EXPECT_FLOAT_EQ(t.scale, 0.25f);
    apply_transform(m, t, true);
    const Box3 unit = m.bounds();
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(unit.center()[k], 0.5f, 1e-6f) << k;
    EXPECT_NEAR(unit.extent().x, 1.f, 1e-6f);
    EXPECT_NEAR(unit.extent().y, 0.25f, 1e-6f);
    EXPECT_NEAR(unit.extent().z, 0.5f, 1e-6f);
    EXPECT_NEAR(unit.lo.x, 0.f, 1e-6f);
    EXPECT_NEAR(unit.hi.x, 1.f, 1e-6f);

    apply_transform(m, t, false);
    for (size_t i = 0; i < m.vertices.size(); ++i) {
        for (int k = 0; k < 3; ++k) EXPECT_NEAR(m.vertices[i][k], original.vertices[i][k], 1e-6f) << i;
    }
}

TEST(MeshChecks, FitUnitCubeWithAMargin) {
    Box3 b;
    b.extend({10, 20, 30});
    b.extend({10, 25, 30});  // flat in x and z: only y has extent
    const UnitCubeTransform t = fit_unit_cube(b, 0.8f);
    EXPECT_FLOAT_EQ(t.scale, 0.8f / 5.f);
    const Vec3 lo = t.to_unit(b.lo), hi = t.to_unit(b.hi);
    EXPECT_NEAR(lo.y, 0.1f, 1e-6f);
    EXPECT_NEAR(hi.y, 0.9f, 1e-6f);
    EXPECT_NEAR(lo.x, 0.5f, 1e-6f);
}

TEST(MeshChecks, FitUnitCubeRejectsEmptyAndPointBoxes) {
    EXPECT_THROW(fit_unit_cube(Box3{}), InputError);
    Box3 point;
    point.extend({1, 2, 3});
    try {
        fit_unit_cube(point);
        ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_TRUE(mentions(e.what(), "no size")) << e.what();
    }
}
