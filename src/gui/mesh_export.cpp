// The SDF view's "Extract mesh": marching cubes of the model, written in
// the input mesh's coordinates.
#include "gui/sdf_setup.h"

#include "core/errors.h"
#include "geometry/marching_cubes.h"

#if __has_include("geometry/mesh_io.h")
#define FUSEDNGP_GUI_HAVE_MESH_IO 1
#include "geometry/mesh_io.h"
#endif

namespace fusedngp {

size_t export_isosurface(const SdfBatchFn& field, uint32_t resolution, const UnitCubeTransform& transform,
                         const std::string& path) {
#ifdef FUSEDNGP_GUI_HAVE_MESH_IO
    IsosurfaceSettings settings;
    settings.resolution = resolution;  // extract_isosurface checks the range
    TriangleMesh mesh = extract_isosurface(field, settings);
    // from_unit is a uniform scale and a shift: normals keep their direction.
    for (Vec3& v : mesh.vertices) v = transform.from_unit(v);
    save_mesh(path, mesh);
    return mesh.n_triangles();
#else
    (void)field, (void)resolution, (void)transform;
    throw InputError(path + ": this build cannot write meshes yet");
#endif
}

} // namespace fusedngp
