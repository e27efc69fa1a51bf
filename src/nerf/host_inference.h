// A NeRF model evaluated on the host from the NerfTraining interface (its
// host models and inference parameters), on all hardware threads: what
// meshes and the app's normals view use, on a model of either backend.
#pragma once

#include "core/common.h"
#include "model/model.h"

namespace fusedngp::nerf {

// model.inference over the rows of `in`, in chunks shared by all hardware
// threads (inference is const and keeps no state, so threads can share it).
void parallel_inference(const Model<float>& model, const float* params, const Matrix<float>& in, Matrix<float>& out);

// Raw density outputs above this would make sigma (and central differences
// of it) overflow float; sigma is far above any useful iso value there.
constexpr float kMaxRawDensity = 30.f;
// sigma = trunc_exp(raw), the raw output clamped at kMaxRawDensity.
float sigma_of_raw(float raw);

} // namespace fusedngp::nerf
