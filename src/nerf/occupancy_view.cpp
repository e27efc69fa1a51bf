#include "nerf/occupancy_view.h"

#include "nerf/ray_marching_math.h"

#include <algorithm>

namespace fusedngp::nerf {

Image render_occupancy_view(const OccupancyGrid& grid, const Camera& camera, Vec3 background) {
    Image img;
    img.width = (int)camera.intrinsics.width;
    img.height = (int)camera.intrinsics.height;
    img.channels = 3;
    img.pixels.resize(img.pixel_count() * 3);
    MarchSettings march;
    march.n_cascades = grid.n_cascades();
    march.max_samples = 1;  // the first occupied cell is all the picture needs
    const Box3 bounds = cascade_box(grid.n_cascades() - 1);
    for (int y = 0; y < img.height; ++y) {
        for (int x = 0; x < img.width; ++x) {
            const Ray ray = camera_ray(camera, (float)x + 0.5f, (float)y + 0.5f);
            Vec3 colour = background;
            march_ray(ray.origin, ray.direction, bounds, 0.f, grid.bits().data(), march, [&](Vec3 p, float, float) {
                for (int a = 0; a < 3; ++a) colour[a] = 0.2f + 0.8f * std::clamp(p[a], 0.f, 1.f);
            });
            for (int c = 0; c < 3; ++c) img.pixels[img.index(x, y, c)] = colour[c];
        }
    }
    return img;
}

} // namespace fusedngp::nerf
