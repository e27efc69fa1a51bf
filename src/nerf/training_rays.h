// The random draws of one training ray, as a pure function of (key, step,
// ray index): the CPU trainer and the GPU trainer call the same function, so
// for the same seed and step both train on the same rays (the GPU may drop
// rays whose samples do not fit its buffer, never adds any).
//
// Counter layout: ray r of step s uses counters (s * kMaxRaysPerStep + r) *
// kDrawsPerRay + 0..8 of counter_uniform01 (core/rng.h), in this order: frame,
// x, y, jitter x, jitter y, background r, g, b, march jitter.
#pragma once

#include "core/host_device.h"
#include "core/rng.h"

#include <cstdint>

namespace fusedngp::nerf {

constexpr uint64_t kMaxRaysPerStep = 1ull << 24;
constexpr uint32_t kDrawsPerRay = 10;

struct TrainingRayDraw {
    uint32_t frame = 0, x = 0, y = 0;  // pixel (x, y) of frame
    float jitter_x = 0, jitter_y = 0;  // position inside the pixel, [0, 1)
    float background[3] = {0, 0, 0};   // random background colour, [0, 1)
    float march_jitter = 0;            // start offset along the lattice, [0, 1)
};

// floor(u * n) for u in [0, 1), kept below n.
FUSEDNGP_HD uint32_t scale_to_index(float u, uint32_t n) {
    const uint32_t i = (uint32_t)(u * (float)n);
    return i < n ? i : n - 1;
}

FUSEDNGP_HD TrainingRayDraw draw_training_ray(uint64_t key, uint64_t step, uint32_t ray, uint32_t n_frames,
                                              uint32_t width, uint32_t height) {
    const uint64_t base = (step * kMaxRaysPerStep + ray) * kDrawsPerRay;
    TrainingRayDraw d;
    d.frame = scale_to_index(counter_uniform01(key, base + 0), n_frames);
    d.x = scale_to_index(counter_uniform01(key, base + 1), width);
    d.y = scale_to_index(counter_uniform01(key, base + 2), height);
    d.jitter_x = counter_uniform01(key, base + 3);
    d.jitter_y = counter_uniform01(key, base + 4);
    for (int c = 0; c < 3; ++c) d.background[c] = counter_uniform01(key, base + 5 + c);
    d.march_jitter = counter_uniform01(key, base + 8);
    return d;
}

// The background training rays are composited on: the draw's random colour
// per ray (instant-ngp's default; the model must learn transparency, since
// no colour explains empty space), or one fixed colour (`sampling.
// training_background` in the config).
struct TrainingBackground {
    bool random = true;
    float colour[3] = {1.f, 1.f, 1.f};  // when not random
};

FUSEDNGP_HD void apply_training_background(const TrainingBackground& b, TrainingRayDraw& d) {
    if (b.random) return;
    for (int c = 0; c < 3; ++c) d.background[c] = b.colour[c];
}

// Where a training ray crosses the image: the pixel's centre (instant-ngp's
// default, snap_to_pixel_centers: the ray and its target, the pixel's value,
// agree, as they do where the test views are evaluated), or the jittered
// point inside the pixel (the target stays the pixel's value: a ray through
// the pixel's edge learns its neighbour's colour half the time, a blur).
FUSEDNGP_HD void training_ray_pixel(const TrainingRayDraw& d, bool snap_to_pixel_centers, float* px, float* py) {
    *px = (float)d.x + (snap_to_pixel_centers ? 0.5f : d.jitter_x);
    *py = (float)d.y + (snap_to_pixel_centers ? 0.5f : d.jitter_y);
}

// The training target of a pixel: straight-alpha 8-bit RGBA composited on
// the background, rgb * a + bg * (1 - a), in [0, 1].
FUSEDNGP_HD void composite_pixel(const uint8_t* rgba, const float background[3], float out[3]) {
    const float a = (float)rgba[3] / 255.f;
    for (int c = 0; c < 3; ++c) out[c] = (float)rgba[c] / 255.f * a + background[c] * (1.f - a);
}

} // namespace fusedngp::nerf
