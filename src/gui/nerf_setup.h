// The NeRF mode's side of the desktop app: a transforms.json scene (a folder
// or the json) opened as the training data of a NerfSession, the few views
// the live PSNR is measured on, and the trainer settings from the config.
#pragma once

#include "core/json_fields.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_trainer.h"

#include <string>
#include <vector>

namespace fusedngp {

struct NerfAppScene {
    std::string data_path;  // as given: snapshots record it
    NerfDataset train;
    // The live PSNR's views: the first few test views (train views without a
    // test split), downsampled so one evaluation stays short on the CPU.
    NerfDataset eval;
    std::string eval_split;  // "test" or "train"
    json config;
    nerf::NerfTrainerSettings settings;
    // What the camera fits: the unit cube (the loader maps the object there;
    // the box of an aabb_scale > 1 is mostly background).
    Box3 bounds{{0, 0, 0}, {1, 1, 1}};
    std::string description;           // one line for the console and the info panel
};

// Views and the side of their images the live PSNR uses.
struct NerfEvalViews {
    size_t count = 3;
    uint32_t max_side = 64;
};

// Loads and checks the scene and config (InputError / ConfigError naming the
// file or field); recoverable problems are appended to `warnings`.
NerfAppScene load_nerf_scene(const std::string& path, const std::string& config_path, uint32_t rays_per_batch,
                          uint64_t seed, const NerfEvalViews& eval, std::vector<std::string>* warnings);

// The first `count` frames, their images box-filtered by a whole factor so
// neither side exceeds `max_side` (premultiplied, so edges composite right),
// intrinsics scaled to match.
NerfDataset downsampled_views(const NerfDataset& dataset, size_t count, uint32_t max_side);

} // namespace fusedngp
