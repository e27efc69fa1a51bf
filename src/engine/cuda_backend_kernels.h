// Host entry points of the CUDA backend's own small kernels: device-side
// batch sampling for image mode and the loss-scale overflow guard.
#pragma once

#include "io/sample_positions.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// A row-major interleaved image (io/image.h's layout) in device memory.
struct DeviceImage {
    const float* pixels = nullptr;
    int width = 0, height = 0, channels = 0;
};

// Draws `batch` coordinates in [0,1)^2 with a counter-based RNG (a hash of
// seed, step, sample index and axis: no state to carry, any order of threads
// gives the same batch), shaped by `sampling` exactly as io/sampling.h's
// sample_batch does (stratified cells, pixel-centre or bilinear targets with
// pixel centres at (i+0.5)/W, clamp to edge).
// coords: [batch][2] (u, v); targets: [batch][channels].
void launch_sample_image(const DeviceImage& image, const ImageSampling& sampling, uint64_t seed, uint64_t step,
                         uint32_t batch, float* coords, float* targets, cudaStream_t stream);

// *flag |= 1 when any of data[0..n) is NaN or infinite. The caller zeroes the
// flag first; several calls may add to the same flag.
void launch_flag_non_finite(const float* data, size_t n, unsigned int* flag, cudaStream_t stream);

// data[0..n) = 0 when *flag != 0 (a fixed-size grid: cheap when the flag is clear).
void launch_zero_if_flagged(float* data, size_t n, const unsigned int* flag, cudaStream_t stream);

// Sets the IF node `handle` to run its body only when *flag == 0. Must be
// captured into the graph that owns the handle.
void launch_set_update_condition(cudaGraphConditionalHandle handle, const unsigned int* flag, cudaStream_t stream);

// Display rendering (the GUI's CUDA–GL interop path): pixel centres of
// pixels [first, first + n) of a width x height image in row-major order,
// coords[i] = ((x + 0.5) / width, (y + 0.5) / height), the same grid the CPU
// renderer and the PSNR evaluation use.
void launch_pixel_centres(uint32_t width, uint32_t height, size_t first, uint32_t n, float* coords, cudaStream_t stream);

// values: [n][channels] model outputs -> rgba: [n][4], with the GUI's mapping
// (1: gray, 2: gray + alpha, 3: rgb + alpha 1, 4: as is).
void launch_to_rgba(const float* values, uint32_t channels, uint32_t n, float* rgba, cudaStream_t stream);

} // namespace fusedngp::gpu
