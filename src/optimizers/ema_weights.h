// The EMA's weights for one step (src/optimizers/ema.h), shared by the CPU
// optimizer and the GPU kernel that computes them from the device step counter.
#pragma once

#include <cmath>
#include <cstdint>

namespace fusedngp {

// average = keep * average + take * w where `apply`; the average stays as it
// is on the steps between updates.
struct EmaStepWeights {
    double keep, take;
    bool apply;
};

// Step t >= 1 of the nested optimizer. The average takes the parameters at
// steps 1, 1 + every, 1 + 2 every, ...: update n = (t - 1) / every + 1, with the
// decay D = decay^every per update, so its window in steps stays 1/(1 - decay).
// window_fraction 0: the fixed D, bias-corrected by the weight the average has
// accumulated (1 - D^n). window_fraction f in (0, 1]: the decay
// min(D, max(0, 1 - 1/(f n))), whose first update is 0, so the weights sum to 1.
// (Not FUSEDNGP_HD: src/gpu/mlp_shape.h defines that macro its own way, and
// the optimizer kernels see both headers.)
#if defined(__CUDACC__)
__host__ __device__
#endif
inline EmaStepWeights ema_step_weights(double decay, double window_fraction, uint32_t every, uint64_t t) {
    if (every > 1 && (t - 1) % every != 0) return {1.0, 0.0, false};
    const double n = (double)((t - 1) / (every > 1 ? every : 1) + 1);
    const double d = every > 1 ? pow(decay, (double)every) : decay;
    if (window_fraction > 0) {
        const double grown = fmin(d, fmax(0.0, 1.0 - 1.0 / (window_fraction * n)));
        return {grown, 1.0 - grown, true};
    }
    const double new_weight = 1.0 - pow(d, n);
    return {d * (1.0 - pow(d, n - 1.0)) / new_weight, (1.0 - d) / new_weight, true};
}

} // namespace fusedngp
