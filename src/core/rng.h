// Seeded random numbers for parameter initialisation and sampling.
//
// We use our own small generator instead of <random> distributions because the
// standard leaves std::uniform_real_distribution's algorithm to the library:
// the same seed must give the same weights on every platform (and in the GPU
// backend, which re-implements this exactly).
//
// Generator: SplitMix64 (Steele, Lea, Flood 2014). A uniform float in [0,1)
// takes the top 24 bits (float) or 53 bits (double) of one 64-bit output.
#pragma once

#include "core/host_device.h"

#include <cstdint>

namespace fusedngp {

// splitmix64's finaliser: a bijective 64-bit mix (the generator below, and
// the counter-based numbers of the GPU samplers and their CPU twins).
FUSEDNGP_HD uint64_t splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Counter-based uniform in [0, 1): 24 bits of the mix of key + counter * the
// golden ratio, exactly representable in float, so host and device agree bit
// for bit whatever order the numbers are drawn in.
FUSEDNGP_HD float counter_uniform01(uint64_t key, uint64_t counter) {
    return (float)(splitmix64_mix(key + counter * 0x9E3779B97F4A7C15ull) >> 40) * (1.f / 16777216.f);
}

class Rng {
public:
    explicit Rng(uint64_t seed = 0) : state_(seed) {}

    uint64_t next_u64() { return splitmix64_mix(state_ += 0x9E3779B97F4A7C15ull); }

    // Uniform in [0, 1).
    double next_double() { return (double)(next_u64() >> 11) * 0x1.0p-53; }
    float next_float() { return (float)(next_u64() >> 40) * 0x1.0p-24f; }

    // Uniform in [lo, hi).
    template <typename T>
    T uniform(T lo, T hi) { return lo + (hi - lo) * (T)next_double(); }

    uint64_t state() const { return state_; }
    void set_state(uint64_t s) { state_ = s; }

private:
    uint64_t state_;
};

// Derive an independent stream for a component from a model seed, so adding a
// component does not shift the initialisation of the others.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
    Rng r(seed ^ (stream * 0xD1B54A32D192ED03ull));
    return r.next_u64();
}

} // namespace fusedngp
