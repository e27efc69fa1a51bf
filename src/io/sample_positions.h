// Where the image mode's training samples land, shared by the CPU sampler
// (io/sampling.cpp) and the CUDA backend's sampling kernel, so both backends
// train on the same distribution.
//
// instant-ngp's defaults, which decide how far image fitting gets:
// - Stratified positions: the first side^2 samples of a batch (side =
//   floor(sqrt(batch))) each get one cell of a side x side grid over the
//   image, jittered uniformly inside it; the rest are uniform. A batch then
//   covers the image evenly, which takes most of the sampling noise out of the
//   gradient (the MLP's weights see every region every step).
// - Pixel-centre targets: a sample snaps to the centre of the pixel it falls
//   in and learns that pixel's stored value, the quantity PSNR measures. With
//   bilinear targets at continuous positions the network must also fit the
//   interpolant between centres, and each step's targets are noisier.
// Uniform positions with bilinear targets (the continuous view) remain
// available (`fusedngp train --sampling uniform --targets bilinear`).
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>

#if defined(__CUDACC__)
#define FUSEDNGP_HOST_DEVICE __host__ __device__
#else
#define FUSEDNGP_HOST_DEVICE
#endif

namespace fusedngp {

enum class SamplePositions : uint8_t { Stratified, Uniform };
enum class SampleTargets : uint8_t { PixelCentres, Bilinear };

struct ImageSampling {
    SamplePositions positions = SamplePositions::Stratified;
    SampleTargets targets = SampleTargets::PixelCentres;
};

// floor(sqrt(n)): the side of the stratification grid of a batch of n.
inline uint32_t strata_side(uint32_t n) {
    uint64_t s = (uint64_t)std::sqrt((double)n);
    while (s * s > n) --s;
    while ((s + 1) * (s + 1) <= n) ++s;
    return (uint32_t)s;
}

// Stratified sample i < side^2 takes cell (i * multiplier) mod side^2, a fixed
// permutation rather than row order, so that neighbouring samples (one warp's
// threads) land far apart, as with uniform draws: the grid encoding's atomic
// adds then stay spread over many addresses. The multiplier is side^2 over
// the golden ratio (Fibonacci hashing), made coprime with side^2 so the map
// is a bijection. (A fixed large prime is not enough: 2^32 - 5 is -5 modulo
// 2^18, which put a warp's samples 5 cells apart on one row.)
inline uint64_t strata_multiplier(uint32_t side) {
    const uint64_t cells = (uint64_t)side * side;
    if (cells <= 2) return 1;
    uint64_t m = (uint64_t)((double)cells * 0.6180339887498949) | 1u;
    while (std::gcd(m, cells) != 1) m += 2;
    return m % cells;
}

FUSEDNGP_HOST_DEVICE inline uint32_t stratum_of(uint32_t i, uint32_t side, uint64_t multiplier) {
    const uint64_t cells = (uint64_t)side * side;
    return (uint32_t)((uint64_t)i * multiplier % cells);  // i, multiplier < 2^32: no overflow
}

// (cell + r) / side for a draw r in [0,1), kept below 1 (the division may round up).
template <typename T>
FUSEDNGP_HOST_DEVICE inline T jitter_in_cell(T r, uint32_t cell, uint32_t side) {
    const T x = ((T)cell + r) / (T)side;
    const T below_one = (T)1 - (T)(sizeof(T) == 4 ? 5.9604645e-8 : 1.1102230246251565e-16);
    return x < below_one ? x : below_one;
}

// The pixel (0..size-1) whose footprint [p/size, (p+1)/size) holds u; edges clamp.
template <typename T>
FUSEDNGP_HOST_DEVICE inline int pixel_of(T u, int size) {
    T p = u * (T)size;
    if (!(p >= (T)0)) p = 0;  // negative or NaN
    return p < (T)size ? (int)p : size - 1;
}

template <typename T>
FUSEDNGP_HOST_DEVICE inline T pixel_centre(int p, int size) {
    return ((T)p + (T)0.5) / (T)size;
}

} // namespace fusedngp
