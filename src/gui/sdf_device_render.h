// The SDF view's CUDA path: the model sphere traced on the device straight
// into a mapped PBO. Kept apart so only sdf_device_render.cpp sees CUDA.
#pragma once

#include "backends/backend.h"
#include "geometry/marching_cubes.h"
#include "render/camera.h"
#include "render/sdf_render.h"

namespace fusedngp {

// RGBA float4 per pixel of camera.intrinsics (row 0 at the top) into
// `d_rgba`, from the CUDA backend's current inference parameters on its
// stream; returns when the frame is written. `render_ms` gets the render's
// own time: the training steps queued ahead of it finish before the clock
// starts, so the adaptive resolution sees the cost of pixels, not of steps.
// False (nothing written) when `backend` is not a CUDA backend or the build
// has no CUDA.
bool render_sdf_on_device(Backend& backend, const Camera& camera, SdfRenderMode mode,
                          const SphereTraceSettings& settings, float* d_rgba, double& render_ms);

// Marching cubes of the CUDA backend's model on the device (unit cube).
// False (nothing extracted) as above.
bool extract_isosurface_on_device(Backend& backend, const IsosurfaceSettings& settings, TriangleMesh& mesh);

} // namespace fusedngp
