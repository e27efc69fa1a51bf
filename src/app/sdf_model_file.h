// Opening a trained SDF model (snapshot or exported weights) for `mesh` and
// `render`: the unit-cube transform back to the input's coordinates and an
// inference backend (the GPU when there is one, unless --backend says cpu).
#pragma once

#include "engine/sdf_backend_tools.h"
#include "geometry/triangle_mesh.h"
#include "persist/model_file.h"

#include <memory>
#include <string>

namespace fusedngp {

struct OpenedSdfModel {
    UnitCubeTransform transform;
    InferenceBackend backend;
};

// Throws InputError naming the file when it is unreadable or not an SDF model.
// A snapshot's training state is restored into the backend unless
// `via_state` is false (then its inference parameters are set, as for
// exported weights).
OpenedSdfModel open_sdf_model(const std::string& path, const std::string& backend_name, bool via_state = true);
// The same for a model already read from `path`.
OpenedSdfModel sdf_model_from(const TrainedModel& t, const std::string& path, const std::string& backend_name,
                              bool via_state = true);

} // namespace fusedngp
