// What a NeRF model file records about its scene, so `render`, `export` and
// `--resume` can rebuild a trainer without the training images: the world ->
// model transform (aabb_scale, scale, offset; nerf/nerf_dataset.h), a
// representative camera (a default view: the first test frame, else the first
// train frame, at the training images' size) and the background used.
#pragma once

#include "core/json_fields.h"
#include "nerf/nerf_dataset.h"
#include "render/camera.h"

#include <string>

namespace fusedngp {

struct NerfScene {
    float aabb_scale = 1;
    float scale = 0.33f;
    Vec3 offset{0.5f, 0.5f, 0.5f};
    Camera camera;            // intrinsics at the training images' width x height
    Vec3 background{1, 1, 1};
};

// The scene of a loaded dataset with `view` as its default view.
NerfScene nerf_scene_of(const NerfDataset& dataset, const Camera& view, Vec3 background);
// Frame i's camera at the dataset's image size (frames' intrinsics do not carry it).
Camera nerf_frame_view(const NerfDataset& dataset, size_t i);

json nerf_scene_to_json(const NerfScene& scene);
// Throws InputError naming `source` and the field.
NerfScene nerf_scene_from_json(const json& j, const std::string& source);

// A model trained on `scene` continues or renders on `data` only with the
// same transform (the grid's extent and the cameras' coordinates depend on
// it): InputError naming `source` and both transforms otherwise.
void check_nerf_scene_matches(const NerfScene& scene, const NerfDataset& data, const std::string& source);

// A dataset with no frames but the scene's transform: enough to build a
// trainer that renders and loads a state (step() throws).
NerfDataset frameless_dataset(const NerfScene& scene, const std::string& source);

} // namespace fusedngp
