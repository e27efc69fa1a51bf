// Multi-resolution grid encoding kernels. docs/ENCODINGS.md ("Grid") is the
// specification; this is a port of src/encodings/grid.cpp.
//
// Bit-for-bit where it matters: the cell location (p = x*scale + 0.5, its
// floor and fraction) and the corner weights use round-to-nearest intrinsics,
// which nvcc never fuses into FMAs, so every sample lands in the same cell
// with the same weights as on the CPU (this decides Nearest's output and the
// row that receives each gradient). The feature sums may use FMAs: they only
// move the result by rounding.
//
// Thread mapping (docs/GPU_COMPONENTS.md, "Grid", has the measurements):
// - Forward: one thread per (sample, level). Consecutive threads take
//   consecutive levels of one sample in runs of G = 2^forward_group_log2
//   (blockIdx.y = run of levels), so a warp writes whole G*F-float pieces of
//   each output row instead of F floats at a stride of n_levels*F.
// - Parameter gradient: one launch over all levels (up to 64 per launch),
//   with per-level block ranges. Levels whose fp32 gradient table fits the
//   shared-memory budget (the coarse dense levels: a few KB hit by millions
//   of atomics) are summed per block in shared memory over a chunk of
//   samples, then each touched row is added to the gradient with one vector
//   atomic; their blocks come first in the launch because they run longest.
//   The other levels (hashed) add each corner with one global vector atomic,
//   consecutive threads taking consecutive levels of a sample. With
//   gradient_warp_aggregate_shared, a warp first sums its lanes'
//   contributions to the same row before the shared-memory atomics.
// - Input gradient: one thread per sample, levels summed in ascending order,
//   as the CPU does (no atomics, deterministic).
// Only the parameter gradient uses atomics; the forward is bit-identical for
// every thread mapping.

#include "component_device.cuh"
#include "launch_common.h"
#include "launch_grid.h"

#include <cuda_fp16.h>

#include <cstdint>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace fusedngp::gpu {

namespace {

constexpr uint32_t kHashPrime1 = 2654435761u;
constexpr uint32_t kHashPrime2 = 805459861u;

template <int D>
struct DeviceCell {
    uint32_t lower[D];  // lower vertex
    float w[D];         // shaped weight of the upper vertex per axis
    float dw[D];        // d w / d p per axis; 0 for Nearest and clamped axes
};

template <int D>
__device__ inline void locate_cell(const float* x, float scale, GridWeights weights, DeviceCell<D>& cell) {
#pragma unroll
    for (int i = 0; i < D; ++i) {
        const float xi = x[i];
        const bool inside = xi >= 0.f && xi <= 1.f;
        const float xc = xi >= 0.f ? (xi <= 1.f ? xi : 1.f) : 0.f;  // NaN -> 0
        const float p = __fadd_rn(__fmul_rn(xc, scale), 0.5f);
        const float c = floorf(p);
        const float w = __fsub_rn(p, c);
        cell.lower[i] = (uint32_t)c;
        float shaped = w, slope = 1.f;
        if (weights == GridWeights::Smoothstep) {
            shaped = __fmul_rn(__fmul_rn(w, w), __fsub_rn(3.f, __fmul_rn(2.f, w)));
            slope = __fmul_rn(__fmul_rn(6.f, w), __fsub_rn(1.f, w));
        } else if (weights == GridWeights::Nearest) {
            shaped = w >= 0.5f ? 1.f : 0.f;
            slope = 0.f;
        }
        cell.w[i] = shaped;
        cell.dw[i] = inside ? slope : 0.f;
    }
}

// Corner k (bit i of k: upper vertex along axis i) of the cell at `lower`.
template <int D>
__device__ inline void corner_vertex(const uint32_t (&lower)[D], int k, uint32_t* vertex) {
#pragma unroll
    for (int i = 0; i < D; ++i) vertex[i] = lower[i] + (uint32_t)((k >> i) & 1);
}

// Corner k: its vertex and weight.
template <int D>
__device__ inline float corner_weight(const DeviceCell<D>& cell, int k, uint32_t* vertex) {
    corner_vertex<D>(cell.lower, k, vertex);
    float weight = 1.f;
#pragma unroll
    for (int i = 0; i < D; ++i) weight = __fmul_rn(weight, (k >> i) & 1 ? cell.w[i] : __fsub_rn(1.f, cell.w[i]));
    return weight;
}

template <int D>
__device__ inline uint32_t vertex_row(const GridLevelInfo& level, const uint32_t* v) {
    switch (level.indexing) {
        case GridRowIndexing::Hash: {
            uint32_t h = v[0] ^ (v[1] * kHashPrime1);
            if constexpr (D == 3) h ^= v[2] * kHashPrime2;
            return h & level.hash_mask;
        }
        case GridRowIndexing::Tiled: {
            const uint32_t b = level.stride;
            uint32_t row = v[0] % b + (v[1] % b) * b;
            if constexpr (D == 3) row += (v[2] % b) * b * b;
            return row;
        }
        case GridRowIndexing::Dense:
        default: {
            const uint32_t r = level.stride;
            uint32_t row = v[0] + v[1] * r;
            if constexpr (D == 3) row += v[2] * r * r;
            return row;
        }
    }
}

// One table row (F features) as floats. fp16 rows are read with one vector
// load: a row starts at a multiple of F halves in a cudaMalloc'd buffer, so
// it is aligned to 2F bytes.
template <int F>
__device__ inline void load_features(const __half* __restrict__ table, uint32_t row, float (&f)[F]) {
    const __half* p = table + (size_t)row * F;
    if constexpr (F == 1) {
        f[0] = __half2float(__ldg(p));
    } else if constexpr (F == 2) {
        const float2 v = __half22float2(__ldg(reinterpret_cast<const __half2*>(p)));
        f[0] = v.x;
        f[1] = v.y;
    } else {
        using Raw = typename std::conditional<F == 4, uint2, uint4>::type;
        const Raw raw = __ldg(reinterpret_cast<const Raw*>(p));
        const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
        for (int j = 0; j < F / 2; ++j) {
            const float2 v = __half22float2(h[j]);
            f[2 * j] = v.x;
            f[2 * j + 1] = v.y;
        }
    }
}

// Row `at` (a byte offset inside a 16-byte chunk, a multiple of the row's 2F
// bytes) of an fp16 chunk, as floats. Selects, not a dynamic register index.
template <int F>
__device__ inline void features_from_chunk(const uint4& raw, uint32_t at, float (&f)[F]) {
    const uint32_t w = at >> 2;  // 32-bit word holding the row (F = 1, 2) or its start (F = 4)
    const uint32_t lo = w == 0 ? raw.x : w == 1 ? raw.y : w == 2 ? raw.z : raw.w;
    if constexpr (F == 1) {
        const uint16_t bits = (uint16_t)((at & 2u) ? (lo >> 16) : (lo & 0xFFFFu));
        f[0] = __half2float(__ushort_as_half(bits));
    } else {
        const uint32_t hi = w == 0 ? raw.y : raw.w;  // F = 4: rows start at words 0 or 2
        const uint32_t words[2] = {lo, hi};
#pragma unroll
        for (int j = 0; j < F / 2; ++j) {
            const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&words[j]));
            f[2 * j] = v.x;
            f[2 * j + 1] = v.y;
        }
    }
}

// fp32 master rows may sit at any float offset (inside a Composite's block),
// so they are read one float at a time.
template <int F>
__device__ inline void load_features(const float* __restrict__ table, uint32_t row, float (&f)[F]) {
    const float* p = table + (size_t)row * F;
#pragma unroll
    for (int j = 0; j < F; ++j) f[j] = __ldg(p + j);
}

// The two corners of a cell edge along x (rows ra, rb of one level's table).
// fp16 tables (2F-byte rows, F = 1, 2, 4) with `chunks`: where both rows sit
// in one aligned 16-byte chunk that lies inside the level's table (dense rows
// x, x+1 and hashed rows x ^ c, (x+1) ^ c: three times in four for F = 2), one
// 16-byte load serves both: the forward is bound by L2 sector requests, and
// this takes 2 corners' requests down to one. Otherwise one load per row;
// the same values either way.
template <int F, typename P>
__device__ inline void load_feature_pair(const P* __restrict__ level_table, uint32_t rows, uint32_t ra, uint32_t rb,
                                         bool chunks, float (&fa)[F], float (&fb)[F]) {
    if constexpr (std::is_same<P, __half>::value && F <= 4) {
        constexpr uintptr_t kRowBytes = 2 * F;
        const uintptr_t base = reinterpret_cast<uintptr_t>(level_table);
        const uintptr_t a = base + ra * kRowBytes, b = base + rb * kRowBytes;
        const uintptr_t chunk = a & ~uintptr_t(15);
        const bool inside = chunk >= base && chunk + 16 <= base + rows * kRowBytes;
        if (chunks && inside && (b & ~uintptr_t(15)) == chunk) {
            const uint4 raw = __ldg(reinterpret_cast<const uint4*>(chunk));
            features_from_chunk<F>(raw, (uint32_t)(a - chunk), fa);
            features_from_chunk<F>(raw, (uint32_t)(b - chunk), fb);
            return;
        }
    }
    load_features<F>(level_table, ra, fa);
    load_features<F>(level_table, rb, fb);
}

template <int D>
__device__ inline void load_input(ConstDeviceRows in, uint32_t sample, float (&x)[D]) {
    const float* row = in.data + (size_t)sample * in.stride;
#pragma unroll
    for (int i = 0; i < D; ++i) x[i] = row[i];
}

// F floats at y, as float4/float2 stores when vector_width (4, 2 or 1 floats,
// uniform over the launch: the output's base and row stride allow it) says so.
template <int F>
__device__ inline void store_features(float* y, const float (&v)[F], uint32_t vector_width) {
    if constexpr (F % 4 == 0) {
        if (vector_width == 4) {
#pragma unroll
            for (int j = 0; j < F / 4; ++j)
                reinterpret_cast<float4*>(y)[j] = make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
            return;
        }
    }
    if constexpr (F % 2 == 0) {
        if (vector_width >= 2) {
#pragma unroll
            for (int j = 0; j < F / 2; ++j) reinterpret_cast<float2*>(y)[j] = make_float2(v[2 * j], v[2 * j + 1]);
            return;
        }
    }
#pragma unroll
    for (int f = 0; f < F; ++f) y[f] = v[f];
}

// Thread (blockIdx.x * blockDim.x + threadIdx.x) encodes sample item >> g at
// level (blockIdx.y << g) + (item & (2^g - 1)), g = forward_group_log2.
template <int D, int F, typename P>
__global__ void __launch_bounds__(kThreadsPerBlock)
    grid_forward_kernel(GridShape shape, const P* __restrict__ table, ConstDeviceRows in, DeviceRows out,
                        uint32_t batch, uint32_t out_vector_width) {
    const uint32_t group_log2 = shape.config.forward_group_log2;
    const unsigned long long item = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long sample = item >> group_log2;
    const uint32_t l = (blockIdx.y << group_log2) + (uint32_t)(item & ((1u << group_log2) - 1u));
    if (sample >= batch || l >= shape.n_levels) return;
    const GridLevelInfo level = shape.levels[l];
    float x[D];
    load_input<D>(in, (uint32_t)sample, x);
    DeviceCell<D> cell;
    locate_cell<D>(x, level.scale, shape.weights, cell);

    const P* level_table = table + level.param_offset;
    float acc[F] = {};
    // Corners k and k + 1 differ in x only (load_feature_pair); summed in k order.
#pragma unroll
    for (int k = 0; k < (1 << D); k += 2) {
        uint32_t va[D], vb[D];
        const float wa = corner_weight<D>(cell, k, va), wb = corner_weight<D>(cell, k + 1, vb);
        float fa[F], fb[F];
        load_feature_pair<F>(level_table, level.rows, vertex_row<D>(level, va), vertex_row<D>(level, vb),
                             shape.config.forward_chunk_loads, fa, fb);
#pragma unroll
        for (int f = 0; f < F; ++f) acc[f] += wa * fa[f];
#pragma unroll
        for (int f = 0; f < F; ++f) acc[f] += wb * fb[f];
    }
    store_features<F>(out.data + (size_t)sample * out.stride + (size_t)l * F, acc, out_vector_width);
}

// ---- parameter gradient ---------------------------------------------------------

// Widest atomic (4, 2 or 1 floats) that rows of F floats starting at p allow:
// p is the level's first gradient element, rows are F floats, so the level's
// alignment is every row's. A grid inside a Composite may start at any float.
template <int F>
__device__ inline uint32_t gradient_vector_width(const float* p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (F % 4 == 0 && (a & 15u) == 0) return 4;
    if (F % 2 == 0 && (a & 7u) == 0) return 2;
    return 1;
}

// g[f] += v[f] for one row: one 16- or 8-byte vector atomic per 4 or 2
// features where the device has them (sm_90) and the row is aligned, which
// halves (quarters) the atomic operations that bound this kernel.
template <int F>
__device__ inline void atomic_add_features(float* g, const float (&v)[F], [[maybe_unused]] uint32_t vector_width) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (F % 4 == 0) {
        if (vector_width == 4) {
#pragma unroll
            for (int j = 0; j < F / 4; ++j)
                atomicAdd(reinterpret_cast<float4*>(g) + j, make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]));
            return;
        }
    }
    if constexpr (F % 2 == 0) {
        if (vector_width >= 2) {
#pragma unroll
            for (int j = 0; j < F / 2; ++j) atomicAdd(reinterpret_cast<float2*>(g) + j, make_float2(v[2 * j], v[2 * j + 1]));
            return;
        }
    }
#endif
#pragma unroll
    for (int f = 0; f < F; ++f) atomicAdd(g + f, v[f]);
}

// Rows r and r + 1 (r even, the level's gradient aligned to 2F floats) += the
// two corners' contributions, as one 2F-float vector atomic (F = 1, 2; sm_90).
template <int F>
__device__ inline void atomic_add_row_pair([[maybe_unused]] float* g, [[maybe_unused]] const float (&lower)[F],
                                           [[maybe_unused]] const float (&upper)[F]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (F == 1) {
        atomicAdd(reinterpret_cast<float2*>(g), make_float2(lower[0], upper[0]));
    } else if constexpr (F == 2) {
        atomicAdd(reinterpret_cast<float4*>(g), make_float4(lower[0], lower[1], upper[0], upper[1]));
    }
#endif
}

// Whether a level's corner pairs may use atomic_add_row_pair: F <= 2, sm_90,
// the option on, the level's gradient aligned to 2F floats.
template <int F>
__device__ inline bool row_pairs_allowed([[maybe_unused]] const GridShape& shape, [[maybe_unused]] const float* level_grad) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (F <= 2) {
        return shape.config.gradient_pair_corners && (reinterpret_cast<uintptr_t>(level_grad) & (8u * F - 1u)) == 0;
    }
#endif
    return false;
}

template <int F>
__device__ inline void load_level_dout(ConstDeviceRows dout, uint32_t sample, uint32_t l, float (&gy)[F]) {
    const float* row = dout.data + (size_t)sample * dout.stride + (size_t)l * F;
#pragma unroll
    for (int f = 0; f < F; ++f) gy[f] = row[f];
}

// Corners k and k + 1 of one cell (they differ along x only) += v0, v1:
// weights w0, w1 (or sums of weights: never negative) say which corners got
// anything. A zero weight adds (+-)0: skipping it leaves the sum unchanged,
// keeps untouched rows exactly zero (Adam skips those) and saves most atomics
// for Nearest.
template <int D, int F>
__device__ inline void add_corner_pair(const GridLevelInfo& level, float* level_grad, const uint32_t (&vertex0)[D],
                                       const uint32_t (&vertex1)[D], float w0, float w1, const float (&v0)[F],
                                       const float (&v1)[F], uint32_t vector_width, bool pairs) {
    if (w0 == 0.f && w1 == 0.f) return;
    const uint32_t row0 = vertex_row<D>(level, vertex0), row1 = vertex_row<D>(level, vertex1);
    // Consecutive rows (dense: x + 1; hashed: x ^ 1 for even x, as the
    // hash keeps x unmultiplied) starting at an even row: one atomic, where
    // a zero-weight partner's +-0 changes nothing.
    if (pairs && row1 == row0 + 1 && (row0 & 1u) == 0) {
        atomic_add_row_pair<F>(level_grad + (size_t)row0 * F, v0, v1);
        return;
    }
    if (w0 != 0.f) atomic_add_features<F>(level_grad + (size_t)row0 * F, v0, vector_width);
    if (w1 != 0.f) atomic_add_features<F>(level_grad + (size_t)row1 * F, v1, vector_width);
}

// One sample's contribution to level l, straight into the global gradient.
template <int D, int F>
__device__ inline void add_sample_gradient(const GridShape& shape, uint32_t l, uint32_t sample, ConstDeviceRows in,
                                           ConstDeviceRows dout, float* dparams) {
    const GridLevelInfo level = shape.levels[l];
    float gy[F];
    load_level_dout<F>(dout, sample, l, gy);
    float x[D];
    load_input<D>(in, sample, x);
    DeviceCell<D> cell;
    locate_cell<D>(x, level.scale, shape.weights, cell);

    float* level_grad = dparams + level.param_offset;
    const uint32_t vector_width = gradient_vector_width<F>(level_grad);
    const bool pairs = row_pairs_allowed<F>(shape, level_grad);
#pragma unroll
    for (int k = 0; k < (1 << D); k += 2) {
        uint32_t vertex0[D], vertex1[D];
        const float weight0 = corner_weight<D>(cell, k, vertex0);
        const float weight1 = corner_weight<D>(cell, k + 1, vertex1);
        float v0[F], v1[F];
#pragma unroll
        for (int f = 0; f < F; ++f) {
            v0[f] = weight0 * gy[f];
            v1[f] = weight1 * gy[f];
        }
        add_corner_pair<D, F>(level, level_grad, vertex0, vertex1, weight0, weight1, v0, v1, vector_width, pairs);
    }
}

// ---- sample runs (GridKernelConfig::gradient_sample_run) ----------------------
// Where consecutive samples lie close together (NeRF's, ray by ray, a
// minimum step apart), most of them fall in the cell of the sample before at
// all but the finest levels. A thread then takes a run of consecutive samples
// at one level and sums their corner contributions in registers while the
// cell stays the same: one set of atomics per cell visited instead of one per
// sample. The gradient is bound by L2 atomics, and most of all by same-address
// ones, which lanes whose samples share a cell issue at once.

// The corner sums of the cell a run is in.
template <int D, int F>
struct CellSums {
    uint32_t lower[D];
    float v[1 << D][F];
    float w[1 << D];  // the corner's weights summed: zero only where every weight was
};

template <int D, int F>
__device__ inline void open_cell(const DeviceCell<D>& cell, CellSums<D, F>& sums) {
#pragma unroll
    for (int i = 0; i < D; ++i) sums.lower[i] = cell.lower[i];
#pragma unroll
    for (int k = 0; k < (1 << D); ++k) {
        sums.w[k] = 0.f;
#pragma unroll
        for (int f = 0; f < F; ++f) sums.v[k][f] = 0.f;
    }
}

template <int D, int F>
__device__ inline void flush_cell(const GridLevelInfo& level, const CellSums<D, F>& sums, float* level_grad,
                                  uint32_t vector_width, bool pairs) {
#pragma unroll
    for (int k = 0; k < (1 << D); k += 2) {
        uint32_t vertex0[D], vertex1[D];
        corner_vertex<D>(sums.lower, k, vertex0);
        corner_vertex<D>(sums.lower, k + 1, vertex1);
        add_corner_pair<D, F>(level, level_grad, vertex0, vertex1, sums.w[k], sums.w[k + 1], sums.v[k], sums.v[k + 1],
                              vector_width, pairs);
    }
}

// Samples [first, end) of level l, in order, into the global gradient.
template <int D, int F>
__device__ void add_sample_run_gradient(const GridShape& shape, uint32_t l, uint32_t first, uint32_t end,
                                        ConstDeviceRows in, ConstDeviceRows dout, float* dparams) {
    const GridLevelInfo level = shape.levels[l];
    float* level_grad = dparams + level.param_offset;
    const uint32_t vector_width = gradient_vector_width<F>(level_grad);
    const bool pairs = row_pairs_allowed<F>(shape, level_grad);
    CellSums<D, F> sums;
    bool open = false;
    // The next sample's loads are issued before this one's atomics.
    float x[D], gy[F];
    load_input<D>(in, first, x);
    load_level_dout<F>(dout, first, l, gy);
    for (uint32_t s = first; s < end; ++s) {
        float next_x[D] = {}, next_gy[F] = {};
        if (s + 1 < end) {
            load_input<D>(in, s + 1, next_x);
            load_level_dout<F>(dout, s + 1, l, next_gy);
        }
        DeviceCell<D> cell;
        locate_cell<D>(x, level.scale, shape.weights, cell);
        bool same = open;
#pragma unroll
        for (int i = 0; i < D; ++i) same = same && cell.lower[i] == sums.lower[i];
        if (!same) {
            if (open) flush_cell<D, F>(level, sums, level_grad, vector_width, pairs);
            open_cell<D, F>(cell, sums);
            open = true;
        }
#pragma unroll
        for (int k = 0; k < (1 << D); ++k) {
            uint32_t vertex[D];
            const float weight = corner_weight<D>(cell, k, vertex);
            sums.w[k] += weight;
#pragma unroll
            for (int f = 0; f < F; ++f) sums.v[k][f] += weight * gy[f];
        }
#pragma unroll
        for (int i = 0; i < D; ++i) x[i] = next_x[i];
#pragma unroll
        for (int f = 0; f < F; ++f) gy[f] = next_gy[f];
    }
    if (open) flush_cell<D, F>(level, sums, level_grad, vector_width, pairs);
}

// ---- warp aggregation (GridKernelConfig::gradient_warp_aggregate_shared) ----------
// Where a warp's samples lie close together (the image sampler's tiled order:
// 32 samples = 8 x 4 strata), many of its lanes add to the same rows at the
// coarser levels. Those lanes first sum their contributions: lanes with the
// same key (the row) find each other with __match_any_sync, a shuffle tree
// sums each such set into its lowest lane, and only that lane issues the
// shared-memory atomic. Same sums in another order (fp32 rounding only).
// (A global-level variant, one global atomic per distinct row pair, never
// paid on the H200, on either sample order, and is not built;
// docs/GPU_COMPONENTS.md, "Warp aggregation".)
//
// Each lane offers its contributions in 2^D rounds, one row (corner k) per
// round; a row's round depends only on its vertex parities (x, y, z), never
// on the lane, so every lane adding to one row offers it in the same round,
// and each lane offers exactly one corner a round.
// Every lane of the warp must make the calls (full-mask shuffles and votes):
// lanes without a sample pass valid = false, and control flow around the
// calls is warp-uniform.
constexpr unsigned kFullWarp = 0xFFFFFFFFu;

// Sums v over each set of lanes with the same key into the set's lowest lane;
// true on that lane. `peers`: this lane's set (__match_any_sync), this lane
// included. A pairwise tree by rank within the set: in round s a lane adds
// the value of its next higher live peer, then the lanes whose rank has bit
// s set stop (NVIDIA's reduce_peers); at most 5 rounds, none when no two
// lanes share a key.
template <int N>
__device__ inline bool sum_into_lowest_peer(unsigned peers, float (&v)[N]) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned lower = peers & ((1u << lane) - 1u);
    unsigned rank = __popc(lower);
    unsigned higher = peers & ~((2u << lane) - 1u);  // lane 31: 2u << 31 == 0, so none
    while (__any_sync(kFullWarp, higher != 0)) {
        const int next = __ffs(higher);  // 1 + lane of the next live peer, 0 if none
        const int source = next > 0 ? next - 1 : (int)lane;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const float t = __shfl_sync(kFullWarp, v[j], source);
            if (next > 0) v[j] += t;
        }
        higher &= ~__ballot_sync(kFullWarp, (rank & 1u) != 0);
        rank >>= 1;
    }
    return lower == 0;
}

// The lanes with valid set and equal keys sum v; the lowest of each calls
// add(v) with the sum. Warp-uniform call.
template <int N, typename Key, typename Add>
__device__ inline void warp_aggregated_add(bool valid, Key key, float (&v)[N], Add&& add) {
    const unsigned valid_lanes = __ballot_sync(kFullWarp, valid);
    if (valid_lanes == 0) return;
    unsigned peers = 1u << (threadIdx.x & 31u);
    if (valid) peers = __match_any_sync(valid_lanes, key);
    if (sum_into_lowest_peer<N>(peers, v) && valid) add(v);
}

// Samples [begin, end) of level l into the block's shared copy of the
// level's gradient table (shared_rows), one shared atomic per corner. Samples
// are loaded U at a time so several loads are in flight per thread.
template <int D, int F>
__device__ void accumulate_chunk_shared(const GridShape& shape, const GridLevelInfo& level, uint32_t l,
                                        unsigned long long begin, unsigned long long end, ConstDeviceRows in,
                                        ConstDeviceRows dout, float* shared_rows) {
    constexpr int U = D == 2 && F <= 2 ? 2 : 1;  // more would cost occupancy (registers)
    for (unsigned long long first = begin + threadIdx.x; first < end; first += (unsigned long long)U * blockDim.x) {
        float x[U][D], gy[U][F];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const unsigned long long sample = first + (unsigned long long)u * blockDim.x;
            if (sample < end) {
                load_input<D>(in, (uint32_t)sample, x[u]);
                load_level_dout<F>(dout, (uint32_t)sample, l, gy[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (first + (unsigned long long)u * blockDim.x >= end) break;
            DeviceCell<D> cell;
            locate_cell<D>(x[u], level.scale, shape.weights, cell);
#pragma unroll
            for (int k = 0; k < (1 << D); ++k) {
                uint32_t vertex[D];
                const float weight = corner_weight<D>(cell, k, vertex);
                if (weight == 0.f) continue;  // as in add_sample_gradient
                float* g = shared_rows + vertex_row<D>(level, vertex) * F;
#pragma unroll
                for (int f = 0; f < F; ++f) atomicAdd(g + f, weight * gy[u][f]);
            }
        }
    }
}

// The same with the warp's lanes summing equal rows first (see "warp
// aggregation" above): round r takes each lane's corner whose vertex parities
// (x, y, z) are r's bits. The sample loop is warp-uniform (32 consecutive
// samples per warp and iteration).
template <int D, int F>
__device__ void accumulate_chunk_shared_aggregated(const GridShape& shape, const GridLevelInfo& level, uint32_t l,
                                                   unsigned long long begin, unsigned long long end,
                                                   ConstDeviceRows in, ConstDeviceRows dout, float* shared_rows) {
    const uint32_t lane = threadIdx.x & 31u;
    for (unsigned long long base = begin + (threadIdx.x & ~31u); base < end; base += blockDim.x) {
        const unsigned long long sample = base + lane;
        const bool valid = sample < end;
        float x[D] = {}, gy[F] = {};
        if (valid) {
            load_input<D>(in, (uint32_t)sample, x);
            load_level_dout<F>(dout, (uint32_t)sample, l, gy);
        }
        DeviceCell<D> cell;
        locate_cell<D>(x, level.scale, shape.weights, cell);
        uint32_t lower_parity = 0;
#pragma unroll
        for (int i = 0; i < D; ++i) lower_parity |= (cell.lower[i] & 1u) << i;
#pragma unroll 1
        for (int round = 0; round < (1 << D); ++round) {
            const int k = (int)((uint32_t)round ^ lower_parity);  // vertex parities lower + bits(k) = round
            uint32_t vertex[D];
            const float weight = corner_weight<D>(cell, k, vertex);
            const uint32_t row = vertex_row<D>(level, vertex);
            float v[F];
#pragma unroll
            for (int f = 0; f < F; ++f) v[f] = weight * gy[f];
            warp_aggregated_add<F>(valid && weight != 0.f, row, v, [&](const float (&sum)[F]) {
                float* g = shared_rows + row * F;
#pragma unroll
                for (int f = 0; f < F; ++f) atomicAdd(g + f, sum[f]);
            });
        }
    }
}

// Samples [begin, end) of level l, summed in the block's shared copy of the
// level's gradient table (rows * F floats), then flushed: one atomic per row
// that received a non-zero sum.
template <int D, int F, bool Aggregated>
__device__ void add_chunk_gradient_shared(const GridShape& shape, uint32_t l, unsigned long long begin,
                                          unsigned long long end, ConstDeviceRows in, ConstDeviceRows dout,
                                          float* dparams, float* shared_rows) {
    const GridLevelInfo level = shape.levels[l];
    // rows rounded up to even (shared_table_bytes): the pair flush below may
    // read the zero row after an odd last row.
    const uint32_t n = (level.rows + (level.rows & 1u)) * F;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) shared_rows[i] = 0.f;
    __syncthreads();
    // The Aggregated kernel runs only where gradient_warp_aggregate_shared is
    // set (gradient_kernel), so the run-time test is always true there. It
    // stays: without it ptxas (nvcc 13.0, sm_90) gives the image-fit shape's
    // kernel (2D F = 2) 40 registers and a 4-byte spill instead of 37 and none.
    if constexpr (Aggregated) {
        if (shape.config.gradient_warp_aggregate_shared) {
            accumulate_chunk_shared_aggregated<D, F>(shape, level, l, begin, end, in, dout, shared_rows);
        } else {
            accumulate_chunk_shared<D, F>(shape, level, l, begin, end, in, dout, shared_rows);
        }
    } else {
        accumulate_chunk_shared<D, F>(shape, level, l, begin, end, in, dout, shared_rows);
    }
    __syncthreads();

    float* level_grad = dparams + level.param_offset;
    const uint32_t vector_width = gradient_vector_width<F>(level_grad);
    if (row_pairs_allowed<F>(shape, level_grad)) {
        // Rows in aligned pairs, one atomic per pair with a non-zero sum (the
        // partner row's zeros change nothing); an odd last row alone. Both
        // rows are read in every case: the padding row after an odd last row
        // is allocated and zero (the compiler merges the two reads into one
        // vector load, so a guarded read would not stay in bounds).
        for (uint32_t r = 2 * threadIdx.x; r < level.rows; r += 2 * blockDim.x) {
            float lower[F], upper[F];
            bool any = false;
#pragma unroll
            for (int f = 0; f < F; ++f) {
                lower[f] = shared_rows[r * F + f];
                upper[f] = shared_rows[(r + 1) * F + f];
                any |= lower[f] != 0.f || upper[f] != 0.f;
            }
            if (!any) continue;
            if (r + 1 < level.rows) {
                atomic_add_row_pair<F>(level_grad + (size_t)r * F, lower, upper);
            } else {
                atomic_add_features<F>(level_grad + (size_t)r * F, lower, vector_width);
            }
        }
        return;
    }
    for (uint32_t r = threadIdx.x; r < level.rows; r += blockDim.x) {
        float v[F];
        bool any = false;
#pragma unroll
        for (int f = 0; f < F; ++f) {
            v[f] = shared_rows[r * F + f];
            any |= v[f] != 0.f;
        }
        if (any) atomic_add_features<F>(level_grad + (size_t)r * F, v, vector_width);
    }
}

// A launch's work, by block index (passed by value, read from the constant
// bank): segments[k] covers blocks [first_block, segments[k+1].first_block)
// of one level, each block taking samples_per_block consecutive samples
// (shared-memory levels first); blocks from interleave_first_block on take
// (sample, level) items of the global levels [interleave_first_level,
// + interleave_levels), level fastest.
constexpr uint32_t kMaxGradientSegments = 64;

struct GradientSegment {
    uint32_t level;
    uint32_t first_block;
    uint32_t samples_per_block;
    uint32_t shared;  // 1: summed in shared memory; 0: one sample per thread, global atomics
};

struct GradientPlan {
    uint32_t n_segments;
    uint32_t interleave_first_block;
    uint32_t interleave_first_level;
    uint32_t interleave_levels;
    GradientSegment segments[kMaxGradientSegments];
};

// Aggregated: the kernel with the warp-aggregated shared-level path
// (gradient_warp_aggregate_shared); Runs: the global levels in sample runs
// (gradient_sample_run > 1). Separate instantiations because each takes
// registers (the plain kernel: 32, four 512-thread blocks per SM).
template <int D, int F, bool Aggregated, bool Runs>
__global__ void __launch_bounds__(kGridGradientThreads)
    grid_param_gradient_kernel(GridShape shape, const __grid_constant__ GradientPlan plan, ConstDeviceRows in,
                               ConstDeviceRows dout, float* __restrict__ dparams, uint32_t batch) {
    extern __shared__ float4 shared_raw[];  // float4: 16-byte aligned
    const uint32_t b = blockIdx.x;
    if (b >= plan.interleave_first_block) {
        const unsigned long long item =
            (unsigned long long)(b - plan.interleave_first_block) * blockDim.x + threadIdx.x;
        unsigned long long sample;
        uint32_t j;
        if (item >> 32 == 0) {  // 32-bit division where it suffices (always at training batch sizes)
            sample = (uint32_t)item / plan.interleave_levels;
            j = (uint32_t)item - (uint32_t)sample * plan.interleave_levels;
        } else {
            sample = item / plan.interleave_levels;
            j = (uint32_t)(item - sample * plan.interleave_levels);
        }
        if (sample >= batch) return;
        add_sample_gradient<D, F>(shape, plan.interleave_first_level + j, (uint32_t)sample, in, dout, dparams);
        return;
    }
    uint32_t k = 0;
    while (k + 1 < plan.n_segments && b >= plan.segments[k + 1].first_block) ++k;
    const GradientSegment& segment = plan.segments[k];
    const unsigned long long begin = (unsigned long long)(b - segment.first_block) * segment.samples_per_block;
    if (segment.shared) {
        const unsigned long long end =
            begin + segment.samples_per_block < batch ? begin + segment.samples_per_block : batch;
        add_chunk_gradient_shared<D, F, Aggregated>(shape, segment.level, begin, end, in, dout, dparams,
                                                    reinterpret_cast<float*>(shared_raw));
    } else if constexpr (Runs) {
        const unsigned long long run = shape.config.gradient_sample_run;
        const unsigned long long first = begin + threadIdx.x * run;
        if (first < batch) {
            add_sample_run_gradient<D, F>(shape, segment.level, (uint32_t)first,
                                          (uint32_t)(first + run < batch ? first + run : batch), in, dout, dparams);
        }
    } else {
        const unsigned long long sample = begin + threadIdx.x;
        if (sample < batch) add_sample_gradient<D, F>(shape, segment.level, (uint32_t)sample, in, dout, dparams);
    }
}

template <int D, int F, typename P>
__global__ void __launch_bounds__(kThreadsPerBlock)
    grid_input_gradient_kernel(GridShape shape, const P* __restrict__ table, ConstDeviceRows in, ConstDeviceRows dout,
                               DeviceRows din, uint32_t batch) {
    const uint32_t sample = blockIdx.x * blockDim.x + threadIdx.x;
    if (sample >= batch) return;
    float x[D];
    load_input<D>(in, sample, x);
    const float* dout_row = dout.data + (size_t)sample * dout.stride;
    float grad_x[D] = {};
    for (uint32_t l = 0; l < shape.n_levels; ++l) {
        const GridLevelInfo level = shape.levels[l];
        DeviceCell<D> cell;
        locate_cell<D>(x, level.scale, shape.weights, cell);
        float gy[F];
#pragma unroll
        for (int f = 0; f < F; ++f) gy[f] = dout_row[(size_t)l * F + f];
        const P* level_table = table + level.param_offset;
        float grad_p[D] = {};  // dL/dp at this level
#pragma unroll
        for (int k = 0; k < (1 << D); ++k) {
            uint32_t vertex[D];
            corner_weight<D>(cell, k, vertex);
            float feature[F];
            load_features<F>(level_table, vertex_row<D>(level, vertex), feature);
            float dl_dweight = 0.f;
#pragma unroll
            for (int f = 0; f < F; ++f) dl_dweight += gy[f] * feature[f];
#pragma unroll
            for (int i = 0; i < D; ++i) {
                // d weight_k / d p_i: axis i's factor differentiated, the others kept.
                float dweight = ((k >> i) & 1) ? cell.dw[i] : -cell.dw[i];
#pragma unroll
                for (int a = 0; a < D; ++a) {
                    if (a != i) dweight *= ((k >> a) & 1) ? cell.w[a] : 1.f - cell.w[a];
                }
                grad_p[i] += dl_dweight * dweight;
            }
        }
#pragma unroll
        for (int i = 0; i < D; ++i) grad_x[i] += level.scale * grad_p[i];
    }
    float* gx = din.data + (size_t)sample * din.stride;
#pragma unroll
    for (int i = 0; i < D; ++i) gx[i] = grad_x[i];
}

// Calls fn(integral_constant<D>, integral_constant<F>) for the runtime shape.
template <typename Fn>
void dispatch_grid_shape(const GridShape& shape, Fn&& fn) {
    auto with_features = [&](auto dims) {
        switch (shape.n_features) {
            case 1: fn(dims, std::integral_constant<int, 1>{}); return;
            case 2: fn(dims, std::integral_constant<int, 2>{}); return;
            case 4: fn(dims, std::integral_constant<int, 4>{}); return;
            case 8: fn(dims, std::integral_constant<int, 8>{}); return;
            default: throw std::invalid_argument("grid kernels: n_features must be 1, 2, 4 or 8, got " +
                                                 std::to_string(shape.n_features));
        }
    };
    if (shape.n_dims == 2) {
        with_features(std::integral_constant<int, 2>{});
    } else if (shape.n_dims == 3) {
        with_features(std::integral_constant<int, 3>{});
    } else {
        throw std::invalid_argument("grid kernels: n_dims must be 2 or 3, got " + std::to_string(shape.n_dims));
    }
}

// The kernel for the config: with or without the warp-aggregated
// shared-level path and the sample runs of the global levels.
template <int D, int F>
auto gradient_kernel(bool aggregated, bool runs) {
    if (runs) return aggregated ? grid_param_gradient_kernel<D, F, true, true> : grid_param_gradient_kernel<D, F, false, true>;
    return aggregated ? grid_param_gradient_kernel<D, F, true, false> : grid_param_gradient_kernel<D, F, false, false>;
}

bool sample_runs(const GridKernelConfig& config) { return config.gradient_sample_run > 1; }

// Widest vector store (4, 2 or 1 floats) for rows of F floats at base + i * stride.
uint32_t row_vector_width(const float* base, size_t stride, uint32_t n_features) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(base);
    if (n_features % 4 == 0 && a % 16 == 0 && stride % 4 == 0) return 4;
    if (n_features % 2 == 0 && a % 8 == 0 && stride % 2 == 0) return 2;
    return 1;
}

template <typename P>
void forward_impl(const GridShape& shape, const P* table, ConstDeviceRows in, DeviceRows out, uint32_t batch,
                  cudaStream_t stream) {
    if (batch == 0 || shape.n_levels == 0) return;
    const uint32_t g = shape.config.forward_group_log2;
    if (g > 6) throw std::invalid_argument("grid kernels: forward_group_log2 must be at most 6");
    const unsigned long long items = (unsigned long long)batch << g;
    const dim3 grid((unsigned int)((items + kThreadsPerBlock - 1) / kThreadsPerBlock),
                    (shape.n_levels + (1u << g) - 1) >> g, 1);
    const uint32_t vector_width = row_vector_width(out.data, out.stride, shape.n_features);
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        grid_forward_kernel<decltype(dims)::value, decltype(features)::value, P>
            <<<grid, kThreadsPerBlock, 0, stream>>>(shape, table, in, out, batch, vector_width);
    });
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

// Shared memory a level's gradient table takes in a block: rows rounded up
// to even, so the row-pair flush can always read two rows.
size_t shared_table_bytes(uint32_t rows, uint32_t n_features) {
    return (size_t)(rows + (rows & 1u)) * n_features * sizeof(float);
}

// Samples per block of a shared-memory level: enough that the corner
// contributions (samples * 2^D) are flush_ratio times the rows the block
// flushes, in whole multiples of the block, at most max_samples_per_thread
// per thread.
uint32_t shared_samples_per_block(uint32_t rows, uint32_t n_dims, const GridKernelConfig& config) {
    const unsigned long long corners = 1ull << n_dims;
    const unsigned long long wanted = ((unsigned long long)config.gradient_flush_ratio * rows + corners - 1) / corners;
    unsigned long long per_thread = (wanted + kGridGradientThreads - 1) / kGridGradientThreads;
    if (per_thread < 1) per_thread = 1;
    if (per_thread > config.gradient_max_samples_per_thread) per_thread = config.gradient_max_samples_per_thread;
    if (per_thread < 1) per_thread = 1;
    return (uint32_t)per_thread * kGridGradientThreads;
}

// Levels [first, first + count), count <= kMaxGradientSegments, in one launch.
void param_gradient_launch(const GridShape& shape, uint32_t first, uint32_t count, ConstDeviceRows in,
                           ConstDeviceRows dout, float* dparams, uint32_t batch, cudaStream_t stream) {
    const GridKernelConfig& config = shape.config;
    GradientPlan plan{};
    unsigned long long blocks = 0;
    size_t shared_bytes = 0;
    auto add_segment = [&](uint32_t level, uint32_t samples_per_block, bool shared) {
        plan.segments[plan.n_segments++] = GradientSegment{level, (uint32_t)blocks, samples_per_block, shared ? 1u : 0u};
        blocks += (batch + (unsigned long long)samples_per_block - 1) / samples_per_block;
    };
    // Shared-memory levels first: their blocks run longest, so they start first.
    uint32_t global_levels[kMaxGradientSegments];
    uint32_t n_global = 0;
    for (uint32_t l = first; l < first + count; ++l) {
        const GridLevelInfo& level = shape.host_levels[l];
        const size_t bytes = shared_table_bytes(level.rows, shape.n_features);
        if (config.gradient_smem_bytes > 0 && bytes <= config.gradient_smem_bytes) {
            add_segment(l, shared_samples_per_block(level.rows, shape.n_dims, config), true);
            shared_bytes = std::max(shared_bytes, bytes);
        } else {
            global_levels[n_global++] = l;
        }
    }
    // Interleaved only while the levels' gradient tables together fit in the
    // L2 budget: the atomics of all of them are then in flight at once. Larger
    // tables (a 3D 2^19-row grid: 4 MB per level) are updated one level at a
    // time, which keeps the level being updated in L2 (H200, default 3D
    // HashGrid: 0.57 ms interleaved, 0.40 ms level-major).
    size_t global_bytes = 0;
    for (uint32_t i = 0; i < n_global; ++i) {
        global_bytes += (size_t)shape.host_levels[global_levels[i]].rows * shape.n_features * sizeof(float);
    }
    // Sample runs follow each thread's samples at one level: level-major only.
    const bool interleave = config.gradient_interleave_levels && !sample_runs(config) && n_global > 0 &&
                            global_levels[n_global - 1] - global_levels[0] + 1 == n_global &&
                            global_bytes <= config.gradient_interleave_max_bytes;
    if (!interleave) {
        const uint32_t per_block = kGridGradientThreads * (sample_runs(config) ? config.gradient_sample_run : 1u);
        for (uint32_t i = 0; i < n_global; ++i) add_segment(global_levels[i], per_block, false);
    }
    plan.interleave_first_block = (uint32_t)blocks;
    if (interleave) {
        plan.interleave_first_level = global_levels[0];
        plan.interleave_levels = n_global;
        blocks += ((unsigned long long)batch * plan.interleave_levels + kGridGradientThreads - 1) / kGridGradientThreads;
    }
    if (blocks == 0) return;
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        gradient_kernel<decltype(dims)::value, decltype(features)::value>(config.gradient_warp_aggregate_shared,
                                                                          sample_runs(config))
            <<<(unsigned int)blocks, kGridGradientThreads, shared_bytes, stream>>>(shape, plan, in, dout, dparams,
                                                                                  batch);
    });
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

template <typename P>
void input_gradient_impl(const GridShape& shape, const P* table, ConstDeviceRows in, ConstDeviceRows dout,
                         DeviceRows din, uint32_t batch, cudaStream_t stream) {
    if (batch == 0) return;
    if (shape.weights == GridWeights::Nearest) {
        // Piecewise constant in x: the gradient is exactly zero.
        launch_fill_rows(din, shape.n_dims, batch, 0.f, stream);
        return;
    }
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        grid_input_gradient_kernel<decltype(dims)::value, decltype(features)::value, P>
            <<<blocks_for(batch), kThreadsPerBlock, 0, stream>>>(shape, table, in, dout, din, batch);
    });
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace

void launch_grid_forward(const GridShape& shape, const __half* table, ConstDeviceRows in, DeviceRows out,
                         uint32_t batch, cudaStream_t stream) {
    forward_impl(shape, table, in, out, batch, stream);
}

void launch_grid_forward(const GridShape& shape, const float* table, ConstDeviceRows in, DeviceRows out,
                         uint32_t batch, cudaStream_t stream) {
    forward_impl(shape, table, in, out, batch, stream);
}

void launch_grid_param_gradient(const GridShape& shape, ConstDeviceRows in, ConstDeviceRows dout, float* dparams,
                                uint32_t batch, cudaStream_t stream) {
    if (batch == 0 || shape.n_levels == 0) return;
    if (!shape.host_levels) throw std::invalid_argument("grid kernels: GridShape::host_levels is required");
    for (uint32_t first = 0; first < shape.n_levels; first += kMaxGradientSegments) {
        const uint32_t count = std::min(kMaxGradientSegments, shape.n_levels - first);
        param_gradient_launch(shape, first, count, in, dout, dparams, batch, stream);
    }
}

GridKernelConfig prepare_grid_gradient_kernel(const GridShape& shape) {
    int device = 0, per_block = 0, per_sm = 0, reserved = 0, l2 = 0;
    FUSEDNGP_GPU_CHECK(cudaGetDevice(&device));
    FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    int blocks_per_sm = 1;
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        // The attribute is the kernel's (shared by every grid of this n_dims
        // and n_features): always the device maximum, so no encoding lowers
        // another's limit. All four kernels (gradient_kernel).
        for (bool aggregated : {false, true}) {
            for (bool runs : {false, true}) {
                FUSEDNGP_GPU_CHECK(cudaFuncSetAttribute(
                    gradient_kernel<decltype(dims)::value, decltype(features)::value>(aggregated, runs),
                    cudaFuncAttributeMaxDynamicSharedMemorySize, per_block));
            }
        }
        // Blocks per SM without shared memory (threads and registers) of the kernel this config runs.
        const auto kernel = gradient_kernel<decltype(dims)::value, decltype(features)::value>(
            shape.config.gradient_warp_aggregate_shared, sample_runs(shape.config));
        FUSEDNGP_GPU_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kGridGradientThreads, 0));
    });
    GridKernelConfig config = shape.config;
    uint32_t bytes = config.gradient_smem_bytes;
    if (bytes == kGridSmemAuto) {
        // The largest table that keeps that many blocks on an SM.
        const int fit = per_sm / std::max(blocks_per_sm, 1) - reserved;
        bytes = fit > 0 ? (uint32_t)fit : 0u;
    }
    config.gradient_smem_bytes = std::min(bytes, (uint32_t)std::max(per_block, 0));
    // Half the L2 for the interleaved levels' gradient tables; the rest holds
    // dL/dy and the inputs being read.
    config.gradient_interleave_max_bytes = (uint32_t)std::max(l2, 0) / 2;
    return config;
}

void launch_grid_input_gradient(const GridShape& shape, const __half* table, ConstDeviceRows in,
                                ConstDeviceRows dout, DeviceRows din, uint32_t batch, cudaStream_t stream) {
    input_gradient_impl(shape, table, in, dout, din, batch, stream);
}

void launch_grid_input_gradient(const GridShape& shape, const float* table, ConstDeviceRows in,
                                ConstDeviceRows dout, DeviceRows din, uint32_t batch, cudaStream_t stream) {
    input_gradient_impl(shape, table, in, dout, din, batch, stream);
}

} // namespace fusedngp::gpu
