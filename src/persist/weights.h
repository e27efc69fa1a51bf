// Exported weights: a standard .safetensors file with one tensor per
// component and layer ("encoding.grid.level03", "network.layers.0.weight"),
// F32 or F16, and the full config in "__metadata__". Loadable by any
// safetensors reader; python/fusedngp_reference.py evaluates it with numpy.
// Layout: docs/SAFETENSORS.md.
#pragma once

#include "core/json_fields.h"
#include "io/safetensors.h"
#include "model/model.h"

#include <string>

namespace fusedngp {

struct ModelDescription {
    json config;
    std::string mode;
    uint32_t n_input_dims = 0;
    uint32_t n_output_dims = 0;
    json mode_info;
};

// Writes the model's parameters `params` (use the inference parameters, e.g.
// the EMA average) under the names of model.named_tensors().
void export_weights(const std::string& path, const ModelDescription& desc, const Model<float>& model,
                    const std::vector<float>& params, TensorDtype dtype);

struct LoadedWeights {
    ModelDescription desc;
    std::vector<float> params;  // flat, in the model's layout
};

// Reads a weight file and rebuilds the flat parameter array by tensor name,
// checking every expected tensor is present with the expected shape.
LoadedWeights load_weights(const std::string& path);
// The same from an already decoded file (`source` names it in errors).
LoadedWeights weights_from_contents(const SafetensorsContents& contents, const std::string& source);

} // namespace fusedngp
