#include "engine/cuda_backend_kernels.h"

#include "core/rng.h"
#include "gpu/components/device_buffer.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace fusedngp::gpu {
namespace {

constexpr int kThreads = 256;


struct AxisLookup {
    int lo, hi;
    float weight_hi;
};

// io/sampling.cpp's lookup_axis in float.
__device__ __forceinline__ AxisLookup lookup_axis(float u, int size) {
    float p = u * (float)size - 0.5f;
    if (isnan(p)) p = 0.f;
    const float floor_p = floorf(p);
    const int i = (int)fminf(fmaxf(floor_p, -1.f), (float)size);
    const float weight = fminf(fmaxf(p - floor_p, 0.f), 1.f);
    return {min(max(i, 0), size - 1), min(max(i + 1, 0), size - 1), weight};
}

// io/sampling.cpp's sample_batch: draws, stratification and targets alike
// (io/sample_positions.h, stratum_at: the CPU's function, Barrett reduction
// instead of a 64-bit division); side = 0 means uniform positions. vector_io: RGBA
// pixels and targets on the 16-byte grid, so a pixel-centre target is one
// float4 load and store and its coordinates one float2 store (the scalar
// stores at a 16-byte stride were 4x the store requests).
__global__ void sample_image_kernel(DeviceImage image, uint64_t key, uint32_t batch, StrataOrder strata,
                                    bool pixel_targets, bool vector_io, float* coords, float* targets) {
    const uint32_t side = strata.side;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch) return;
    float u = counter_uniform01(key, 2ull * i);
    float v = counter_uniform01(key, 2ull * i + 1);
    if (i < side * side) {
        const uint32_t cell = stratum_at(strata, i);
        u = jitter_in_cell<float>(u, cell % side, side);
        v = jitter_in_cell<float>(v, cell / side, side);
    }
    const int c_n = image.channels;
    if (pixel_targets) {
        const int px = pixel_of<float>(u, image.width), py = pixel_of<float>(v, image.height);
        const float2 centre = make_float2(pixel_centre<float>(px, image.width), pixel_centre<float>(py, image.height));
        const float* pixel = image.pixels + ((size_t)py * image.width + px) * c_n;
        if (vector_io) {
            reinterpret_cast<float2*>(coords)[i] = centre;
            reinterpret_cast<float4*>(targets)[i] = __ldg(reinterpret_cast<const float4*>(pixel));
            return;
        }
        coords[2ull * i] = centre.x;
        coords[2ull * i + 1] = centre.y;
        for (int c = 0; c < c_n; ++c) targets[(size_t)i * c_n + c] = pixel[c];
        return;
    }
    coords[2ull * i] = u;
    coords[2ull * i + 1] = v;
    const AxisLookup x = lookup_axis(u, image.width);
    const AxisLookup y = lookup_axis(v, image.height);
    const float wx1 = x.weight_hi, wx0 = 1.f - wx1;
    const float wy1 = y.weight_hi, wy0 = 1.f - wy1;
    auto at = [&](int px, int py, int c) { return image.pixels[((size_t)py * image.width + px) * c_n + c]; };
    for (int c = 0; c < c_n; ++c) {
        const float top = wx0 * at(x.lo, y.lo, c) + wx1 * at(x.hi, y.lo, c);
        const float bottom = wx0 * at(x.lo, y.hi, c) + wx1 * at(x.hi, y.hi, c);
        targets[(size_t)i * c_n + c] = wy0 * top + wy1 * bottom;
    }
}

// data[0 .. n) and, 16-byte loads, the n4 float4s at data4 (the bulk of an
// aligned buffer: NeRF's 10^7 gradients ran at under half the bandwidth with
// 4-byte loads).
__global__ void flag_non_finite_kernel(const float4* data4, size_t n4, const float* data, size_t n, unsigned int* flag) {
    bool bad = false;
    const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = first; i < n4; i += stride) {
        const float4 v = data4[i];
        bad |= !isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z) || !isfinite(v.w);
    }
    for (size_t i = first; i < n; i += stride) bad |= !isfinite(data[i]);
    // One atomic per warp at most: overflow is rare, the common path writes nothing.
    if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) atomicOr(flag, 1u);
}

__global__ void zero_if_flagged_kernel(float* data, size_t n, const unsigned int* flag) {
    if (*flag == 0) return;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        data[i] = 0.f;
    }
}

__global__ void set_update_condition_kernel(cudaGraphConditionalHandle handle, const unsigned int* flag) {
    cudaGraphSetConditional(handle, *flag == 0 ? 1u : 0u);
}

// A grid-stride launch: enough blocks to fill the GPU, never more than needed.
unsigned int stride_blocks(size_t n) {
    const size_t needed = (n + kThreads - 1) / kThreads;
    return (unsigned int)(needed < 1024 ? (needed ? needed : 1) : 1024);
}

__global__ void pixel_centres_kernel(uint32_t width, uint32_t height, size_t first, uint32_t n, float* coords) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const size_t p = first + i;
        coords[2 * (size_t)i] = ((float)(p % width) + 0.5f) / (float)width;
        coords[2 * (size_t)i + 1] = ((float)(p / width) + 0.5f) / (float)height;
    }
}

__global__ void to_rgba_kernel(const float* values, uint32_t channels, uint32_t n, float4* rgba) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float* v = values + (size_t)i * channels;
        float4 o;
        switch (channels) {
        case 1: o = make_float4(v[0], v[0], v[0], 1.f); break;
        case 2: o = make_float4(v[0], v[0], v[0], v[1]); break;
        case 3: o = make_float4(v[0], v[1], v[2], 1.f); break;
        default: o = make_float4(v[0], v[1], v[2], v[3]); break;
        }
        rgba[i] = o;
    }
}

} // namespace

void launch_sample_image(const DeviceImage& image, const ImageSampling& sampling, uint64_t seed, uint64_t step,
                         uint32_t batch, float* coords, float* targets, cudaStream_t stream) {
    if (batch == 0) return;
    // One key per step, from the seed and the step: a resumed run draws the
    // same batches as an uninterrupted one.
    const uint64_t key = seed * 0xD1B54A32D192ED03ull ^ (step + 1) * 0x9E3779B97F4A7C15ull;
    // side^2 <= batch < 2^32, so i < side * side cannot overflow in the kernel.
    const uint32_t side = sampling.positions == SamplePositions::Stratified ? strata_side(batch) : 0;
    const StrataOrder strata = make_strata_order(side, sampling.order);
    const bool pixel_targets = sampling.targets == SampleTargets::PixelCentres;
    auto aligned = [](const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) % bytes) == 0; };
    const bool vector_io = image.channels == 4 && aligned(image.pixels, 16) && aligned(targets, 16) && aligned(coords, 8);
    sample_image_kernel<<<(batch + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
        image, key, batch, strata, pixel_targets, vector_io, coords, targets);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_flag_non_finite(const float* data, size_t n, unsigned int* flag, cudaStream_t stream) {
    if (n == 0) return;
    const size_t n4 = (reinterpret_cast<uintptr_t>(data) & 15u) == 0 ? n / 4 : 0;
    flag_non_finite_kernel<<<stride_blocks(n - 3 * n4), kThreads, 0, stream>>>(
        reinterpret_cast<const float4*>(data), n4, data + 4 * n4, n - 4 * n4, flag);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_zero_if_flagged(float* data, size_t n, const unsigned int* flag, cudaStream_t stream) {
    if (n == 0) return;
    zero_if_flagged_kernel<<<stride_blocks(n), kThreads, 0, stream>>>(data, n, flag);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_set_update_condition(cudaGraphConditionalHandle handle, const unsigned int* flag, cudaStream_t stream) {
    set_update_condition_kernel<<<1, 1, 0, stream>>>(handle, flag);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_pixel_centres(uint32_t width, uint32_t height, size_t first, uint32_t n, float* coords, cudaStream_t stream) {
    if (n == 0) return;
    pixel_centres_kernel<<<stride_blocks(n), kThreads, 0, stream>>>(width, height, first, n, coords);
}

void launch_to_rgba(const float* values, uint32_t channels, uint32_t n, float* rgba, cudaStream_t stream) {
    if (n == 0) return;
    to_rgba_kernel<<<stride_blocks(n), kThreads, 0, stream>>>(values, channels, n, reinterpret_cast<float4*>(rgba));
}

} // namespace fusedngp::gpu
