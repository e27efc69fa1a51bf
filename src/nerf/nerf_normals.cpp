#include "nerf/nerf_normals.h"

#include "nerf/host_inference.h"

#include <cmath>
#include <memory>
#include <utility>

namespace fusedngp::nerf {

SigmaField host_sigma_field(const NerfTraining& training, std::vector<float> density_params) {
    auto params = std::make_shared<const std::vector<float>>(std::move(density_params));
    const Model<float>* model = &training.density_model();
    return [model, params](const Matrix<float>& points, std::vector<float>& sigma) {
        Matrix<float> out;
        parallel_inference(*model, params->data(), points, out);
        sigma.resize((size_t)points.rows());
        for (Eigen::Index i = 0; i < points.rows(); ++i) sigma[(size_t)i] = sigma_of_raw(out(i, 0));
    };
}

Image normals_from_depth(const SigmaField& sigma, const Camera& camera, const Image& depth, Vec3 background, float h) {
    Image rgb;
    rgb.width = depth.width;
    rgb.height = depth.height;
    rgb.channels = 3;
    rgb.pixels.resize(depth.pixel_count() * 3);
    // Six points around each surface point: p +- h along x, y, z.
    std::vector<size_t> hits;
    std::vector<Vec3> dirs;
    for (size_t i = 0; i < depth.pixel_count(); ++i) {
        const float d = depth.pixels[i];
        if (d > 0) hits.push_back(i);
        for (int c = 0; c < 3; ++c) rgb.pixels[3 * i + c] = background[c];
    }
    Matrix<float> points((Eigen::Index)(6 * hits.size()), 3);
    for (size_t k = 0; k < hits.size(); ++k) {
        const int x = (int)(hits[k] % (size_t)depth.width), y = (int)(hits[k] / (size_t)depth.width);
        const Ray ray = camera_ray(camera, (float)x + 0.5f, (float)y + 0.5f);
        const Vec3 p = ray.origin + ray.direction * depth.pixels[hits[k]];
        dirs.push_back(ray.direction);
        for (int axis = 0; axis < 3; ++axis) {
            for (int side = 0; side < 2; ++side) {
                Vec3 q = p;
                q[axis] += side ? h : -h;
                for (int c = 0; c < 3; ++c) points((Eigen::Index)(6 * k + 2 * axis + side), c) = q[c];
            }
        }
    }
    std::vector<float> s;
    if (!hits.empty()) sigma(points, s);
    for (size_t k = 0; k < hits.size(); ++k) {
        Vec3 g;
        for (int axis = 0; axis < 3; ++axis) g[axis] = (s[6 * k + 2 * axis + 1] - s[6 * k + 2 * axis]) / (2 * h);
        const float len = length(g);
        const Vec3 n = len > 0 && std::isfinite(len) ? g * (-1.f / len) : dirs[k] * -1.f;
        for (int c = 0; c < 3; ++c) rgb.pixels[3 * hits[k] + c] = 0.5f * (n[c] + 1.f);
    }
    return rgb;
}

} // namespace fusedngp::nerf
