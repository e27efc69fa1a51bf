// The SDF mode's side of the desktop app: a mesh opened as a session's
// training data, and what the 3-D view needs of the scene besides the model
// (ground truth for the IoU readout, the transform exported meshes go back
// through, the mesh's bounds for the camera). The only GUI files that know
// the SDF mode's types are sdf_setup.cpp and mesh_export.cpp.
#pragma once

#include "geometry/sdf_field.h"
#include "geometry/triangle_mesh.h"
#include "gui/training_session.h"

#include <string>
#include <vector>

namespace fusedngp {

struct SdfSceneInfo {
    SdfBatchFn truth;                   // ground-truth signed distance, unit cube
    UnitCubeTransform transform;        // input coordinates -> unit cube
    Box3 bounds{{0, 0, 0}, {1, 1, 1}};  // the mesh in the unit cube
    std::string description;            // one line for the info panel
};

struct SdfSessionData {
    SessionData session;
    SdfSceneInfo scene;
};

// Loads and checks the mesh (throws InputError naming the file); recoverable
// problems are appended to `warnings`. `config` is the full SDF config (its
// "sampling" section, when present, sets the sample mix).
SdfSessionData load_sdf_session_data(const std::string& path, const json& config, std::vector<std::string>* warnings);

// Moves an extracted unit-cube mesh back into the input's coordinates and
// writes it to `path` (.ply .obj .stl .off, geometry/mesh_io.h). Returns the
// triangle count. Throws InputError.
size_t save_in_input_coordinates(TriangleMesh mesh, const UnitCubeTransform& transform, const std::string& path);

} // namespace fusedngp
