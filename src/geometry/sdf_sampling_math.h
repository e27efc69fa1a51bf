// Per-sample math of the SDF mode's training batches and metric points,
// shared by the CPU loops (geometry/sdf_sampling.cpp, sdf_metrics.cpp) and
// the CUDA kernels (kernels/geometry/sdf_sampling.cu, sdf_metrics.cu).
//
// Randomness is counter-based: every number is a hash of (key, sample index,
// stream), with the key a hash of (seed, step, purpose). No generator state
// is carried, so any thread order, any chunking and either device give the
// same points for the same seed and step.
#pragma once

#include "core/rng.h"
#include "geometry/surface_sampler.h"
#include "geometry/vec3.h"

#include <cstdint>

namespace fusedngp {


// What a key is for: each gets its own numbers from the same seed, so the
// IoU points are not the training points of some step.
enum class SdfRandomPurpose : uint64_t { Training = 1, Iou = 2, Band = 3, Chamfer = 4 };

FUSEDNGP_HD uint64_t sdf_random_key(uint64_t seed, uint64_t step, SdfRandomPurpose purpose) {
    const uint64_t base = splitmix64_mix(seed ^ ((uint64_t)purpose * 0xD1B54A32D192ED03ull));
    return splitmix64_mix(base + (step + 1) * 0x9E3779B97F4A7C15ull);
}

// Each sample owns kSdfStreams consecutive counters: its uniforms never
// overlap another sample's.
constexpr uint32_t kSdfStreams = 8;
enum SdfStream : uint32_t {
    kStreamPosition = 0,  // 0..2: the cube point, or (triangle, barycentric, barycentric)
    kStreamOffset = 3,    // 3..6: two Box-Muller pairs for the Gaussian offset
};

// 24 random bits -> [0, 1), exactly representable in float (so host and
// device agree bit for bit).
FUSEDNGP_HD float sdf_uniform01(uint64_t key, uint64_t index, uint32_t stream) {
    return counter_uniform01(key, index * kSdfStreams + stream);
}

// Uniform in the unit cube [0, 1)^3.
FUSEDNGP_HD Vec3 sdf_cube_point(uint64_t key, uint64_t index) {
    return {sdf_uniform01(key, index, kStreamPosition), sdf_uniform01(key, index, kStreamPosition + 1),
            sdf_uniform01(key, index, kStreamPosition + 2)};
}

// Box-Muller: two uniforms -> two independent N(0, 1). 1 - u0 is in (0, 1],
// so the log is finite.
FUSEDNGP_HD void box_muller(float u0, float u1, float& z0, float& z1) {
    const float radius = sqrtf(-2.f * logf(1.f - u0));
    const float angle = 6.28318530717958648f * u1;
    z0 = radius * cosf(angle);
    z1 = radius * sinf(angle);
}

// N(0, 1) per axis, independent.
FUSEDNGP_HD Vec3 sdf_gaussian3(uint64_t key, uint64_t index) {
    float x, y, z, unused;
    box_muller(sdf_uniform01(key, index, kStreamOffset), sdf_uniform01(key, index, kStreamOffset + 1), x, y);
    box_muller(sdf_uniform01(key, index, kStreamOffset + 2), sdf_uniform01(key, index, kStreamOffset + 3), z, unused);
    return {x, y, z};
}

// Area-uniform on the surface, then moved by N(0, sigma^2) per axis.
FUSEDNGP_HD Vec3 sdf_near_surface_point(const SurfaceSamplerView& surface, uint64_t key, uint64_t index, float sigma) {
    const Vec3 on_surface =
        sample_surface_point(surface, sdf_uniform01(key, index, kStreamPosition),
                             sdf_uniform01(key, index, kStreamPosition + 1), sdf_uniform01(key, index, kStreamPosition + 2));
    if (sigma == 0.f) return on_surface;
    return on_surface + sdf_gaussian3(key, index) * sigma;
}

// How a training batch is split, in batch order:
// [uniform | on the surface | small offset | large offset].
struct SdfSampleLayout {
    uint32_t n_uniform = 0;
    uint32_t n_surface = 0;
    uint32_t n_small = 0;
    uint32_t n_large = 0;
    float sigma_small = 0.f;
    float sigma_large = 0.f;
    FUSEDNGP_HD uint32_t batch() const { return n_uniform + n_surface + n_small + n_large; }
};

enum class SdfSampleKind : uint32_t { Uniform, Surface, SmallOffset, LargeOffset };

FUSEDNGP_HD SdfSampleKind sdf_sample_kind(const SdfSampleLayout& layout, uint32_t i) {
    if (i < layout.n_uniform) return SdfSampleKind::Uniform;
    i -= layout.n_uniform;
    if (i < layout.n_surface) return SdfSampleKind::Surface;
    i -= layout.n_surface;
    return i < layout.n_small ? SdfSampleKind::SmallOffset : SdfSampleKind::LargeOffset;
}

// Training sample i of the batch whose key is sdf_random_key(seed, step, Training).
FUSEDNGP_HD Vec3 sdf_training_point(const SurfaceSamplerView& surface, const SdfSampleLayout& layout, uint64_t key,
                                    uint32_t i) {
    switch (sdf_sample_kind(layout, i)) {
    case SdfSampleKind::Uniform: return sdf_cube_point(key, i);
    case SdfSampleKind::Surface: return sdf_near_surface_point(surface, key, i, 0.f);
    case SdfSampleKind::SmallOffset: return sdf_near_surface_point(surface, key, i, layout.sigma_small);
    default: return sdf_near_surface_point(surface, key, i, layout.sigma_large);
    }
}

// Inside a field (the IoU metric's test, geometry/sdf_metrics.h): negative
// values. NaN is outside.
FUSEDNGP_HD bool sdf_inside(float value) { return value < 0.f; }

} // namespace fusedngp
