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
// Thread mapping: forward and parameter gradient run one thread per (sample,
// level), blockIdx.y = level, so a block reads one level's table and the
// level's indexing branch is uniform. The input gradient runs one thread per
// sample and sums the levels in ascending order, as the CPU does, so it needs
// no atomics and is deterministic. Only the parameter gradient uses atomics.

#include "component_device.cuh"
#include "launch_common.h"
#include "launch_grid.h"

#include <cuda_fp16.h>

#include <cstdint>

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

// Corner k (bit i of k: upper vertex along axis i): its vertex and weight.
template <int D>
__device__ inline float corner_weight(const DeviceCell<D>& cell, int k, uint32_t* vertex) {
    float weight = 1.f;
#pragma unroll
    for (int i = 0; i < D; ++i) {
        const bool upper = (k >> i) & 1;
        vertex[i] = cell.lower[i] + (upper ? 1u : 0u);
        weight = __fmul_rn(weight, upper ? cell.w[i] : __fsub_rn(1.f, cell.w[i]));
    }
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

// fp32 master rows may sit at any float offset (inside a Composite's block),
// so they are read one float at a time.
template <int F>
__device__ inline void load_features(const float* __restrict__ table, uint32_t row, float (&f)[F]) {
    const float* p = table + (size_t)row * F;
#pragma unroll
    for (int j = 0; j < F; ++j) f[j] = __ldg(p + j);
}

template <int D>
__device__ inline void load_input(ConstDeviceRows in, uint32_t sample, float (&x)[D]) {
    const float* row = in.data + (size_t)sample * in.stride;
#pragma unroll
    for (int i = 0; i < D; ++i) x[i] = row[i];
}

template <int D, int F, typename P>
__global__ void __launch_bounds__(kThreadsPerBlock)
    grid_forward_kernel(GridShape shape, const P* __restrict__ table, ConstDeviceRows in, DeviceRows out,
                        uint32_t batch) {
    const uint32_t sample = blockIdx.x * blockDim.x + threadIdx.x;
    if (sample >= batch) return;
    const uint32_t l = blockIdx.y;
    const GridLevelInfo level = shape.levels[l];
    float x[D];
    load_input<D>(in, sample, x);
    DeviceCell<D> cell;
    locate_cell<D>(x, level.scale, shape.weights, cell);

    const P* level_table = table + level.param_offset;
    float acc[F] = {};
#pragma unroll
    for (int k = 0; k < (1 << D); ++k) {
        uint32_t vertex[D];
        const float weight = corner_weight<D>(cell, k, vertex);
        float feature[F];
        load_features<F>(level_table, vertex_row<D>(level, vertex), feature);
#pragma unroll
        for (int f = 0; f < F; ++f) acc[f] += weight * feature[f];
    }
    float* y = out.data + (size_t)sample * out.stride + (size_t)l * F;
#pragma unroll
    for (int f = 0; f < F; ++f) y[f] = acc[f];
}

template <int D, int F>
__global__ void __launch_bounds__(kThreadsPerBlock)
    grid_param_gradient_kernel(GridShape shape, ConstDeviceRows in, ConstDeviceRows dout, float* __restrict__ dparams,
                               uint32_t batch) {
    const uint32_t sample = blockIdx.x * blockDim.x + threadIdx.x;
    if (sample >= batch) return;
    const uint32_t l = blockIdx.y;
    const GridLevelInfo level = shape.levels[l];
    float gy[F];
    const float* dout_row = dout.data + (size_t)sample * dout.stride + (size_t)l * F;
#pragma unroll
    for (int f = 0; f < F; ++f) gy[f] = dout_row[f];
    float x[D];
    load_input<D>(in, sample, x);
    DeviceCell<D> cell;
    locate_cell<D>(x, level.scale, shape.weights, cell);

    float* level_grad = dparams + level.param_offset;
    // Pairs of features as one 8-byte vector atomic where the device has them
    // (sm_90) and the rows are 8-byte aligned (a grid inside a Composite may
    // start at any float): half the atomic operations, which are most of this
    // kernel's time at large batches (image-fit step, H200).
    [[maybe_unused]] const bool pairs = F % 2 == 0 && (reinterpret_cast<uintptr_t>(level_grad) & 7u) == 0;
#pragma unroll
    for (int k = 0; k < (1 << D); ++k) {
        uint32_t vertex[D];
        const float weight = corner_weight<D>(cell, k, vertex);
        // A zero weight adds (+-)0: skipping it leaves the sum unchanged and
        // saves most atomics for Nearest.
        if (weight == 0.f) continue;
        float* g = level_grad + (size_t)vertex_row<D>(level, vertex) * F;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if constexpr (F % 2 == 0) {
            if (pairs) {
#pragma unroll
                for (int f = 0; f < F; f += 2)
                    atomicAdd(reinterpret_cast<float2*>(g + f), make_float2(weight * gy[f], weight * gy[f + 1]));
                continue;
            }
        }
#endif
#pragma unroll
        for (int f = 0; f < F; ++f) atomicAdd(g + f, weight * gy[f]);
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

dim3 per_level_grid(const GridShape& shape, uint32_t batch) {
    return dim3(blocks_for(batch), shape.n_levels, 1);
}

template <typename P>
void forward_impl(const GridShape& shape, const P* table, ConstDeviceRows in, DeviceRows out, uint32_t batch,
                  cudaStream_t stream) {
    if (batch == 0 || shape.n_levels == 0) return;
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        grid_forward_kernel<decltype(dims)::value, decltype(features)::value, P>
            <<<per_level_grid(shape, batch), kThreadsPerBlock, 0, stream>>>(shape, table, in, out, batch);
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
    dispatch_grid_shape(shape, [&](auto dims, auto features) {
        grid_param_gradient_kernel<decltype(dims)::value, decltype(features)::value>
            <<<per_level_grid(shape, batch), kThreadsPerBlock, 0, stream>>>(shape, in, dout, dparams, batch);
    });
    FUSEDNGP_GPU_CHECK_LAUNCH();
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
