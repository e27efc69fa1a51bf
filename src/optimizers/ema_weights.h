// The EMA's weights for one step (src/optimizers/ema.h), shared by the CPU
// optimizer and the GPU kernel that computes them from the device step counter.
#pragma once

#include <cmath>

namespace fusedngp {

// average_t = keep * average_(t-1) + take * w_t, for step t >= 1.
struct EmaStepWeights {
    double keep, take;
};

// window_fraction 0: the fixed decay d, bias-corrected by the weight the
// average has accumulated (1 - d^t). window_fraction f in (0, 1]: the decay
// min(d, max(0, 1 - 1/(f t))), whose first step is 0, so the weights sum to 1.
// (Not FUSEDNGP_HD: src/gpu/mlp_shape.h defines that macro its own way, and
// the optimizer kernels see both headers.)
#if defined(__CUDACC__)
__host__ __device__
#endif
inline EmaStepWeights ema_step_weights(double decay, double window_fraction, double t) {
    if (window_fraction > 0) {
        const double grown = fmin(decay, fmax(0.0, 1.0 - 1.0 / (window_fraction * t)));
        return {grown, 1.0 - grown};
    }
    const double new_weight = 1.0 - pow(decay, t);
    return {decay * (1.0 - pow(decay, t - 1.0)) / new_weight, (1.0 - decay) / new_weight};
}

} // namespace fusedngp
