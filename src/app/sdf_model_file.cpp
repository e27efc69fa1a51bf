#include "app/sdf_model_file.h"

#include "core/errors.h"
#include "engine/sdf_backend_tools.h"
#include "modes/sdf_mode.h"
#include "persist/model_file.h"
#include "persist/snapshot.h"

namespace fusedngp {

OpenedSdfModel open_sdf_model(const std::string& path, const std::string& backend_name, bool via_state) {
    return sdf_model_from(open_trained_model(path), path, backend_name, via_state);
}

OpenedSdfModel sdf_model_from(const TrainedModel& t, const std::string& path, const std::string& backend_name,
                              bool via_state) {
    if (t.desc.mode != "sdf") {
        throw InputError(path + ": a model of mode \"" + t.desc.mode + "\", not an SDF (train one on a mesh)");
    }
    OpenedSdfModel m;
    m.transform = unit_cube_transform_from_info(t.desc.mode_info, path);
    // A snapshot restores its whole training state into the backend (the
    // path `train --resume` takes); exported weights set the parameters.
    if (t.from_snapshot && via_state) {
        const Snapshot s = load_snapshot(path);
        m.backend = make_inference_backend(backend_name, t.desc.config, t.desc.n_input_dims, t.desc.n_output_dims, s.state);
    } else {
        m.backend = make_inference_backend(backend_name, t.desc.config, t.desc.n_input_dims, t.desc.n_output_dims,
                                           t.inference_params);
    }
    return m;
}

} // namespace fusedngp
