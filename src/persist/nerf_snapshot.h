// NeRF snapshots: everything needed to resume NeRF training bit-identically
// (CPU) and to render without the training images, in one safetensors file,
// written atomically. Tensors: "density.params", "colour.params", one
// "density.optimizer.<name>" / "colour.optimizer.<name>" per optimizer
// buffer, "occupancy.density" (F32) and "occupancy.bits" (U8). Metadata:
// format "nerf-snapshot-v1", mode "nerf", the config, data path, backend,
// step, rng state, rays per batch, seed and the scene (persist/nerf_scene.h).
// Layout: docs/SAFETENSORS.md.
#pragma once

#include "core/json_fields.h"
#include "io/safetensors.h"
#include "persist/metadata_fields.h"
#include "nerf/nerf_training.h"
#include "persist/nerf_scene.h"

#include <string>

namespace fusedngp {

constexpr const char* kNerfSnapshotFormat = "nerf-snapshot-v1";

struct NerfSnapshot {
    json config;              // the full effective config
    std::string data_path;    // the --data it was trained on
    std::string backend;      // which backend wrote it
    uint32_t rays_per_batch = 0;
    uint64_t seed = 0;
    NerfScene scene;
    nerf::NerfTrainingState state;
};

void save_nerf_snapshot(const std::string& path, const NerfSnapshot& snapshot);
// Throws InputError naming the file: unreadable, truncated, not a NeRF
// snapshot, missing or mis-sized tensors, bad metadata.
NerfSnapshot load_nerf_snapshot(const std::string& path);
// The same from an already decoded file (`source` names it in errors).
NerfSnapshot nerf_snapshot_from_contents(const SafetensorsContents& contents, const std::string& source);

// The occupancy grid's sizes for a scene: n_cascades * 128^3 densities and
// n_cascades * 128^3 / 8 bytes of bits.
size_t occupancy_cell_count(float aabb_scale);

// The stored bitfield as U8 values (0..255) and back.
std::vector<float> bytes_as_values(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> values_as_bytes(const std::vector<float>& values);


} // namespace fusedngp
