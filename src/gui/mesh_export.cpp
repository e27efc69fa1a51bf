// The SDF view's "Extract mesh": the extracted surface written in the input
// mesh's coordinates.
#include "gui/sdf_setup.h"

#include "geometry/mesh_io.h"

namespace fusedngp {

size_t save_in_input_coordinates(TriangleMesh mesh, const UnitCubeTransform& transform, const std::string& path) {
    // from_unit is a uniform scale and a shift: normals keep their direction.
    for (Vec3& v : mesh.vertices) v = transform.from_unit(v);
    save_mesh(path, mesh);
    return mesh.n_triangles();
}

} // namespace fusedngp
