// TriangleMesh: an indexed triangle mesh, the SDF mode's input and the
// marching-cubes output. Loading, saving and checks: geometry/mesh_io.h,
// geometry/mesh_checks.h.
#pragma once

#include "geometry/vec3.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

struct TriangleMesh {
    std::vector<Vec3> vertices;
    std::vector<std::array<uint32_t, 3>> triangles;  // counter-clockwise seen from outside
    std::vector<Vec3> normals;                       // per vertex, optional (empty or vertices.size())
    std::vector<std::array<uint8_t, 3>> colors;      // per vertex, optional (empty or vertices.size())

    size_t n_triangles() const { return triangles.size(); }
    Box3 bounds() const {
        Box3 b;
        for (const Vec3& v : vertices) b.extend(v);
        return b;
    }
};

// Maps the input's coordinates into the unit cube the model learns in, as
// instant-ngp does: the bounding box's centre goes to (0.5, 0.5, 0.5) and its
// largest extent becomes `fill` (1 by default), so unit = (p - center) * scale + 0.5.
// Kept in snapshots so exported meshes come back in the input's coordinates.
struct UnitCubeTransform {
    Vec3 center{0.5f, 0.5f, 0.5f};
    float scale = 1.f;
    Vec3 to_unit(Vec3 p) const { return (p - center) * scale + Vec3{0.5f, 0.5f, 0.5f}; }
    Vec3 from_unit(Vec3 u) const { return (u - Vec3{0.5f, 0.5f, 0.5f}) / scale + center; }
};

} // namespace fusedngp
