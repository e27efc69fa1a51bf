// Building a GpuMlp by kernel, and the measurement behind network.otype "Auto".
#pragma once

#include "gpu/gpu_mlp.h"

#include <memory>
#include <string>

namespace fusedngp::gpu {

enum class MlpKernel { FullyFused, Cublas, Auto };

const char* mlp_kernel_name(MlpKernel kernel);  // "FullyFusedMLP", "CublasMLP", "Auto"

// Empty when FusedMlp runs this network, else why not (one line).
std::string fused_unsupported_reason(const GpuMlpConfig& config);

// FullyFused or Cublas (not Auto). FusedMlp throws std::invalid_argument for
// a network it cannot run. max_batch: see GpuMlp::reserve.
std::unique_ptr<GpuMlp> create_gpu_mlp(const GpuMlpConfig& config, MlpKernel kernel, uint32_t max_batch = 0);

// Auto's decision: both kernels on random weights and inputs at the real
// batch size, `iterations` timed training steps (forward + backward with
// dL/dW and dL/dinput, as the backend runs them) after one warm-up each,
// CUDA events, median. Synchronizes and allocates: first use only.
struct KernelTiming {
    double fused_ms = 0, cublas_ms = 0;  // per training step
    MlpKernel faster = MlpKernel::FullyFused;
    std::string summary() const;  // "FullyFusedMLP 0.123 ms vs CublasMLP 0.456 ms per step at batch N"
    uint32_t batch = 0;
};
KernelTiming time_mlp_kernels(const GpuMlpConfig& config, uint32_t batch, cudaStream_t stream, int iterations = 5);

} // namespace fusedngp::gpu
