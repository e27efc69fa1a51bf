// Sphere tracing a signed distance field into an image (`fusedngp render`
// in SDF mode and the desktop app's CPU path). Wavefront style: every
// iteration evaluates the field at all rays still marching in one batch, so
// the same loop runs the network on the CPU (this file) and on the GPU
// (gpu/render/sdf_render_device.h), with the per-ray update and the shading
// shared as host/device functions (render/sphere_trace_math.h).
#pragma once

#include "geometry/sdf_field.h"
#include "io/image.h"
#include "render/camera.h"

#include <string>

namespace fusedngp {

enum class SdfRenderMode : uint32_t { Shade, Normals, Depth, Ao, Cost };

// "shade", "normals", "depth", "ao", "cost". Throws InputError listing them.
SdfRenderMode parse_sdf_render_mode(const std::string& name);
const char* to_string(SdfRenderMode mode);

struct SphereTraceSettings {
    uint32_t max_steps = 128;
    float hit_epsilon = 5e-4f;   // |sdf| below this is a hit (unit-cube units)
    float step_scale = 0.9f;     // a learned field is not an exact distance: step a bit short
    float normal_epsilon = 1e-3f;
    uint32_t ao_samples = 5;
    float ao_step = 0.02f;
    Vec3 light_direction{0.4f, 0.8f, 0.45f};  // towards the light, normalised when used
    Vec3 background{1.f, 1.f, 1.f};
};

// Per-pixel results besides the image: steps taken and hit distance (inf when missed).
struct SdfRenderStats {
    uint64_t total_steps = 0;
    uint64_t field_evaluations = 0;
    uint32_t hit_pixels = 0;
};

// RGB image, sRGB colour space, camera.intrinsics.width x height.
Image render_sdf(const Camera& camera, const SdfBatchFn& field, SdfRenderMode mode,
                 const SphereTraceSettings& settings = {}, SdfRenderStats* stats = nullptr);

} // namespace fusedngp
