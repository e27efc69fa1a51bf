// A signed distance field evaluated in batches on the host: points [n][3] in
// the model's unit cube -> values [n][1], negative inside. The trained model,
// the ground truth (geometry/signed_distance.h) and analytic shapes in the
// tests all fit it, so the renderer, marching cubes and the metrics take any.
#pragma once

#include "core/common.h"

#include <functional>

namespace fusedngp {

using SdfBatchFn = std::function<void(const Matrix<float>& points, Matrix<float>& values)>;

} // namespace fusedngp
