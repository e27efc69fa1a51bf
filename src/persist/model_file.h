// Opening a trained model from either kind of file we write: a training
// snapshot or exported weights. `render` and `export` accept both.
#pragma once

#include "model/model.h"
#include "persist/weights.h"

#include <memory>
#include <string>

namespace fusedngp {

struct TrainedModel {
    ModelDescription desc;
    std::unique_ptr<Model<float>> model;
    std::vector<float> inference_params;  // EMA average when the optimizer keeps one
    bool from_snapshot = false;
    uint64_t step = 0;                    // snapshots only
};

// Throws InputError naming the file for anything unreadable or inconsistent.
TrainedModel open_trained_model(const std::string& path);
// The same from an already decoded file (`path` names it in errors).
TrainedModel open_trained_model(const SafetensorsContents& contents, const std::string& path);

} // namespace fusedngp
