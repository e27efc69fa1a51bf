// The NeRF app's file actions, run on the session's worker with its trainer,
// in the command line's formats: a snapshot (`train --resume`, `render`,
// `mesh`, `export` read it), weights (`export`'s safetensors), a coloured
// mesh in the scene's world frame (`mesh`'s), and a snapshot loaded back as
// the trainer (with the snapshot's config, on the session's backend).
#pragma once

#include "core/json_fields.h"
#include "gui/nerf_setup.h"
#include "nerf/nerf_training.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fusedngp {

enum class NerfFileJobKind { SaveSnapshot, LoadSnapshot, ExportWeights, ExtractMesh };

struct NerfFileJob {
    NerfFileJobKind kind = NerfFileJobKind::SaveSnapshot;
    std::string path;
    uint32_t mesh_resolution = 256;  // cells per axis over the scene box
    float mesh_density = 2.5f;       // the iso value of sigma
    Box3 mesh_crop = unbounded_box();  // model space: the view's crop box
};

// What a job reads of the session: the trainer, its config, the scene and
// the view's background (the snapshot's default view is the first train view).
struct NerfFileContext {
    nerf::NerfTraining& trainer;
    const json& config;
    const NerfAppScene& scene;
    Vec3 background;
};

// Save, export or mesh: writes `job.path` (atomically) and returns the one
// line to report ("saved snapshot fusedngp.fusedngp at step 1200").
// InputError naming the file when it cannot.
std::string write_nerf_file(const NerfFileJob& job, const NerfFileContext& context);

// A snapshot opened as a trainer on `backend` for the session's scene: its
// config (written to `config`) and state. InputError naming the file for a
// file that is not a NeRF snapshot or a scene transform that differs.
std::unique_ptr<nerf::NerfTraining> load_nerf_app_snapshot(const std::string& path, const NerfAppScene& scene,
                                                           const std::string& backend, json& config);

} // namespace fusedngp
