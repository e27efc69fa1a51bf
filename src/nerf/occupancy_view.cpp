#include "nerf/occupancy_view.h"

#include "nerf/ray_marching_math.h"

#include <algorithm>
#include <cmath>

namespace fusedngp::nerf {

Image render_occupancy_view(const OccupancyGrid& grid, const Camera& camera, Vec3 background, const Box3& crop) {
    Image img;
    img.width = (int)camera.intrinsics.width;
    img.height = (int)camera.intrinsics.height;
    img.channels = 3;
    img.pixels.resize(img.pixel_count() * 3);
    MarchSettings march;
    march.n_cascades = grid.n_cascades();
    march.max_samples = 1;  // the first occupied cell is all the picture needs
    const Box3 bounds = intersection(cascade_box(grid.n_cascades() - 1), crop);
    for (int y = 0; y < img.height; ++y) {
        for (int x = 0; x < img.width; ++x) {
            const Ray ray = camera_ray(camera, (float)x + 0.5f, (float)y + 0.5f);
            Vec3 colour = background;
            march_ray(ray.origin, ray.direction, bounds, 0.f, grid.bits().data(), march, [&](Vec3 p, float, float) {
                for (int a = 0; a < 3; ++a) colour[a] = 0.2f + 0.8f * std::clamp(p[a], 0.f, 1.f);
            }, grid.skip_mask().data());
            for (int c = 0; c < 3; ++c) img.pixels[img.index(x, y, c)] = colour[c];
        }
    }
    return img;
}

std::vector<uint32_t> march_sample_counts(const OccupancyGrid& grid, const Camera& camera, const MarchSettings& march,
                                          const Box3& crop) {
    const int width = (int)camera.intrinsics.width, height = (int)camera.intrinsics.height;
    std::vector<uint32_t> counts((size_t)width * height, 0);
    MarchSettings m = march;
    m.n_cascades = grid.n_cascades();
    const Box3 bounds = intersection(cascade_box(grid.n_cascades() - 1), crop);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const Ray ray = camera_ray(camera, (float)x + 0.5f, (float)y + 0.5f);
            uint32_t& n = counts[(size_t)y * width + x];
            march_ray(ray.origin, ray.direction, bounds, 0.f, grid.bits().data(), m, [&](Vec3, float, float) { ++n; },
                      grid.skip_mask().data());
        }
    }
    return counts;
}

namespace {

// t in [0, 1] -> dark blue, orange, pale yellow.
Vec3 heat(float t) {
    const Vec3 low{0.10f, 0.12f, 0.45f}, mid{0.95f, 0.45f, 0.05f}, high{1.f, 0.97f, 0.75f};
    if (t < 0.5f) return low + (mid - low) * (2 * t);
    return mid + (high - mid) * (2 * t - 1);
}

} // namespace

Image render_march_cost_view(const OccupancyGrid& grid, const Camera& camera, const MarchSettings& march,
                             Vec3 background, const Box3& crop) {
    const std::vector<uint32_t> counts = march_sample_counts(grid, camera, march, crop);
    Image img;
    img.width = (int)camera.intrinsics.width;
    img.height = (int)camera.intrinsics.height;
    img.channels = 3;
    img.pixels.resize(img.pixel_count() * 3);
    const float top = std::log2(1.f + (float)std::max(1, march.max_samples));
    for (size_t i = 0; i < counts.size(); ++i) {
        const Vec3 c = counts[i] == 0 ? background : heat(std::min(1.f, std::log2(1.f + (float)counts[i]) / top));
        for (int k = 0; k < 3; ++k) img.pixels[3 * i + k] = c[k];
    }
    return img;
}

} // namespace fusedngp::nerf
