#include "engine/nerf_model_file.h"

#include "core/errors.h"
#include "engine/nerf_training_factory.h"
#include "persist/metadata_fields.h"
#include "persist/nerf_snapshot.h"
#include "persist/nerf_weights.h"

namespace fusedngp {

namespace {

// A trainer for the scene without its images; a bad stored config is the file's fault.
void build_trainer(OpenedNerfModel& m, const std::string& path, const std::string& backend, uint32_t rays_per_batch,
                   uint64_t seed) {
    m.dataset = std::make_unique<NerfDataset>(frameless_dataset(m.scene, path));
    try {
        m.trainer = create_nerf_training(backend, *m.dataset, m.config,
                                         nerf::nerf_settings_from_config(m.config, m.scene.aabb_scale, rays_per_batch, seed));
    } catch (const ConfigError& e) {
        throw InputError(path + ": the config stored in the file is invalid: " + e.what());
    }
}

void load_into(nerf::NerfTraining& trainer, const nerf::NerfTrainingState& state, const std::string& path) {
    try {
        trainer.load_state(state);
    } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
    }
}

OpenedNerfModel from_snapshot(const SafetensorsContents& c, const std::string& path, const std::string& backend) {
    NerfSnapshot s = nerf_snapshot_from_contents(c, path);
    OpenedNerfModel m;
    m.config = s.config;
    m.scene = s.scene;
    m.from_snapshot = true;
    m.step = s.state.step;
    m.data_path = s.data_path;
    build_trainer(m, path, backend, s.rays_per_batch, s.seed);
    load_into(*m.trainer, s.state, path);
    return m;
}

OpenedNerfModel from_weights(const SafetensorsContents& c, const std::string& path, const std::string& backend) {
    NerfWeightsHeader h = nerf_weights_header(c, path);
    OpenedNerfModel m;
    m.config = h.config;
    m.scene = h.scene;
    build_trainer(m, path, backend, 1, 0);
    // A fresh trainer's state has the right optimizer buffers; at step 0 the
    // inference parameters are the parameters themselves.
    nerf::NerfTrainingState state = m.trainer->save_state();
    state.step = 0;
    state.density_params = nerf_model_params(c, m.trainer->density_model(), "density", path);
    state.colour_params = nerf_model_params(c, m.trainer->colour_model(), "colour", path);
    nerf_occupancy_tensors(c, m.scene, path, state.grid_density, state.grid_bits);
    load_into(*m.trainer, state, path);
    return m;
}

} // namespace

OpenedNerfModel open_nerf_model(const std::string& path, const std::string& backend) {
    return nerf_model_from_contents(read_safetensors(path), path, backend);
}

OpenedNerfModel nerf_model_from_contents(const SafetensorsContents& c, const std::string& path,
                                         const std::string& backend) {
    auto fmt = c.metadata.find(kFormatKey);
    if (fmt != c.metadata.end() && fmt->second == kNerfWeightsFormat) return from_weights(c, path, backend);
    return from_snapshot(c, path, backend);  // names the file's format when it is no NeRF snapshot either
}

} // namespace fusedngp
