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
//
// The order of the strata within a batch (SampleOrder) changes no sample, only
// which sample gets which row of the batch: Spread puts one warp's 32 samples
// far apart; Tiled (the default) makes each aligned group of 32 samples a
// compact 8 x 4 tile of strata (the tiles themselves in a spread order), so
// the grid encoding's gradient can add a warp's contributions to shared rows
// before its atomics (GridKernelOptions::gradient_warp_aggregate_shared, which
// the CUDA backend turns on for this order). On the H200 the image-fit step
// is 4 % faster this way (0.346 against 0.360 ms, docs/GPU_COMPONENTS.md,
// "Warp aggregation"); the tiled forward also reads neighbouring rows.
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
enum class SampleOrder : uint8_t { Spread, Tiled };

struct ImageSampling {
    SamplePositions positions = SamplePositions::Stratified;
    SampleTargets targets = SampleTargets::PixelCentres;
    SampleOrder order = SampleOrder::Tiled;
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
// 2^18, which put a warp's samples 5 cells apart on one row.) The samplers
// call stratum_at (below, with a Barrett reduction); stratum_of is the plain
// reference the tests hold it to.
//
// n over the golden ratio, odd, made coprime with n: i -> (i * m) mod n is
// then a bijection on [0, n) that puts consecutive i far apart.
inline uint64_t fibonacci_multiplier(uint64_t n) {
    if (n <= 2) return 1;
    uint64_t m = (uint64_t)((double)n * 0.6180339887498949) | 1u;
    while (std::gcd(m, n) != 1) m += 2;
    return m % n;
}

inline uint64_t strata_multiplier(uint32_t side) { return fibonacci_multiplier((uint64_t)side * side); }

FUSEDNGP_HOST_DEVICE inline uint32_t stratum_of(uint32_t i, uint32_t side, uint64_t multiplier) {
    const uint64_t cells = (uint64_t)side * side;
    return (uint32_t)((uint64_t)i * multiplier % cells);  // i, multiplier < 2^32: no overflow
}

// The high 64 bits of a * b.
FUSEDNGP_HOST_DEVICE inline uint64_t mul_hi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
    return __umul64hi(a, b);
#else
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#endif
}

// x mod n without a 64-bit division (a long instruction sequence on the GPU):
// Barrett reduction with inverse = floor((2^64 - 1) / n), n >= 1, then at most
// two corrections. Exact, so it equals x % n.
FUSEDNGP_HOST_DEVICE inline uint64_t mod_barrett(uint64_t x, uint64_t n, uint64_t inverse) {
    uint64_t r = x - mul_hi64(x, inverse) * n;
    while (r >= n) r -= n;
    return r;
}

// Where stratified sample i < side^2 goes, for either order; made once per
// batch size on the host (make_strata_order) and passed by value to the CPU
// sampler and the CUDA sampling kernel, which both call stratum_at: one
// function, so both backends train on the same sample order.
//
// Tiled: the side x side strata split into full 8 x 4 tiles (columns
// [0, 8 * full_x), rows [0, 4 * full_y)), a right strip (the side % 8 columns
// beside them) and a bottom strip (the side % 4 rows below everything).
// Samples [32 t, 32 t + 32) fill full tile (t * multiplier) mod n_tiles row by
// row (lane & 7 = column, lane >> 3 = row); then the right strip row by row
// (a group of 32 is side % 8 wide), then the bottom strip column by column
// from the right (side % 4 tall; it starts below where the right strip ends,
// so a group spanning both stays compact). A bijection on the side^2 cells
// for every side.
constexpr uint32_t kStrataTileWidth = 8, kStrataTileHeight = 4;

struct StrataOrder {
    uint32_t side = 0;
    SampleOrder order = SampleOrder::Spread;
    uint64_t modulus = 1;     // Spread: side^2; Tiled: full tiles (>= 1)
    uint64_t multiplier = 1;  // fibonacci_multiplier(modulus)
    uint64_t inverse = ~0ull; // floor((2^64 - 1) / modulus)
    uint32_t full_x = 0, full_y = 0;  // Tiled: full tiles per row and column
};

inline StrataOrder make_strata_order(uint32_t side, SampleOrder order) {
    StrataOrder o;
    o.side = side;
    o.order = order;
    uint64_t n = (uint64_t)side * side;
    if (order == SampleOrder::Tiled) {
        o.full_x = side / kStrataTileWidth;
        o.full_y = side / kStrataTileHeight;
        n = (uint64_t)o.full_x * o.full_y;
    }
    o.modulus = n > 0 ? n : 1;
    o.multiplier = fibonacci_multiplier(o.modulus);
    o.inverse = ~0ull / o.modulus;
    return o;
}

// The cell (row * side + column) of stratified sample i < side^2.
FUSEDNGP_HOST_DEVICE inline uint32_t stratum_at(const StrataOrder& o, uint32_t i) {
    if (o.order == SampleOrder::Spread) {
        return (uint32_t)mod_barrett((uint64_t)i * o.multiplier, o.modulus, o.inverse);  // = stratum_of
    }
    const uint32_t side = o.side;
    const uint32_t full_tiles = o.full_x * o.full_y;
    const uint32_t tile_samples = kStrataTileWidth * kStrataTileHeight;
    uint32_t x, y;
    if (i / tile_samples < full_tiles) {
        const uint32_t tile = (uint32_t)mod_barrett((uint64_t)(i / tile_samples) * o.multiplier, o.modulus, o.inverse);
        const uint32_t lane = i % tile_samples;
        x = tile % o.full_x * kStrataTileWidth + lane % kStrataTileWidth;
        y = tile / o.full_x * kStrataTileHeight + lane / kStrataTileWidth;
    } else {
        const uint32_t right_width = side - o.full_x * kStrataTileWidth;
        const uint32_t tiled_height = o.full_y * kStrataTileHeight;
        const uint32_t j = i - full_tiles * tile_samples;
        if (j < right_width * tiled_height) {
            x = o.full_x * kStrataTileWidth + j % right_width;
            y = j / right_width;
        } else {
            const uint32_t k = j - right_width * tiled_height;
            const uint32_t bottom_height = side - tiled_height;
            x = side - 1 - k / bottom_height;
            y = tiled_height + k % bottom_height;
        }
    }
    return y * side + x;
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
