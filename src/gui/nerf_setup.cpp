#include "gui/nerf_setup.h"

#include "modes/mode.h"
#include "nerf/nerf_training.h"

#include <algorithm>
#include <cstdio>

namespace fusedngp {

namespace {

// One output pixel: the mean of a factor x factor block, averaged premultiplied.
void box_filter_pixel(const uint8_t* frame, uint32_t width, uint32_t x0, uint32_t y0, uint32_t factor, uint8_t* out) {
    double rgb[3] = {0, 0, 0}, alpha = 0;
    for (uint32_t y = y0; y < y0 + factor; ++y) {
        for (uint32_t x = x0; x < x0 + factor; ++x) {
            const uint8_t* p = frame + ((size_t)y * width + x) * 4;
            const double a = p[3] / 255.0;
            for (int c = 0; c < 3; ++c) rgb[c] += p[c] * a;
            alpha += a;
        }
    }
    for (int c = 0; c < 3; ++c) out[c] = (uint8_t)std::clamp(alpha > 0 ? rgb[c] / alpha + 0.5 : 0.0, 0.0, 255.0);
    out[3] = (uint8_t)std::clamp(255.0 * alpha / (factor * factor) + 0.5, 0.0, 255.0);
}

} // namespace

NerfDataset downsampled_views(const NerfDataset& dataset, size_t count, uint32_t max_side) {
    NerfDataset out = dataset;
    count = std::min(count, dataset.frames.size());
    out.frames.resize(count);
    const uint32_t side = std::max(dataset.images.width, dataset.images.height);
    const uint32_t factor = std::max(1u, (side + max_side - 1) / std::max(max_side, 1u));
    out.images.width = dataset.images.width / factor;
    out.images.height = dataset.images.height / factor;
    out.images.rgba.assign(count * out.images.frame_bytes(), 0);
    for (size_t f = 0; f < count; ++f) {
        uint8_t* dst = out.images.rgba.data() + f * out.images.frame_bytes();
        for (uint32_t y = 0; y < out.images.height; ++y)
            for (uint32_t x = 0; x < out.images.width; ++x)
                box_filter_pixel(dataset.images.frame(f), dataset.images.width, x * factor, y * factor, factor,
                                 dst + ((size_t)y * out.images.width + x) * 4);
        CameraIntrinsics& k = out.frames[f].camera.intrinsics;
        k.width = out.images.width;
        k.height = out.images.height;
        k.fx /= (float)factor;
        k.fy /= (float)factor;
        k.cx /= (float)factor;
        k.cy /= (float)factor;
    }
    return out;
}

NerfAppScene load_nerf_scene(const std::string& path, const std::string& config_path, uint32_t rays_per_batch,
                          uint64_t seed, const NerfEvalViews& eval, std::vector<std::string>* warnings) {
    const NerfSplitPaths paths = resolve_nerf_paths(path);
    NerfAppScene scene;
    scene.data_path = path;
    scene.train = load_nerf_dataset(paths.train, {}, warnings);
    const bool has_test = !paths.test.empty();
    const NerfDataset test = has_test ? load_nerf_dataset(paths.test, {}, warnings) : NerfDataset{};
    scene.eval = downsampled_views(has_test ? test : scene.train, eval.count, eval.max_side);
    scene.eval_split = has_test ? "test" : "train";
    scene.config = nerf::nerf_config_for_data(load_mode_config("nerf", config_path), scene.train);
    scene.settings = nerf::nerf_settings_from_config(scene.config, scene.train.aabb_scale, rays_per_batch, seed);
    char line[256];
    std::snprintf(line, sizeof line, "%zu train views %ux%u, aabb_scale %g; PSNR on %zu %s views at %ux%u",
                  scene.train.frames.size(), scene.train.images.width, scene.train.images.height,
                  (double)scene.train.aabb_scale, scene.eval.frames.size(), scene.eval_split.c_str(),
                  scene.eval.images.width, scene.eval.images.height);
    scene.description = line;
    return scene;
}

} // namespace fusedngp
