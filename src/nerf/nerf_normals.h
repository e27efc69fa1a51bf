// Surface normals of a radiance field, for the app's normals view: at each
// pixel's expected termination depth (NerfTraining::render_depth), the
// direction of -grad sigma by central differences, shown as (n + 1) / 2 in
// the model's axes (x right, y up, z towards the default camera). Pixels
// without a surface (depth 0) show the background. The field is evaluated
// on the host (nerf/host_inference.h), so a model of either backend works.
#pragma once

#include "io/image.h"
#include "nerf/nerf_training.h"
#include "render/camera.h"

#include <functional>
#include <vector>

namespace fusedngp::nerf {

// sigma at the rows (points) of `points` into `sigma`.
using SigmaField = std::function<void(const Matrix<float>& points, std::vector<float>& sigma)>;

// The density model of `training` with `density_params` (its inference
// parameters, copied once per picture: a GPU trainer's come from the device).
SigmaField host_sigma_field(const NerfTraining& training, std::vector<float> density_params);

// Central differences with step h (model units); a zero gradient faces the
// camera (n = -ray direction).
constexpr float kNormalStep = 1.f / 512;
Image normals_from_depth(const SigmaField& sigma, const Camera& camera, const Image& depth, Vec3 background,
                         float h = kNormalStep);

} // namespace fusedngp::nerf
