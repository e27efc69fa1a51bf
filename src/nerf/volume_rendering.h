// Volume rendering of one ray and its exact backward pass: the CPU reference
// (and the per-ray math of the future GPU kernels) of the NeRF mode.
//
// A ray has n samples in marching order. Sample i has a density sigma_i >= 0
// (after the density activation below), a colour c_i (3 channels), a step
// length dt_i (the length of ray it stands for) and a distance t_i along the
// ray (for depth). With tau_i = sum_{j<i} sigma_j dt_j:
//
//   alpha_i = 1 - exp(-sigma_i dt_i)
//   T_i     = prod_{j<i} (1 - alpha_j) = exp(-tau_i)     (T_0 = 1)
//   w_i     = T_i alpha_i = T_i - T_{i+1}
//   rgb     = sum_i w_i c_i + T_end * background
//   depth   = sum_i w_i t_i                             (no background term)
//   opacity = sum_i w_i = 1 - T_end
//
// Early termination: sample i is composited only while T_i >= min_transmittance
// (default 1e-4, instant-ngp's value); the first sample found with T_i below it
// ends the ray, and it and every later sample are unused (zero weight, zero
// gradient). T_end is the transmittance after the last used sample, so the
// background still gets its (tiny) share. `used` reports how many samples were
// composited (the rest need no network backward).
//
// Backward. Every output channel has the form Y = sum_i w_i y_i + T_end y_bg,
// with (y_i, y_bg) = (c_i, background) for rgb, (t_i, 0) for depth and (1, 0)
// for opacity. Since dT_k/dsigma_i = -dt_i T_k for k > i:
//
//   dY/dy_i      = w_i
//   dY/dy_bg     = T_end
//   dY/dsigma_i  = dt_i * ( T_{i+1} y_i - S_i ),   S_i = sum_{k>i} w_k y_k + T_end y_bg
//
// S_i (the part of Y behind sample i) is Y minus the prefix sum_{k<=i} w_k y_k,
// so the backward walks the samples front to back once more after the forward
// pass, recomputing T and w instead of storing them: O(n) time, O(1) memory,
// the layout a GPU kernel uses (one thread per ray, no per-sample scratch).
// Instant-ngp computes the same suffix the same way ("rgb_ray - rgb_ray2").
//
// Everything is templated on the scalar so the fp64 gradient checks run the
// very code the float path runs.
#pragma once

#include "geometry/vec3.h"

#include <cmath>

namespace fusedngp::nerf {

constexpr float kDefaultMinTransmittance = 1e-4f;

// exp for either scalar, the same call on host and device (expf for float).
FUSEDNGP_HD float scalar_exp(float x) { return expf(x); }
FUSEDNGP_HD double scalar_exp(double x) { return ::exp(x); }

// ---- Density activations: sigma = activation(raw network output) ---------

template <typename T>
FUSEDNGP_HD T density_exp(T x) { return scalar_exp(x); }
template <typename T>
FUSEDNGP_HD T density_exp_grad(T x) { return scalar_exp(x); }

// Truncated exponential (instant-ngp, torch-ngp): forward exp(x), backward
// exp(clamp(x, -15, 15)), so a large raw density cannot blow up its gradient
// (and a very negative one still gets a small push). Not the derivative of the
// forward outside [-15, 15]: a deliberate straight-through-style clamp.
constexpr double kTruncExpClamp = 15.0;
template <typename T>
FUSEDNGP_HD T trunc_exp(T x) { return scalar_exp(x); }
template <typename T>
FUSEDNGP_HD T trunc_exp_grad(T x) {
    const T c = (T)kTruncExpClamp;
    return scalar_exp(x < -c ? -c : (x > c ? c : x));
}

// ---- One ray ---------------------------------------------------------------

// Inputs of one ray, all arrays of `n` samples in marching order. `t` may be
// null (depth then reads 0 for every sample).
template <typename T>
struct RaySamples {
    int n = 0;
    const T* sigma = nullptr;  // [n]   density after the activation, >= 0
    const T* rgb = nullptr;    // [n][3]
    const T* dt = nullptr;     // [n]   step length
    const T* t = nullptr;      // [n]   distance along the ray (depth), optional
};

template <typename T>
struct RayResult {
    T rgb[3] = {0, 0, 0};
    T depth = 0;
    T opacity = 0;          // 1 - T_end
    T transmittance = 1;    // T_end
    int used = 0;           // samples composited before early termination
};

// Gradients of a scalar loss L with respect to the ray's outputs.
template <typename T>
struct RayOutputGrad {
    T rgb[3] = {0, 0, 0};
    T depth = 0;
    T opacity = 0;
};

// Gradients with respect to the inputs. d_sigma and d_rgb are written for all
// n samples (zero for the unused ones); d_background is accumulated (+=) so a
// batch can sum it over its rays.
template <typename T>
struct RayInputGrad {
    T* d_sigma = nullptr;  // [n]
    T* d_rgb = nullptr;    // [n][3]
    T* d_background = nullptr;  // [3], +=; may be null
};

template <typename T>
FUSEDNGP_HD T sample_alpha(T sigma, T dt) { return (T)1 - scalar_exp(-sigma * dt); }

// How many of a ray's samples render_ray composites (its `used`): the
// transmittance alone decides, so a trainer can drop the samples behind the
// termination point before running its networks on them (compaction).
template <typename T>
FUSEDNGP_HD int samples_used(const T* sigma, const T* dt, int n, T min_transmittance = (T)kDefaultMinTransmittance) {
    T trans = 1;
    int i = 0;
    for (; i < n && trans >= min_transmittance; ++i) trans *= scalar_exp(-sigma[i] * dt[i]);
    return i;
}

// render_ray's running state, one sample at a time: a renderer that
// evaluates a ray's samples in rounds (the GPU view renderer, which stops
// marching a ray once it is opaque) composites exactly as render_ray does.
template <typename T>
struct RayAccumulator {
    T rgb[3] = {0, 0, 0};
    T depth = 0;
    T trans = 1;
    int used = 0;

    FUSEDNGP_HD bool terminated(T min_transmittance) const { return !(trans >= min_transmittance); }
    // One sample; t may be null (depth then reads 0).
    FUSEDNGP_HD void add(T sigma, T dt, const T* sample_rgb, const T* t) {
        const T next = trans * scalar_exp(-sigma * dt);
        const T w = trans - next;  // == T_i alpha_i
        for (int c = 0; c < 3; ++c) rgb[c] += w * sample_rgb[c];
        if (t) depth += w * *t;
        trans = next;
        ++used;
    }
    FUSEDNGP_HD RayResult<T> finish(const T background[3]) const {
        RayResult<T> r;
        for (int c = 0; c < 3; ++c) r.rgb[c] = rgb[c] + trans * background[c];
        r.depth = depth;
        r.used = used;
        r.transmittance = trans;
        r.opacity = (T)1 - trans;
        return r;
    }
};

template <typename T>
FUSEDNGP_HD RayResult<T> render_ray(const RaySamples<T>& s, const T background[3],
                                    T min_transmittance = (T)kDefaultMinTransmittance) {
    RayAccumulator<T> acc;
    for (int i = 0; i < s.n && !acc.terminated(min_transmittance); ++i)
        acc.add(s.sigma[i], s.dt[i], s.rgb + 3 * i, s.t ? s.t + i : nullptr);
    return acc.finish(background);
}

// The backward of render_ray. `fwd` is render_ray's result for the same
// inputs: the totals Y the suffix sums are taken from (the background enters
// only through them and T_end).
template <typename T>
FUSEDNGP_HD void render_ray_backward(const RaySamples<T>& s, const RayResult<T>& fwd,
                                     const RayOutputGrad<T>& g, RayInputGrad<T> out) {
    T trans = 1;
    T prefix_rgb[3] = {0, 0, 0};
    T prefix_depth = 0;
    for (int i = 0; i < s.n; ++i) {
        if (i >= fwd.used) {
            out.d_sigma[i] = 0;
            for (int c = 0; c < 3; ++c) out.d_rgb[3 * i + c] = 0;
            continue;
        }
        const T next = trans * scalar_exp(-s.sigma[i] * s.dt[i]);
        const T w = trans - next;
        const T ti = s.t ? s.t[i] : (T)0;
        T d_sigma = 0;
        for (int c = 0; c < 3; ++c) {
            const T ci = s.rgb[3 * i + c];
            prefix_rgb[c] += w * ci;
            const T behind = fwd.rgb[c] - prefix_rgb[c];  // S_i, background included
            d_sigma += g.rgb[c] * (next * ci - behind);
            out.d_rgb[3 * i + c] = g.rgb[c] * w;
        }
        prefix_depth += w * ti;
        d_sigma += g.depth * (next * ti - (fwd.depth - prefix_depth));
        d_sigma += g.opacity * fwd.transmittance;  // T_{i+1} - (T_{i+1} - T_end)
        out.d_sigma[i] = s.dt[i] * d_sigma;
        trans = next;
    }
    if (out.d_background)
        for (int c = 0; c < 3; ++c) out.d_background[c] += g.rgb[c] * fwd.transmittance;
}

} // namespace fusedngp::nerf
