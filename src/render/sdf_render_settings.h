// The sphere tracer's modes and settings: plain types shared by the CPU
// renderer (render/sdf_render.h), the per-ray math (render/sphere_trace_math.h)
// and the CUDA kernels, so this header pulls in nothing but Vec3.
#pragma once

#include "geometry/vec3.h"

#include <cstdint>

namespace fusedngp {

// The largest image side either renderer takes: keeps every per-pixel index
// (3 * pixel included) inside 32 bits.
constexpr uint32_t kMaxRenderSide = 16384;

// shade:   Lambert (light_direction) plus a little ambient on a clay base colour.
// normals: the field's normalised gradient n as RGB = n * 0.5 + 0.5.
// depth:   distance along the ray, grey, near bright (see sphere_trace_math.h).
// ao:      ambient occlusion along the normal, grey (1 = open).
// cost:    steps taken / max_steps on a blue-green-red ramp.
enum class SdfRenderMode : uint32_t { Shade, Normals, Depth, Ao, Cost };

struct SphereTraceSettings {
    uint32_t max_steps = 128;
    float hit_epsilon = 5e-4f;   // |sdf| below this is a hit (unit-cube units)
    float step_scale = 0.9f;     // a learned field is not an exact distance: step a bit short
    float normal_epsilon = 1e-3f;  // central-difference half step of the gradient
    uint32_t ao_samples = 5;
    float ao_step = 0.02f;       // AO sample i (1-based) lies i * ao_step along the normal
    Vec3 light_direction{0.4f, 0.8f, 0.45f};  // towards the light, normalised when used
    Vec3 background{1.f, 1.f, 1.f};
};

// What a render cost: march steps (one field evaluation per ray per step),
// all field evaluations (marching + normal and AO probes), pixels that hit.
struct SdfRenderStats {
    uint64_t total_steps = 0;
    uint64_t field_evaluations = 0;
    uint32_t hit_pixels = 0;
};

} // namespace fusedngp
