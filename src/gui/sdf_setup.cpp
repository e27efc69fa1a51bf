#include "gui/sdf_setup.h"

#include "modes/sdf_mode.h"

#include <cstdio>

namespace fusedngp {

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
    out.scene.truth = data->truth().field();  // shares the BVH: valid as long as the function lives
    out.session.data = std::move(data);
    return out;
}

} // namespace fusedngp
