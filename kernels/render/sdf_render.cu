#include "render/sdf_render_launch.h"

#include "gpu/components/device_buffer.h"

namespace fusedngp::gpu {
namespace {

constexpr uint32_t kBlock = 256;

uint32_t blocks_for(uint32_t n) { return (n + kBlock - 1) / kBlock; }

// Row `slot` of a [n][3] float array (points, gradients).
__device__ void store_vec3(float* rows, uint32_t slot, Vec3 v) {
    rows[3 * slot] = v.x;
    rows[3 * slot + 1] = v.y;
    rows[3 * slot + 2] = v.z;
}

__device__ Vec3 load_vec3(const float* v, uint32_t i) { return {v[3 * i], v[3 * i + 1], v[3 * i + 2]}; }

__global__ void start_rays_kernel(Camera camera, SphereTraceSettings s, uint32_t n_pixels, TraceRay* rays,
                                  uint32_t* active, uint32_t* n_active, float* points) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_pixels) return;
    const uint32_t width = camera.intrinsics.width;
    const TraceRay ray = start_trace_ray(camera, i % width, i / width, s);
    rays[i] = ray;
    if (ray.status != kRayMarching) return;
    const uint32_t slot = atomicAdd(n_active, 1u);
    active[slot] = i;
    store_vec3(points, slot, trace_point(ray));
}

// values[j] belongs to active[j]; the survivors write their next point at
// their new slot (points is not read here, so reusing it is safe). Only the
// first *n_valid entries are rays (n, the launch size, is an upper bound the
// host knew at its last read: the list only shrinks).
__global__ void advance_rays_kernel(const uint32_t* active, uint32_t n, const uint32_t* n_valid, const float* values,
                                    SphereTraceSettings s, TraceRay* rays, uint32_t* next_active, uint32_t* n_next,
                                    uint32_t* n_clear, float* points) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j == 0) *n_clear = 0;  // the previous step's count: read by nobody from here on
    if (j >= n || j >= *n_valid) return;
    const uint32_t i = active[j];
    TraceRay ray = rays[i];
    advance_trace_ray(ray, values[j], s);
    rays[i] = ray;
    if (ray.status != kRayMarching) return;
    const uint32_t slot = atomicAdd(n_next, 1u);
    next_active[slot] = i;
    store_vec3(points, slot, trace_point(ray));
}

__global__ void collect_hits_kernel(const TraceRay* rays, uint32_t n_pixels, uint32_t* hits, uint32_t* n_hits,
                                    float* gradients, float* occlusion) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_pixels) return;
    gradients[3 * i] = gradients[3 * i + 1] = gradients[3 * i + 2] = 0.f;
    occlusion[i] = 0.f;
    if (rays[i].status == kRayHit) hits[atomicAdd(n_hits, 1u)] = i;
}

__global__ void normal_probes_kernel(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, int probe,
                                     float normal_epsilon, float* points) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_hits) return;
    store_vec3(points, j, normal_probe_point(trace_point(rays[hits[j]]), probe, normal_epsilon));
}

__global__ void accumulate_gradients_kernel(const uint32_t* hits, uint32_t n_hits, int probe, const float* values,
                                            float* gradients) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_hits) return;
    const uint32_t i = hits[j];
    Vec3 g = load_vec3(gradients, i);
    accumulate_gradient(g, probe, values[j]);
    store_vec3(gradients, i, g);
}

__global__ void ao_probes_kernel(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, const float* gradients,
                                 uint32_t sample, SphereTraceSettings s, float* points) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_hits) return;
    const uint32_t i = hits[j];
    store_vec3(points, j, ao_probe_point(trace_point(rays[i]), normalize(load_vec3(gradients, i)), sample, s));
}

__global__ void accumulate_occlusion_kernel(const uint32_t* hits, uint32_t n_hits, uint32_t sample,
                                            const float* values, SphereTraceSettings s, float* occlusion) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_hits) return;
    occlusion[hits[j]] += ao_term(sample, values[j], s);
}

__global__ void shade_pixels_kernel(const TraceRay* rays, uint32_t n_pixels, const float* gradients,
                                    const float* occlusion, SdfRenderMode mode, SphereTraceSettings s, float near_t,
                                    float far_t, float4* rgba) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_pixels) return;
    const Vec3 c = shade_pixel(mode, rays[i], load_vec3(gradients, i), occlusion[i], s, near_t, far_t);
    rgba[i] = make_float4(c.x, c.y, c.z, 1.f);
}

} // namespace

void launch_start_rays(const Camera& camera, const SphereTraceSettings& s, TraceRay* rays, uint32_t* active,
                       uint32_t* n_active, float* points, cudaStream_t stream) {
    const uint32_t n_pixels = camera.intrinsics.width * camera.intrinsics.height;
    if (n_pixels == 0) return;
    start_rays_kernel<<<blocks_for(n_pixels), kBlock, 0, stream>>>(camera, s, n_pixels, rays, active, n_active, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_advance_rays(const uint32_t* active, uint32_t n, const uint32_t* n_valid, const float* values,
                         const SphereTraceSettings& s, TraceRay* rays, uint32_t* next_active, uint32_t* n_next,
                         uint32_t* n_clear, float* points, cudaStream_t stream) {
    if (n == 0) return;
    advance_rays_kernel<<<blocks_for(n), kBlock, 0, stream>>>(active, n, n_valid, values, s, rays, next_active, n_next,
                                                              n_clear, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_collect_hits(const TraceRay* rays, uint32_t n_pixels, uint32_t* hits, uint32_t* n_hits, float* gradients,
                         float* occlusion, cudaStream_t stream) {
    if (n_pixels == 0) return;
    collect_hits_kernel<<<blocks_for(n_pixels), kBlock, 0, stream>>>(rays, n_pixels, hits, n_hits, gradients, occlusion);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_normal_probes(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, int probe, float normal_epsilon,
                          float* points, cudaStream_t stream) {
    if (n_hits == 0) return;
    normal_probes_kernel<<<blocks_for(n_hits), kBlock, 0, stream>>>(rays, hits, n_hits, probe, normal_epsilon, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_accumulate_gradients(const uint32_t* hits, uint32_t n_hits, int probe, const float* values,
                                 float* gradients, cudaStream_t stream) {
    if (n_hits == 0) return;
    accumulate_gradients_kernel<<<blocks_for(n_hits), kBlock, 0, stream>>>(hits, n_hits, probe, values, gradients);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_ao_probes(const TraceRay* rays, const uint32_t* hits, uint32_t n_hits, const float* gradients,
                      uint32_t sample, const SphereTraceSettings& s, float* points, cudaStream_t stream) {
    if (n_hits == 0) return;
    ao_probes_kernel<<<blocks_for(n_hits), kBlock, 0, stream>>>(rays, hits, n_hits, gradients, sample, s, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_accumulate_occlusion(const uint32_t* hits, uint32_t n_hits, uint32_t sample, const float* values,
                                 const SphereTraceSettings& s, float* occlusion, cudaStream_t stream) {
    if (n_hits == 0) return;
    accumulate_occlusion_kernel<<<blocks_for(n_hits), kBlock, 0, stream>>>(hits, n_hits, sample, values, s, occlusion);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_shade_pixels(const TraceRay* rays, uint32_t n_pixels, const float* gradients, const float* occlusion,
                         SdfRenderMode mode, const SphereTraceSettings& s, float near_t, float far_t, float* rgba,
                         cudaStream_t stream) {
    if (n_pixels == 0) return;
    shade_pixels_kernel<<<blocks_for(n_pixels), kBlock, 0, stream>>>(rays, n_pixels, gradients, occlusion, mode, s,
                                                                     near_t, far_t, reinterpret_cast<float4*>(rgba));
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
