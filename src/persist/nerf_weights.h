// Exported NeRF weights: a standard .safetensors file with one tensor per
// component and layer of both models, "density.<name>" and "colour.<name>"
// (the names of Model::named_tensors(), the optimizers' inference parameters,
// F32 or F16), the occupancy grid "occupancy.density" (F32, [n_cascades,
// 128^3]) and "occupancy.bits" (U8, [n_cascades, 128^3 / 8]), and in
// "__metadata__" the format "nerf-weights-v1", mode "nerf", the config and the
// scene (persist/nerf_scene.h: aabb_scale, scale, offset, default camera,
// background). python/fusedngp_reference.py renders it with numpy.
// Layout: docs/SAFETENSORS.md.
#pragma once

#include "core/json_fields.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "nerf/nerf_training.h"
#include "persist/nerf_scene.h"

#include <string>
#include <vector>

namespace fusedngp {

constexpr const char* kNerfWeightsFormat = "nerf-weights-v1";

// Writes `model`'s inference parameters and occupancy grid.
void export_nerf_weights(const std::string& path, const json& config, const NerfScene& scene,
                         const nerf::NerfTraining& model, TensorDtype dtype);

// The metadata of a NeRF weight file (format checked). InputError naming `source`.
struct NerfWeightsHeader {
    json config;
    NerfScene scene;
};
NerfWeightsHeader nerf_weights_header(const SafetensorsContents& contents, const std::string& source);

// The flat parameters of `model` from the tensors "<prefix>.<name>", each
// checked present with the model's shape.
std::vector<float> nerf_model_params(const SafetensorsContents& contents, const Model<float>& model,
                                     const std::string& prefix, const std::string& source);

// The occupancy grid tensors, checked against the scene's cascade count.
void nerf_occupancy_tensors(const SafetensorsContents& contents, const NerfScene& scene, const std::string& source,
                            std::vector<float>& density, std::vector<uint8_t>& bits);

// Whether a decoded file is a NeRF snapshot or NeRF weights (by its format).
bool is_nerf_model_file(const SafetensorsContents& contents);

} // namespace fusedngp
