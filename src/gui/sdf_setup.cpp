#include "gui/sdf_setup.h"

#include "core/errors.h"

// Until the SDF mode's geometry lands (BVH ground truth, sampling, mesh
// checks: included by modes/sdf_mode.h), a mesh cannot be opened; the rest
// of the app builds and runs without it.
#if __has_include("geometry/signed_distance.h") && __has_include("geometry/sdf_sampling.h") && \
    __has_include("geometry/mesh_checks.h") && __has_include("geometry/surface_sampler.h")
#define FUSEDNGP_GUI_HAVE_SDF_MODE 1
#include "modes/sdf_mode.h"
#endif

#include <cstdio>

namespace fusedngp {

#ifdef FUSEDNGP_GUI_HAVE_SDF_MODE

SdfSessionData load_sdf_session_data(const std::string& path, const json& config, std::vector<std::string>* warnings) {
    SdfScene scene = load_sdf_scene(path, warnings);
    SdfSessionData out;
    out.scene.transform = scene.transform;
    out.scene.bounds = scene.mesh.bounds();
    char line[256];
    std::snprintf(line, sizeof line, "mesh %zu triangles, %zu vertices", scene.mesh.n_triangles(),
                  scene.mesh.vertices.size());
    out.scene.description = line;
    out.session.mode = "sdf";
    out.session.path = scene.path.empty() ? path : scene.path;
    out.session.mode_info = sdf_mode_info(scene);
    auto data = std::make_unique<SdfTrainingData>(std::move(scene), sdf_sampling_from_config(config));
    const GroundTruthSdf* truth = &data->truth();
    out.scene.truth = truth->field();  // shares the BVH: valid as long as the function lives
    out.session.data = std::move(data);
    return out;
}

#else

SdfSessionData load_sdf_session_data(const std::string& path, const json&, std::vector<std::string>*) {
    throw InputError(path + ": this build has no SDF mode yet (meshes cannot be trained)");
}

#endif

} // namespace fusedngp
