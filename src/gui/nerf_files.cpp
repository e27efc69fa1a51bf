#include "gui/nerf_files.h"

#include "core/errors.h"
#include "engine/nerf_training_factory.h"
#include "geometry/mesh_io.h"
#include "nerf/nerf_mesh.h"
#include "persist/nerf_snapshot.h"
#include "persist/nerf_weights.h"

#include <string>

namespace fusedngp {

namespace {

NerfScene recorded_scene(const NerfFileContext& c) {
    return nerf_scene_of(c.scene.train, nerf_frame_view(c.scene.train, 0), c.background);
}

std::string save_snapshot(const NerfFileJob& job, const NerfFileContext& c) {
    const NerfSnapshot snapshot{c.config, c.scene.data_path, c.trainer.backend_name(), c.scene.settings.rays_per_batch,
                                c.scene.settings.seed, recorded_scene(c), c.trainer.save_state()};
    save_nerf_snapshot(job.path, snapshot);
    return "saved snapshot " + job.path + " at step " + std::to_string(snapshot.state.step);
}

std::string export_weights(const NerfFileJob& job, const NerfFileContext& c) {
    export_nerf_weights(job.path, c.config, recorded_scene(c), c.trainer, TensorDtype::F32);
    return "exported weights " + job.path + " at step " + std::to_string(c.trainer.step_count());
}

std::string extract_mesh(const NerfFileJob& job, const NerfFileContext& c) {
    nerf::NerfMeshSettings settings;
    settings.resolution = job.mesh_resolution;
    settings.density = job.mesh_density;
    settings.crop = job.mesh_crop;
    const TriangleMesh mesh = nerf::extract_nerf_world_mesh(c.trainer, settings, c.scene.train);
    if (mesh.triangles.empty()) {
        throw InputError(job.path + ": the density iso-surface sigma = " + std::to_string(job.mesh_density) +
                         " is empty (nothing written); train longer or lower the density");
    }
    save_mesh(job.path, mesh);
    return "extracted " + std::to_string(mesh.triangles.size()) + " triangles at " +
           std::to_string(job.mesh_resolution) + "^3 -> " + job.path;
}

} // namespace

std::string write_nerf_file(const NerfFileJob& job, const NerfFileContext& context) {
    switch (job.kind) {
    case NerfFileJobKind::SaveSnapshot: return save_snapshot(job, context);
    case NerfFileJobKind::ExportWeights: return export_weights(job, context);
    case NerfFileJobKind::ExtractMesh: return extract_mesh(job, context);
    case NerfFileJobKind::LoadSnapshot: break;
    }
    throw InputError(job.path + ": loading is not a write");
}

std::unique_ptr<nerf::NerfTraining> load_nerf_app_snapshot(const std::string& path, const NerfAppScene& scene,
                                                           const std::string& backend, json& config) {
    const NerfSnapshot snapshot = load_nerf_snapshot(path);
    check_nerf_scene_matches(snapshot.scene, scene.train, path);
    const nerf::NerfTrainerSettings settings = nerf::nerf_settings_from_config(
        snapshot.config, scene.train.aabb_scale, scene.settings.rays_per_batch, scene.settings.seed);
    std::unique_ptr<nerf::NerfTraining> trainer = create_nerf_training(backend, scene.train, snapshot.config, settings);
    try {
        trainer->load_state(snapshot.state);
    } catch (const InputError& e) {
        throw InputError(path + ": " + e.what());
    }
    config = snapshot.config;
    return trainer;
}

} // namespace fusedngp
