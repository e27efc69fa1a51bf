// Opening a trained NeRF model from either kind of file we write (a NeRF
// snapshot or exported NeRF weights) as a ready NerfTraining on any backend,
// without the training images: `render`, `export` and the app share this.
// A snapshot restores its whole training state (load_state); weights set the
// inference parameters and the occupancy grid into a fresh trainer (step 0,
// so the inference parameters are the stored ones).
#pragma once

#include "io/safetensors.h"
#include "nerf/nerf_training.h"
#include "persist/nerf_scene.h"

#include <memory>
#include <string>

namespace fusedngp {

struct OpenedNerfModel {
    json config;
    NerfScene scene;
    bool from_snapshot = false;
    uint64_t step = 0;                             // snapshots only
    std::string data_path;                         // snapshots only
    std::unique_ptr<NerfDataset> dataset;          // frameless; the trainer keeps a reference to it
    std::unique_ptr<nerf::NerfTraining> trainer;   // declared after dataset, so destroyed first
};

// Throws InputError naming the file for anything unreadable, inconsistent or
// not a NeRF model; the factory's errors for the backend.
OpenedNerfModel open_nerf_model(const std::string& path, const std::string& backend);
// The same from an already decoded file.
OpenedNerfModel nerf_model_from_contents(const SafetensorsContents& contents, const std::string& path,
                                         const std::string& backend);

} // namespace fusedngp
