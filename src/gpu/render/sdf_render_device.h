// The GPU sphere tracer: the CPU renderer's wavefront loop (render/
// sdf_render.h) with every per-ray step a kernel over the same host/device
// math (render/sphere_trace_math.h), the field a DeviceSdfFn (the CUDA
// backend's model or an analytic shape). Plain C++: usable without nvcc.
//
// Each march step evaluates only the rays still marching: the update kernel
// compacts the survivors into the next list through an atomic counter, and
// the host reads the count back (one stream synchronisation per step) to
// size the next field call. Evaluating every pixel with finished rays masked
// would avoid that sync but costs a full-frame network inference per step;
// rays finish at very different steps (most within a few dozen, grazing ones
// take the full budget), so at high resolution the compacted batches are
// mostly a small fraction of the frame, and a ~10 us sync per step is cheap
// against the inference it saves. The count also gives the stats for free.
//
// Field calls per frame: one per march step (at most max_steps), six for the
// normals (shade, normals, ao) and ao_samples for AO (ao), each over the hit
// pixels only.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_sdf_fn.h"
#include "io/image.h"
#include "render/camera.h"
#include "render/sdf_render_settings.h"
#include "render/sphere_trace_math.h"

#include <cuda_runtime_api.h>

namespace fusedngp::gpu {

class DeviceSdfRenderer {
public:
    // Renders camera.intrinsics.width x height pixels into d_rgba (float4 per
    // pixel, row 0 at the top, alpha 1; 16-byte aligned, e.g. a mapped GL
    // pixel buffer). The ray buffers are kept between frames and reallocated
    // only when the pixel count grows or shrinks. Synchronises `stream` once
    // per march step; returns with the final shading kernel enqueued on it.
    // Throws InputError for an image side outside [1, kMaxRenderSide].
    void render(const Camera& camera, const DeviceSdfFn& field, SdfRenderMode mode, const SphereTraceSettings& settings,
                float* d_rgba, cudaStream_t stream);

    // render() into an internal buffer, downloaded as an RGB sRGB image (the CLI's path).
    Image render_to_image(const Camera& camera, const DeviceSdfFn& field, SdfRenderMode mode,
                          const SphereTraceSettings& settings, cudaStream_t stream = nullptr);

    // Of the last render: march steps, all field evaluations, hit pixels.
    const SdfRenderStats& last_stats() const { return stats_; }

private:
    void reserve(size_t n_pixels);
    uint32_t read_counter(cudaStream_t stream, uint32_t index);
    void evaluate(const DeviceSdfFn& field, uint32_t n, cudaStream_t stream);
    void march(const Camera& camera, const DeviceSdfFn& field, const SphereTraceSettings& s, cudaStream_t stream);
    uint32_t collect_hits(uint32_t n_pixels, cudaStream_t stream);
    void probe_gradients(const DeviceSdfFn& field, uint32_t n_hits, const SphereTraceSettings& s, cudaStream_t stream);
    void probe_occlusion(const DeviceSdfFn& field, uint32_t n_hits, const SphereTraceSettings& s, cudaStream_t stream);

    DeviceBuffer<TraceRay> rays_;            // per pixel
    DeviceBuffer<uint32_t> active_, next_;   // ray lists (the hit list reuses active_)
    DeviceBuffer<uint32_t> counter_;         // three list lengths, used in turn (see march)
    DeviceBuffer<float> points_, values_;    // the field's batch: [n][3] -> [n]
    DeviceBuffer<float> gradients_, occlusion_;  // per pixel: [3], [1]
    DeviceBuffer<float> image_rgba_;         // render_to_image's target
    uint32_t host_counter_ = 0;
    SdfRenderStats stats_;
};

} // namespace fusedngp::gpu
