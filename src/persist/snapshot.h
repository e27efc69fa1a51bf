// Snapshots: everything needed to resume training bit-identically, in one
// file. The container is safetensors (the same validated reader as weight
// files): tensor "params" plus one "optimizer.<name>" tensor per optimizer
// buffer, and metadata with the config, mode, data, step and sampler state.
// Written atomically. Layout: docs/SAFETENSORS.md.
#pragma once

#include "backends/backend.h"
#include "core/json_fields.h"
#include "io/safetensors.h"

#include <string>

namespace fusedngp {

struct Snapshot {
    json config;                 // the full effective config
    std::string mode;            // "image"
    std::string data_path;       // the training data it was made from
    uint32_t n_input_dims = 0;
    uint32_t n_output_dims = 0;
    json mode_info;              // mode-specific (image: width, height, channels, colour space)
    std::string backend;         // which backend wrote it
    TrainingState state;
};

void save_snapshot(const std::string& path, const Snapshot& snapshot);
// Throws InputError naming the file: unreadable, corrupt, truncated, not a snapshot.
Snapshot load_snapshot(const std::string& path);
// The same from an already decoded file (`source` names it in errors).
Snapshot snapshot_from_contents(const SafetensorsContents& contents, const std::string& source);

// Does `path` hold a snapshot (rather than exported weights)? Reads the header.
bool is_snapshot_file(const std::string& path);

} // namespace fusedngp
