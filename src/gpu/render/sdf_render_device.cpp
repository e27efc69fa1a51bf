#include "gpu/render/sdf_render_device.h"

#include "core/errors.h"
#include "render/sdf_render_launch.h"

#include <string>
#include <utility>

namespace fusedngp::gpu {

void DeviceSdfRenderer::reserve(size_t n_pixels) {
    if (rays_.size() == n_pixels) return;
    rays_.resize(n_pixels);
    active_.resize(n_pixels);
    next_.resize(n_pixels);
    counter_.resize(3);
    points_.resize(3 * n_pixels);
    values_.resize(n_pixels);
    gradients_.resize(3 * n_pixels);
    occlusion_.resize(n_pixels);
}

// The list length a kernel counted in counter_[index] (synchronises).
uint32_t DeviceSdfRenderer::read_counter(cudaStream_t stream, uint32_t index) {
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(&host_counter_, counter_.data() + index, sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                       stream));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    return host_counter_;
}

void DeviceSdfRenderer::evaluate(const DeviceSdfFn& field, uint32_t n, cudaStream_t stream) {
    field(points_.data(), n, values_.data(), stream);
    stats_.field_evaluations += n;
}

// The host reads the list length only every kSyncSteps steps: in between it
// launches with the last length it read (an upper bound), the kernels take
// the exact length from the device, and the field also evaluates the few
// stale entries past it. One stream sync per kSyncSteps steps instead of
// per step (a sync per step cost ~7 ms of a 1080p frame on the H200).
void DeviceSdfRenderer::march(const Camera& camera, const DeviceSdfFn& field, const SphereTraceSettings& s,
                              cudaStream_t stream) {
    constexpr uint32_t kSyncSteps = 8;
    counter_.fill_bytes(0, stream);
    launch_start_rays(camera, s, rays_.data(), active_.data(), counter_.data(), points_.data(), stream);
    // Step i's list length is in counts[i % 3], its survivors are counted in
    // counts[(i + 1) % 3], and it zeroes counts[(i + 2) % 3] for step i + 1.
    uint32_t* counts = counter_.data();
    uint32_t step = 0;
    for (uint32_t n = read_counter(stream, 0); n > 0; n = read_counter(stream, step % 3)) {
        for (uint32_t k = 0; k < kSyncSteps; ++k, ++step) {
            evaluate(field, n, stream);
            launch_advance_rays(active_.data(), n, counts + step % 3, values_.data(), s, rays_.data(), next_.data(),
                                counts + (step + 1) % 3, counts + (step + 2) % 3, points_.data(), stream);
            std::swap(active_, next_);
        }
    }
}

uint32_t DeviceSdfRenderer::collect_hits(uint32_t n_pixels, cudaStream_t stream) {
    counter_.fill_bytes(0, stream);
    launch_collect_hits(rays_.data(), n_pixels, active_.data(), counter_.data(), gradients_.data(), occlusion_.data(),
                        stream);
    return read_counter(stream, 0);
}

// One field call per probe (the points buffer holds one point per pixel), in probe order 0..5 like the CPU.
void DeviceSdfRenderer::probe_gradients(const DeviceSdfFn& field, uint32_t n_hits, const SphereTraceSettings& s,
                                        cudaStream_t stream) {
    for (int probe = 0; probe < 6; ++probe) {
        launch_normal_probes(rays_.data(), active_.data(), n_hits, probe, s.normal_epsilon, points_.data(), stream);
        evaluate(field, n_hits, stream);
        launch_accumulate_gradients(active_.data(), n_hits, probe, values_.data(), gradients_.data(), stream);
    }
}

void DeviceSdfRenderer::probe_occlusion(const DeviceSdfFn& field, uint32_t n_hits, const SphereTraceSettings& s,
                                        cudaStream_t stream) {
    for (uint32_t sample = 0; sample < s.ao_samples; ++sample) {
        launch_ao_probes(rays_.data(), active_.data(), n_hits, gradients_.data(), sample, s, points_.data(), stream);
        evaluate(field, n_hits, stream);
        launch_accumulate_occlusion(active_.data(), n_hits, sample, values_.data(), s, occlusion_.data(), stream);
    }
}

void DeviceSdfRenderer::render(const Camera& camera, const DeviceSdfFn& field, SdfRenderMode mode,
                               const SphereTraceSettings& settings, float* d_rgba, cudaStream_t stream) {
    const CameraIntrinsics& k = camera.intrinsics;
    if (k.width == 0 || k.height == 0 || k.width > kMaxRenderSide || k.height > kMaxRenderSide) {
        throw InputError("render: image size " + std::to_string(k.width) + "x" + std::to_string(k.height) +
                         " is not in [1, " + std::to_string(kMaxRenderSide) + "]^2");
    }
    const uint32_t n_pixels = k.width * k.height;
    reserve(n_pixels);
    stats_ = {};
    march(camera, field, settings, stream);
    const uint32_t n_hits = collect_hits(n_pixels, stream);
    stats_.hit_pixels = n_hits;
    if (n_hits > 0 && mode_needs_normals(mode)) probe_gradients(field, n_hits, settings, stream);
    if (n_hits > 0 && mode == SdfRenderMode::Ao) probe_occlusion(field, n_hits, settings, stream);
    float near_t = 0, far_t = 1;
    unit_cube_depth_range(camera.pose.position, near_t, far_t);
    launch_shade_pixels(rays_.data(), n_pixels, gradients_.data(), occlusion_.data(), mode, settings, near_t, far_t,
                        d_rgba, stream);
}

Image DeviceSdfRenderer::render_to_image(const Camera& camera, const DeviceSdfFn& field, SdfRenderMode mode,
                                         const SphereTraceSettings& settings, cudaStream_t stream) {
    const size_t n_pixels = (size_t)camera.intrinsics.width * camera.intrinsics.height;
    image_rgba_.resize(4 * n_pixels);
    render(camera, field, mode, settings, image_rgba_.data(), stream);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    // The march steps taken, exactly (the march itself evaluates a few more).
    stats_.total_steps = 0;
    for (const TraceRay& ray : rays_.download()) stats_.total_steps += ray.steps;
    const std::vector<float> rgba = image_rgba_.download();
    Image image = make_image((int)camera.intrinsics.width, (int)camera.intrinsics.height, 3, ColorSpace::Srgb);
    for (size_t i = 0; i < n_pixels; ++i) {
        for (int c = 0; c < 3; ++c) image.pixels[3 * i + (size_t)c] = rgba[4 * i + (size_t)c];
    }
    return image;
}

} // namespace fusedngp::gpu
