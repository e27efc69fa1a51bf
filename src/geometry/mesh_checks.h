// Checks on an input mesh before the SDF mode trains on it: is it closed
// (watertight), does it have degenerate triangles, and the transform that
// fits it into the unit cube the model learns in. See docs/SDF.md.
#pragma once

#include "geometry/triangle_mesh.h"
#include "geometry/vec3.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

// What analyse_mesh found. Edges are counted on a position-welded copy of the
// mesh, since meshes often duplicate vertices along seams (UV or normal
// discontinuities) without being open there.
struct MeshReport {
    size_t n_vertices = 0;
    size_t n_triangles = 0;
    size_t boundary_edges = 0;        // used by exactly one triangle
    size_t non_manifold_edges = 0;    // used by more than two triangles
    size_t degenerate_triangles = 0;  // see is_degenerate_triangle
    Box3 bounds;

    // Closed and manifold: every edge is shared by exactly two triangles.
    bool watertight() const { return n_triangles > 0 && boundary_edges == 0 && non_manifold_edges == 0; }
    // One line, e.g. "5804 triangles, 2904 vertices, bounds [-1 -2 -3]-[1 2 3], watertight"
    // or "..., 12 boundary edges, 0 non-manifold edges".
    std::string describe() const;
};

MeshReport analyse_mesh(const TriangleMesh& mesh);

// A triangle is degenerate when it repeats a vertex index or has no area to
// float precision: twice its area (|cross(b - a, c - a)|) is at most 1e-7
// times its longest edge squared, i.e. its height is under 1e-7 of its length.
bool is_degenerate_triangle(Vec3 a, Vec3 b, Vec3 c);

// Drops degenerate triangles (vertices stay); returns how many it dropped.
// The SDF mode warns about them; a mesh left with no triangles is an error.
size_t remove_degenerate_triangles(TriangleMesh& mesh);

// For each vertex, the index of the first vertex at exactly the same
// position (-0 and +0 count as equal), so duplicated seam vertices join up.
std::vector<uint32_t> position_classes(const std::vector<Vec3>& vertices);

// `mesh` with the vertices at exactly the same position merged into the
// first of them (which keeps its normal and color); the order of first
// occurrences is kept, triangles are renumbered.
TriangleMesh weld_vertices(const TriangleMesh& mesh);

// The transform that puts `bounds` centred at (0.5, 0.5, 0.5) with its
// largest extent equal to `fill`. InputError for an empty box or one of zero
// (or non-finite) size.
UnitCubeTransform fit_unit_cube(const Box3& bounds, float fill = 1.f);

// Moves the vertices into the unit cube (to_unit) or back out of it. Normals
// are left as they are: the transform is a uniform scale and a shift.
void apply_transform(TriangleMesh& mesh, const UnitCubeTransform& transform, bool to_unit);

} // namespace fusedngp
