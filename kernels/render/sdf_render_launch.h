// Launchers of the GPU sphere tracer's kernels (kernels/render/sdf_render.cu),
// called by gpu/render/sdf_render_device.cpp. Every kernel is a thin loop over
// render/sphere_trace_math.h, the same per-ray code the CPU renderer runs.
//
// Compaction: a ray that is still marching (or a hit that needs probes)
// claims its slot in the next list with an atomicAdd on a counter, so each
// field call sees only the live rays. The order inside a list varies from run
// to run, but every ray's result depends only on its own values, so the image
// does not.
#pragma once

#include "render/camera.h"
#include "render/sphere_trace_math.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

// Starts one ray per pixel; the marching ones go to active[0, *n_active) with
// their first sample point in points[3 * slot]. *n_active must be 0 on entry.
void launch_start_rays(const Camera& camera, const SphereTraceSettings& s, TraceRay* rays, uint32_t* active,
                       uint32_t* n_active, float* points, cudaStream_t stream);

// One march step for active[0, min(n, *n_valid)) with the field's values[j];
// the rays still marching go to next_active[0, *n_next) with their next point
// in points. n (the grid) may exceed the device count *n_valid. *n_next must
// be 0 on entry; the kernel zeroes *n_clear, so three counters used in turn
// (valid, next, clear) need no memset or copy between steps: each launch is
// one dependent operation less on a stream that competes with training.
void launch_advance_rays(const uint32_t* active, uint32_t n, const uint32_t* n_valid, const float* values,
                         const SphereTraceSettings& s, TraceRay* rays, uint32_t* next_active, uint32_t* n_next,
                         uint32_t* n_clear, float* points, cudaStream_t stream);

// Lists the hit pixels in hits[0, *n_hits) and zeroes every pixel's gradient
// (3 floats) and occlusion.
void launch_collect_hits(const TraceRay* rays, uint32_t n_pixels, uint32_t* hits, uint32_t* n_hits, float* gradients,
                         float* occlusion, cudaStream_t stream);

// Central-difference probe `probe` (0..5) of each hit into points, then its
// signed value added into the pixel's gradient.
void launch_normal_probes(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, int probe, float normal_epsilon,
                          float* points, cudaStream_t stream);
void launch_accumulate_gradients(const uint32_t* hits, uint32_t n_hits, int probe, const float* values,
                                 float* gradients, cudaStream_t stream);

// AO sample `sample` of each hit into points, then its term added into the pixel's occlusion.
void launch_ao_probes(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, const float* gradients,
                      uint32_t sample, const SphereTraceSettings& s, float* points, cudaStream_t stream);
void launch_accumulate_occlusion(const uint32_t* hits, uint32_t n_hits, uint32_t sample, const float* values,
                                 const SphereTraceSettings& s, float* occlusion, cudaStream_t stream);

// rgba[4 * pixel] = shade_pixel(...), alpha 1.
void launch_shade_pixels(const TraceRay* rays, uint32_t n_pixels, const float* gradients, const float* occlusion,
                         SdfRenderMode mode, const SphereTraceSettings& s, float near_t, float far_t, float* rgba,
                         cudaStream_t stream);

} // namespace fusedngp::gpu
