// Isosurface extraction on the CPU (geometry/marching_cubes.h): analytic
// shapes with known geometry and topology, slab independence, level
// handling and input checks.
#include "geometry/marching_cubes.h"

#include "core/errors.h"
#include "core/math_constants.h"
#include "geometry/isosurface_math.h"
#include "isosurface_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace fusedngp {
namespace {

using test::batch_field;

const Vec3 kCenter{0.5f, 0.5f, 0.5f};


IsosurfaceSettings settings_at(uint32_t resolution, uint32_t slab_cells = 0, float level = 0.f) {
    IsosurfaceSettings s;
    s.resolution = resolution;
    s.slab_cells = slab_cells;
    s.level = level;
    return s;
}

// Vertices within `tolerance` of the sphere of radius r, normals along the
// radius, triangles facing away from the centre.
void expect_on_sphere(const TriangleMesh& mesh, Vec3 center, float r, float tolerance) {
    ASSERT_EQ(mesh.normals.size(), mesh.vertices.size());
    float worst_distance = 0, worst_normal_dot = 1;
    for (size_t v = 0; v < mesh.vertices.size(); ++v) {
        const Vec3 radial = mesh.vertices[v] - center;
        worst_distance = std::max(worst_distance, std::fabs(length(radial) - r));
        worst_normal_dot = std::min(worst_normal_dot, dot(mesh.normals[v], normalize(radial)));
    }
    EXPECT_LE(worst_distance, tolerance);
    EXPECT_GT(worst_normal_dot, 0.99f);  // outward and close to the exact normal
    size_t inward = 0;
    for (const auto& t : mesh.triangles) {
        const Vec3 a = mesh.vertices[t[0]], b = mesh.vertices[t[1]], c = mesh.vertices[t[2]];
        inward += dot(cross(b - a, c - a), (a + b + c) / 3.f - center) < 0;
    }
    EXPECT_EQ(inward, 0u);
}

TEST(MarchingCubes, SphereIsClosedOnTheSurfaceWithTheRightVolume) {
    const float r = 0.3f;
    const TriangleMesh mesh = extract_isosurface(test::sphere_field(kCenter, r), settings_at(64));
    ASSERT_GT(mesh.triangles.size(), 1000u);
    expect_on_sphere(mesh, kCenter, r, 1e-3f);
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    EXPECT_EQ(test::euler_characteristic(mesh), 2);
    const double exact = 4.0 / 3.0 * kPiFloat * r * r * r, volume = test::signed_volume(mesh);
    EXPECT_GT(volume, 0);
    EXPECT_NEAR(volume, exact, 0.02 * exact);
}

TEST(MarchingCubes, TorusIsClosedWithEulerCharacteristicZero) {
    const TriangleMesh mesh = extract_isosurface(batch_field([](Vec3 p) { return test::torus_sdf(p, kCenter, 0.25f, 0.1f); }),
                                                 settings_at(64));
    ASSERT_GT(mesh.triangles.size(), 1000u);
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    EXPECT_EQ(test::euler_characteristic(mesh), 0);
    const double exact = 2 * kPiFloat * kPiFloat * 0.25 * 0.1 * 0.1;  // 2 pi^2 R r^2
    EXPECT_NEAR(test::signed_volume(mesh), exact, 0.03 * exact);
}

TEST(MarchingCubes, SlabSplitDoesNotChangeTheMesh) {
    const SdfBatchFn field = test::sphere_field({0.47f, 0.52f, 0.5f}, 0.31f);
    const TriangleMesh whole = extract_isosurface(field, settings_at(48));
    ASSERT_EQ(plan_isosurface_slabs(settings_at(48)).size(), 1u);
    for (uint32_t slab_cells : {1u, 7u}) {
        SCOPED_TRACE(slab_cells);
        ASSERT_GT(plan_isosurface_slabs(settings_at(48, slab_cells)).size(), 1u);
        const TriangleMesh split = extract_isosurface(field, settings_at(48, slab_cells));
        test::expect_same_mesh(whole, split, 0.f, 0.f);  // bit for bit: the same values, the same math
    }
    // No vertex is duplicated, at the seams or anywhere.
    EXPECT_EQ(test::distinct_positions(whole), whole.vertices.size());
    EXPECT_TRUE(test::closed_and_consistently_oriented(whole));
}

TEST(MarchingCubes, AutoSlabsAreBoundedAndEvaluateEachPointOnce) {
    IsosurfaceSettings s = settings_at(1024);
    const uint32_t cells = isosurface_slab_cells(s);
    EXPECT_LE((size_t)(cells + 3) * 1025 * 1025 * sizeof(float), size_t(64) << 20);
    EXPECT_GE(cells, 8u);
    EXPECT_EQ(isosurface_slab_cells(settings_at(64)), 64u);  // small lattices: one slab
    // Every lattice plane is evaluated once: new planes of consecutive slabs tile 0..res.
    s.resolution = 100;
    s.slab_cells = 7;
    uint32_t next = 0;
    for (const IsosurfaceSlab& slab : plan_isosurface_slabs(s)) {
        EXPECT_EQ(slab.first_new_plane, next);
        EXPECT_LE(slab.plane_lo, slab.first_new_plane);
        next = slab.plane_hi + 1;
    }
    EXPECT_EQ(next, 101u);

    // A field that counts its evaluations.
    size_t evaluated = 0;
    const SdfBatchFn counting = [&](const Matrix<float>& points, Matrix<float>& values) {
        evaluated += (size_t)points.rows();
        test::sphere_field(kCenter, 0.3f)(points, values);
    };
    extract_isosurface(counting, settings_at(20, 3));
    EXPECT_EQ(evaluated, 21u * 21u * 21u);
}

TEST(MarchingCubes, LevelOffsetsTheSurface) {
    const float r = 0.25f, level = 0.05f;
    const TriangleMesh mesh = extract_isosurface(test::sphere_field(kCenter, r), settings_at(64, 0, level));
    expect_on_sphere(mesh, kCenter, r + level, 1e-3f);
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    const double exact = 4.0 / 3.0 * kPiFloat * std::pow(r + level, 3);
    EXPECT_NEAR(test::signed_volume(mesh), exact, 0.02 * exact);
}

TEST(MarchingCubes, NonCubicBoxKeepsTheSphere) {
    IsosurfaceSettings s = settings_at(40, 9);
    s.box = Box3{{-1.f, -0.5f, -2.f}, {1.f, 0.5f, 2.f}};
    const TriangleMesh mesh = extract_isosurface(test::sphere_field({0, 0, 0}, 0.4f), s);
    expect_on_sphere(mesh, {0, 0, 0}, 0.4f, 5e-3f);
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    EXPECT_EQ(test::euler_characteristic(mesh), 2);
}

TEST(MarchingCubes, FieldWithoutCrossingsGivesAnEmptyMesh) {
    for (float value : {1.f, -1.f}) {
        const TriangleMesh mesh = extract_isosurface(batch_field([=](Vec3) { return value; }), settings_at(16, 5));
        EXPECT_TRUE(mesh.vertices.empty());
        EXPECT_TRUE(mesh.triangles.empty());
        EXPECT_TRUE(mesh.normals.empty());
    }
}

TEST(MarchingCubes, ValuesEqualToTheLevelCountAsOutside) {
    // A max-norm cube whose faces pass exactly through lattice points
    // (|k/8 - 0.5| = 0.25 at k = 2, 6): those points are outside, so the
    // surface runs through them and stays closed.
    const SdfBatchFn cube = batch_field([](Vec3 p) {
        return std::max(std::fabs(p.x - 0.5f), std::max(std::fabs(p.y - 0.5f), std::fabs(p.z - 0.5f))) - 0.25f;
    });
    const TriangleMesh mesh = extract_isosurface(cube, settings_at(8));
    ASSERT_FALSE(mesh.triangles.empty());
    for (const Vec3& v : mesh.vertices) {
        EXPECT_FLOAT_EQ(std::max(std::fabs(v.x - 0.5f), std::max(std::fabs(v.y - 0.5f), std::fabs(v.z - 0.5f))), 0.25f);
    }
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    EXPECT_EQ(test::euler_characteristic(mesh), 2);
}

TEST(MarchingCubes, CoarsestLatticeStillClosed) {
    const TriangleMesh mesh = extract_isosurface(test::sphere_field(kCenter, 0.3f), settings_at(2));
    ASSERT_FALSE(mesh.triangles.empty());  // only the centre point is inside
    EXPECT_EQ(mesh.vertices.size(), 14u);  // its 14 Kuhn edges (6 axis, 6 face and 2 body diagonals) are crossed
    EXPECT_TRUE(test::closed_and_consistently_oriented(mesh));
    EXPECT_EQ(test::euler_characteristic(mesh), 2);
    EXPECT_GT(test::signed_volume(mesh), 0);
}

TEST(MarchingCubes, ResolutionOutsideRangeThrows) {
    const SdfBatchFn field = test::sphere_field(kCenter, 0.3f);
    for (uint32_t bad : {0u, 1u, 1025u}) {
        try {
            extract_isosurface(field, settings_at(bad));
            ADD_FAILURE() << "no error for resolution " << bad;
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()), "--resolution must be between 2 and 1024, got " + std::to_string(bad));
        }
    }
    IsosurfaceSettings flat = settings_at(8);
    flat.box = Box3{{0, 0, 0}, {1, 0, 1}};
    EXPECT_THROW(extract_isosurface(field, flat), InputError);
}

TEST(MarchingCubes, KuhnTetrahedraTileTheCell) {
    // The 6 tetrahedra are distinct paths 0 -> 7 with positive volumes summing
    // to the cell's (each 1/6), and every edge joins corners whose bits nest.
    std::set<std::array<uint32_t, 4>> seen;
    int volume6_sum = 0;
    for (uint32_t tet = 0; tet < 6; ++tet) {
        std::array<uint32_t, 4> c;
        for (uint32_t slot = 0; slot < 4; ++slot) c[slot] = iso::kuhn_corner(tet, slot);
        seen.insert(c);
        for (uint32_t a = 0; a < 4; ++a) {
            for (uint32_t b = a + 1; b < 4; ++b) EXPECT_EQ(c[a] & c[b], c[a]);
        }
        auto coords = [](uint32_t k) { return Vec3{(float)iso::corner_x(k), (float)iso::corner_y(k), (float)iso::corner_z(k)}; };
        const Vec3 p0 = coords(c[0]);
        volume6_sum += (int)std::lround(std::fabs(dot(coords(c[1]) - p0, cross(coords(c[2]) - p0, coords(c[3]) - p0))));
    }
    EXPECT_EQ(seen.size(), 6u);
    EXPECT_EQ(volume6_sum, 6);
}

TEST(MarchingCubes, CellCountsMatchTheTrianglesWritten) {
    // The GPU sizes its output from cell_triangle_count and point masks, then
    // writes with cell_triangles / point_vertices: over every inside/outside
    // pattern of one cell the two must agree, and the ids must be in range.
    std::vector<float> values(2 * 2 * 2);
    for (uint32_t pattern = 0; pattern < 256; ++pattern) {
        for (uint32_t c = 0; c < 8; ++c) values[c] = (pattern >> c) & 1u ? -1.f : 1.f;
        const iso::SlabValues s{values.data(), 1, 0, 1, {0, 0, 0}, {1, 1, 1}, 0.f};
        std::vector<uint8_t> masks(8);
        std::vector<uint32_t> offsets(9, 0);
        for (uint32_t p = 0; p < 8; ++p) {
            masks[p] = (uint8_t)iso::point_edge_mask(s, p & 1u, (p >> 1) & 1u, p >> 2);
            offsets[p + 1] = offsets[p] + iso::popcount8(masks[p]);
            Vec3 positions[7], normals[7];
            iso::point_vertices(s, p & 1u, (p >> 1) & 1u, p >> 2, masks[p], positions, normals);
            for (uint32_t v = 0; v < iso::popcount8(masks[p]); ++v) EXPECT_NEAR(length(normals[v]), 1.f, 1e-6f);
        }
        const iso::VertexIds ids{masks.data(), offsets.data(), 0, 0};
        iso::Triangle out[12];
        const uint32_t written = iso::cell_triangles(s, ids, 0, 0, 0, out);
        EXPECT_EQ(written, iso::cell_triangle_count(s, 0, 0, 0)) << "pattern " << pattern;
        for (uint32_t t = 0; t < written; ++t) {
            for (uint32_t v : out[t].v) EXPECT_LT(v, offsets[8]) << "pattern " << pattern;
        }
    }
}

} // namespace
} // namespace fusedngp
