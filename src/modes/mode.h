// Modes: what kind of signal a model learns. Each mode is its own unit
// (image and sdf now; nerf next) that uses the components and a Backend.
#pragma once

#include "core/json_fields.h"

#include <string>
#include <vector>

namespace fusedngp {

struct ModeSpec {
    std::string name;        // "image", "sdf", "nerf"
    uint32_t n_input_dims;   // coordinates fed to the encoding
    uint32_t n_output_dims;  // default outputs (image: set from the file's channels)
    bool implemented;        // trainable in this version
};

const std::vector<ModeSpec>& mode_specs();
// Throws ConfigError("mode", ...) listing the modes for an unknown name.
const ModeSpec& mode_spec(const std::string& name);

// Picks the mode from a data path: image extensions -> image, meshes
// (.obj .ply .stl .off, and .glb/.gltf, which the mesh loader refuses with a clear error) -> sdf,
// a directory or .json with transforms -> nerf. Throws InputError if unknown.
std::string infer_mode(const std::string& data_path);

// The effective config: `config_path` (may be empty for the mode's shipped
// default) with missing sections filled from the mode's default.
json load_mode_config(const std::string& mode, const std::string& config_path);

} // namespace fusedngp
