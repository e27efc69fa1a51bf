// The SDF view's CUDA path: the model sphere traced on the device straight
// into a mapped PBO. Kept apart so only sdf_device_render.cpp sees CUDA.
#pragma once

#include "backends/backend.h"
#include "geometry/marching_cubes.h"
#include "render/camera.h"
#include "render/sdf_render.h"

namespace fusedngp {

// What a render beside training did.
enum class DeviceRenderResult {
    Drawn,
    NotReady,     // no display copy has reached the GPU yet: nothing written
    Unavailable,  // not a CUDA backend, or a build without CUDA
};

// RGBA float4 per pixel of camera.intrinsics (row 0 at the top) into
// `d_rgba`, beside training (TrainingSession::render_beside_training): from
// the CUDA backend's newest display copy (its EMA parameters a step or two
// behind) on a high-priority stream of its own, while the training stream
// keeps running; returns when the frame is written. `render_ms` is the
// render's wall time, the GPU shared with training.
DeviceRenderResult render_sdf_beside_training(Backend& backend, const Camera& camera, SdfRenderMode mode,
                                              const SphereTraceSettings& settings, float* d_rgba, double& render_ms);

// Marching cubes of the CUDA backend's model on the device (unit cube).
// False (nothing extracted) when `backend` is not a CUDA backend or the build
// has no CUDA.
bool extract_isosurface_on_device(Backend& backend, const IsosurfaceSettings& settings, TriangleMesh& mesh);

} // namespace fusedngp
