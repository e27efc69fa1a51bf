#include "persist/model_file.h"

#include "backends/cpu_backend.h"
#include "backends/shape_only_data.h"
#include "core/errors.h"
#include "persist/metadata_fields.h"
#include "persist/nerf_weights.h"
#include "persist/snapshot.h"

namespace fusedngp {

namespace {

TrainedModel open_snapshot(const SafetensorsContents& contents, const std::string& path) {
    Snapshot s = snapshot_from_contents(contents, path);
    TrainedModel t;
    t.desc = {s.config, s.mode, s.n_input_dims, s.n_output_dims, s.mode_info};
    t.from_snapshot = true;
    t.step = s.state.step;
    try {
        ShapeOnlyData shapes(s.n_input_dims, s.n_output_dims);
        CpuBackend backend(s.config, shapes, 0);
        backend.load_state(s.state);
        t.inference_params = backend.inference_params();
        t.model = std::make_unique<Model<float>>(s.n_input_dims, s.n_output_dims, s.config, 0);
    } catch (const ConfigError& e) {
        throw InputError(path + ": the config stored in the snapshot is invalid: " + e.what());
    } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
    }
    return t;
}

} // namespace

TrainedModel open_trained_model(const std::string& path) {
    // Both kinds are safetensors files; the metadata says which. Read and
    // decode the file once (snapshots are tens of MB).
    return open_trained_model(read_safetensors(path), path);
}

TrainedModel open_trained_model(const SafetensorsContents& contents, const std::string& path) {
    if (is_nerf_model_file(contents)) {
        throw InputError(path + ": a NeRF model (mode \"nerf\"); this command takes image and SDF models");
    }
    auto fmt = contents.metadata.find(kFormatKey);
    if (fmt == contents.metadata.end()) {
        throw InputError(path + ": not a fusedngp snapshot or weight file (no \"fusedngp.format\" metadata)");
    }
    if (fmt->second == "snapshot-v1") return open_snapshot(contents, path);
    LoadedWeights w = weights_from_contents(contents, path);
    TrainedModel t;
    t.desc = w.desc;
    t.inference_params = std::move(w.params);
    t.model = std::make_unique<Model<float>>(t.desc.n_input_dims, t.desc.n_output_dims, t.desc.config, 0);
    return t;
}

} // namespace fusedngp
