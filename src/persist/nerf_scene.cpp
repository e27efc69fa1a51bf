#include "persist/nerf_scene.h"

#include "core/errors.h"
#include "geometry/vec3_json.h"
#include "nerf/ray_marching_math.h"
#include "render/camera_io.h"

#include <cmath>

namespace fusedngp {

namespace {

[[noreturn]] void bad_scene(const std::string& source, const std::string& field, const std::string& why) {
    throw InputError(source + ": scene metadata \"" + field + "\": " + why);
}

float finite_number(const json& j, const std::string& key, const std::string& source) {
    if (!j.contains(key) || !j.at(key).is_number()) bad_scene(source, key, "missing or not a number");
    const double v = j.at(key).get<double>();
    if (!std::isfinite(v)) bad_scene(source, key, "not finite");
    return (float)v;
}

Vec3 vec3_field(const json& j, const std::string& key, const std::string& source) {
    if (!j.contains(key) || !j.at(key).is_array() || j.at(key).size() != 3) {
        bad_scene(source, key, "missing or not an array of 3 numbers");
    }
    Vec3 v;
    for (int a = 0; a < 3; ++a) {
        const json& e = j.at(key)[(size_t)a];
        if (!e.is_number() || !std::isfinite(e.get<double>())) bad_scene(source, key, "not an array of 3 finite numbers");
        v[a] = (float)e.get<double>();
    }
    return v;
}

} // namespace

NerfScene nerf_scene_of(const NerfDataset& dataset, const Camera& view, Vec3 background) {
    NerfScene s;
    s.aabb_scale = dataset.aabb_scale;
    s.scale = dataset.scale;
    s.offset = dataset.offset;
    s.camera = view;
    s.background = background;
    return s;
}

void check_nerf_scene_matches(const NerfScene& scene, const NerfDataset& data, const std::string& source) {
    const Vec3 a = scene.offset, b = data.offset;
    if (scene.aabb_scale != data.aabb_scale || scene.scale != data.scale || a.x != b.x || a.y != b.y || a.z != b.z) {
        throw InputError(source + ": the snapshot's scene transform (aabb_scale " + std::to_string(scene.aabb_scale) +
                         ", scale " + std::to_string(scene.scale) + ") differs from " + data.source + "'s (aabb_scale " +
                         std::to_string(data.aabb_scale) + ", scale " + std::to_string(data.scale) + ")");
    }
}

Camera nerf_frame_view(const NerfDataset& dataset, size_t i) {
    Camera c = dataset.frames.at(i).camera;
    c.intrinsics.width = dataset.images.width;
    c.intrinsics.height = dataset.images.height;
    return c;
}

json nerf_scene_to_json(const NerfScene& s) {
    return json{{"aabb_scale", s.aabb_scale},
                {"scale", s.scale},
                {"offset", vec3_json(s.offset)},
                {"camera", camera_to_json(s.camera)},
                {"background", vec3_json(s.background)}};
}

NerfScene nerf_scene_from_json(const json& j, const std::string& source) {
    if (!j.is_object()) throw InputError(source + ": scene metadata is not a JSON object");
    NerfScene s;
    s.aabb_scale = finite_number(j, "aabb_scale", source);
    if (!(s.aabb_scale >= 1 && s.aabb_scale <= 128) || s.aabb_scale != std::floor(s.aabb_scale) ||
        nerf::cascades_for_aabb_scale((int)s.aabb_scale) == 0) {
        bad_scene(source, "aabb_scale", "must be a power of two in [1, 128]");
    }
    s.scale = finite_number(j, "scale", source);
    if (!(s.scale > 0)) bad_scene(source, "scale", "must be > 0");
    s.offset = vec3_field(j, "offset", source);
    s.background = vec3_field(j, "background", source);
    if (!j.contains("camera")) bad_scene(source, "camera", "missing");
    if (!j.at("camera").contains("width") || !j.at("camera").contains("height")) {
        bad_scene(source, "camera", "lacks width and height");
    }
    s.camera = camera_from_json(j.at("camera"), source + ": scene camera", 1, 1);
    return s;
}

NerfDataset frameless_dataset(const NerfScene& scene, const std::string& source) {
    NerfDataset d;
    d.aabb_scale = scene.aabb_scale;
    d.scale = scene.scale;
    d.offset = scene.offset;
    d.images.width = scene.camera.intrinsics.width;
    d.images.height = scene.camera.intrinsics.height;
    d.source = source;
    return d;
}

} // namespace fusedngp
