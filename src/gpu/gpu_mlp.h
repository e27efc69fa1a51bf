// GpuMlp: what the CUDA backend needs from an MLP implementation, so the
// fully fused kernels (FusedMlp) and the cuBLASLt chain (CublasMlp) can be
// swapped at run time behind one pointer.
//
// Both compute the same function with the same parameter layout as the CPU
// Mlp: n_in -> D hidden layers of width W -> n_out, no biases, weight l is
// [fan_out][fan_in] row-major, layers consecutive, fp32 master copy. So one
// fp32 parameter vector (the optimizer's) drives either, and a hot swap is
// set_params_device(same pointer) on the new object.
//
// Data: batch-major fp32 device arrays ([batch][n_in] in, [batch][n_out]
// out). All calls are asynchronous on `stream`, never synchronize the host
// and never allocate device memory (capturable in a CUDA graph), except
// set_params (synchronous) and reserve (allocates; outside the hot path).
#pragma once

#include "networks/activation.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fusedngp::gpu {

struct GpuMlpConfig {
    uint32_t n_input_dims = 0;
    uint32_t n_output_dims = 0;
    uint32_t width = 64;            // FusedMlp: 16, 32, 64, 128 or 256; CublasMlp: any
    uint32_t n_hidden_layers = 2;   // FusedMlp: 1..16; CublasMlp: >= 1
    Activation hidden_activation = Activation::ReLU;
    Activation output_activation = Activation::None;
};

class GpuMlp {
public:
    virtual ~GpuMlp() = default;

    // "FullyFusedMLP" or "CublasMLP" (the network.otype that selects it).
    virtual const char* kernel_name() const = 0;
    virtual size_t n_params() const = 0;
    // Makes calls with batch <= max_batch possible without allocating
    // (CublasMlp keeps per-sample activations; FusedMlp needs nothing). May
    // allocate and synchronize: call it outside the hot path.
    virtual void reserve(uint32_t max_batch) = 0;

    // Copies fp32 weights from the host and converts them (synchronous).
    virtual void set_params(const float* host_params) = 0;
    // Same from device memory, asynchronous on `stream`.
    virtual void set_params_device(const float* d_params, cudaStream_t stream) = 0;

    // dL/dout is multiplied by this before fp16 rounding; gradients are
    // divided by it again in fp32.
    virtual void set_loss_scale(float scale) = 0;
    virtual float loss_scale() const = 0;

    // Stores nothing; does not disturb what forward() stored.
    virtual void inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const = 0;
    // Training forward: may store what backward needs for this batch.
    virtual void forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) = 0;
    // After forward() with the same d_in and batch. d_din, d_dweights may be
    // null; d_dweights gets dL/dW in the caller layout, overwritten or (when
    // accumulate) added to.
    virtual void backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                          cudaStream_t stream, bool accumulate = false) = 0;

    virtual std::string describe() const = 0;
};

} // namespace fusedngp::gpu
