#include "app/sdf_model_file.h"

#include "core/errors.h"
#include "engine/sdf_backend_tools.h"
#include "modes/sdf_mode.h"
#include "persist/model_file.h"

namespace fusedngp {

OpenedSdfModel open_sdf_model(const std::string& path, const std::string& backend_name) {
    return sdf_model_from(open_trained_model(path), path, backend_name);
}

OpenedSdfModel sdf_model_from(const TrainedModel& t, const std::string& path, const std::string& backend_name) {
    if (t.desc.mode != "sdf") {
        throw InputError(path + ": a model of mode \"" + t.desc.mode + "\", not an SDF (train one on a mesh)");
    }
    OpenedSdfModel m;
    m.transform = unit_cube_transform_from_info(t.desc.mode_info, path);
    m.backend = make_inference_backend(backend_name, t.desc.config, t.desc.n_input_dims, t.desc.n_output_dims,
                                       t.inference_params);
    return m;
}

} // namespace fusedngp
