// Timing helpers shared by the MLP benchmarks (`fusedngp bench mlp` and
// bench/mlp_bench.cu): CUDA-event medians after warm-up, random device
// inputs rotated over several buffers, and the FLOP count of one sample.
#pragma once

#include "gpu/device_memory.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusedngp::gpu {

// Median milliseconds of `iters` timed calls of f(i) (i = 0..iters-1), each
// bracketed by CUDA events on `stream`, after `warmup` untimed calls. The
// median, not the mean, so one preempted launch does not move the result.
double time_median_ms(int warmup, int iters, const std::function<void(int)>& f, cudaStream_t stream = nullptr);

// n uniform floats in [-scale, scale], deterministic for a seed.
std::vector<float> random_floats(size_t n, float scale, uint64_t seed);
// A device copy of `host` (synchronous).
DeviceMemory upload(const std::vector<float>& host);

// Several device buffers of the same shape filled with different random
// values. Timed loops use buffer i % count() in call i, so consecutive calls
// read different memory: with 4 buffers of >= 128 MB (batch 2^20 x 32 fp32)
// the input cannot stay in the 50-60 MB L2 between calls.
class RotatedBuffers {
public:
    RotatedBuffers(int count, size_t floats_each, float scale, uint64_t seed);
    const float* at(int i) const { return buffers_[(size_t)i % buffers_.size()].as<float>(); }
    int count() const { return (int)buffers_.size(); }

private:
    std::vector<DeviceMemory> buffers_;
};
// RotatedBuffers of fp16 values: the same values as RotatedBuffers with the
// same seed and scale, rounded.
class RotatedHalfBuffers {
public:
    RotatedHalfBuffers(int count, size_t halves_each, float scale, uint64_t seed);
    const __half* at(int i) const { return buffers_[(size_t)i % buffers_.size()].as<__half>(); }

private:
    std::vector<DeviceMemory> buffers_;
};
constexpr int kDefaultRotations = 4;

// Multiply-adds of one forward pass of one sample of n_in -> W (x
// n_hidden_layers hidden layers, i.e. n_hidden_layers - 1 W x W matrices)
// -> n_out, no biases.
double mlp_macs_per_sample(uint32_t n_in, uint32_t width, uint32_t n_hidden_layers, uint32_t n_out);
// FLOP per sample: inference 2 * MACs; a training step 6 * MACs (forward,
// dL/dinput-of-layer and dL/dW products, each as large as the forward; the
// convention of tiny-cuda-nn's and PyTorch's benchmark numbers, whether or
// not the first layer's input gradient is actually computed).
double mlp_flop_per_sample(uint32_t n_in, uint32_t width, uint32_t n_hidden_layers, uint32_t n_out, bool training);

// The device the benchmarks ran on, for CSV columns.
struct GpuIdentity {
    std::string name;
    int sm_count = 0;
    int sm_clock_mhz = 0;   // maximum (boost) SM clock
    int mem_clock_mhz = 0;
    std::string driver;     // nvidia-smi's driver version, else "CUDA driver API x.y"
};
// Throws CudaError when there is no usable device.
GpuIdentity gpu_identity(int device = 0);

} // namespace fusedngp::gpu
