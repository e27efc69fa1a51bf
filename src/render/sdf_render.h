// Sphere tracing a signed distance field into an image (`fusedngp render`
// in SDF mode and the desktop app's CPU path). Wavefront style: every
// iteration evaluates the field at all rays still marching in one batch, so
// the same loop runs the network on the CPU (this file) and on the GPU
// (gpu/render/sdf_render_device.h), with the per-ray update and the shading
// shared as host/device functions (render/sphere_trace_math.h, which also
// states the march rule). A render costs at most max_steps batched field
// calls for the march, one more for the normals (shade, normals, ao) and one
// more for AO (ao).
//
// Normals are the field's gradient by central differences with half step
// normal_epsilon (six evaluations per hit). For a trained network this
// approximates the gradient of the network with respect to its input to
// O(normal_epsilon^2), without needing a backward pass through the model.
#pragma once

#include "geometry/sdf_field.h"
#include "io/image.h"
#include "render/camera.h"
#include "render/sdf_render_settings.h"

#include <string>
#include <vector>

namespace fusedngp {

// "shade", "normals", "depth", "ao", "cost". Throws InputError listing them.
SdfRenderMode parse_sdf_render_mode(const std::string& name);
const char* to_string(SdfRenderMode mode);

// RGB image, sRGB colour space, camera.intrinsics.width x height, row 0 at
// the top. Misses show settings.background.
Image render_sdf(const Camera& camera, const SdfBatchFn& field, SdfRenderMode mode,
                 const SphereTraceSettings& settings = {}, SdfRenderStats* stats = nullptr);

// The march alone, per pixel (row-major, row 0 at the top).
struct SdfTrace {
    uint32_t width = 0, height = 0;
    std::vector<float> depth;     // distance along the (unit) ray from the camera to the hit; +inf when missed
    std::vector<uint32_t> steps;  // march steps (field evaluations) the ray took
};
SdfTrace trace_sdf(const Camera& camera, const SdfBatchFn& field, const SphereTraceSettings& settings = {},
                   SdfRenderStats* stats = nullptr);

} // namespace fusedngp
