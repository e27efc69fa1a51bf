// CublasMlp: the unfused MLP baseline, one cuBLASLt GEMM per layer and pass
// (fp16 operands, fp32 accumulation) plus elementwise kernels
// (kernels/cublas_mlp_kernels.cu). Same network, parameter layout, data
// layout and API as FusedMlp (see gpu/gpu_mlp.h), but any width and depth:
// it is the comparison point for the fused kernels and the fallback for the
// shapes they do not cover.
//
// Storage (feature-major per sample = the caller's batch-major rows, which
// cuBLASLt sees as column-major [features x batch] matrices):
//   - every feature dimension padded to a multiple of 8 (16-byte rows for
//     the tensor cores), zero padding in the weights;
//   - forward() keeps the fp16 input, each hidden layer's fp16 output h_l,
//     its pre-activation z_l only where the derivative needs it (not for
//     ReLU, whose derivative is read off h_l, nor None), and the fp32 output
//     pre-activation; backward() reads them (call it after forward() with
//     the same input and batch);
//   - inference() has its own ping-pong buffers, so it can run between
//     forward() and backward().
// ReLU hidden layers use cuBLASLt's ReLU epilogue; other activations run as
// one elementwise kernel per layer. Weight gradients are GEMMs over the
// batch into an fp32 padded scratch, scaled by 1 / loss scale in the GEMM's
// alpha, then unpadded into the caller's layout.
//
// Per-sample buffers are sized for max_batch (constructor or reserve());
// calls never allocate device memory, never synchronize the host and can be
// captured in a CUDA graph. The cuBLASLt plan (descriptors and the heuristic's
// algorithm) of each batch size is built on its first use and cached.
#pragma once

#include "gpu/device_memory.h"
#include "gpu/gpu_mlp.h"

#include <cublasLt.h>
#include <cuda_fp16.h>

#include <map>
#include <memory>
#include <vector>

namespace fusedngp::gpu {

class CublasMlp final : public GpuMlp {
public:
    // Throws std::invalid_argument for an empty network, GpuOutOfMemory
    // (naming the size) when the buffers do not fit.
    explicit CublasMlp(const GpuMlpConfig& config, uint32_t max_batch = 0);
    ~CublasMlp() override;
    CublasMlp(const CublasMlp&) = delete;
    CublasMlp& operator=(const CublasMlp&) = delete;

    const char* kernel_name() const override { return "CublasMLP"; }
    const GpuMlpConfig& config() const { return config_; }
    size_t n_params() const override;
    uint32_t max_batch() const { return max_batch_; }
    void reserve(uint32_t max_batch) override;

    void set_params(const float* host_params) override;
    void set_params_device(const float* d_params, cudaStream_t stream) override;
    const float* params_device() const { return master_.as<float>(); }

    void set_loss_scale(float scale) override;
    float loss_scale() const override { return loss_scale_; }

    void inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const override;
    void forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) override;
    void backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                  cudaStream_t stream, bool accumulate = false) override;

    std::string describe() const override;

private:
    struct Gemm;        // one cuBLASLt matmul: descriptors + chosen algorithm
    struct BatchPlans;  // every GEMM of one batch size

    uint32_t n_layers() const { return config_.n_hidden_layers + 1; }
    uint32_t fan_in(uint32_t l) const { return l == 0 ? config_.n_input_dims : config_.width; }
    uint32_t fan_out(uint32_t l) const { return l == config_.n_hidden_layers ? config_.n_output_dims : config_.width; }
    uint32_t fan_in_pad(uint32_t l) const;
    uint32_t fan_out_pad(uint32_t l) const;
    size_t param_offset(uint32_t l) const;
    size_t padded_offset(uint32_t l) const;
    // Hidden layers whose derivative needs z (not ReLU / None) store it.
    bool stores_pre_activation() const;

    const BatchPlans& plans_for(uint32_t batch) const;
    void check_batch(uint32_t batch, const char* call) const;
    // The forward chain from fp16 input x into h[] (per hidden layer) and
    // z_out (fp32), optionally z[] (pre-activations).
    void run_forward(__half* x, __half* const* h, __half* const* z, float* z_out, const float* d_in,
                     uint32_t batch, cudaStream_t stream) const;
    void matmul(const Gemm& g, float alpha, const void* a, const void* b, void* d, cudaStream_t stream) const;

    GpuMlpConfig config_;
    uint32_t width_pad_ = 0, n_in_pad_ = 0, n_out_pad_ = 0;
    uint32_t max_batch_ = 0;
    float loss_scale_ = 128.f;

    cublasLtHandle_t lt_ = nullptr;
    DeviceMemory workspace_;
    DeviceMemory master_;     // fp32 weights, caller layout
    DeviceMemory weights_;    // fp16 weights, padded [fan_out_pad][fan_in_pad] per layer
    DeviceMemory wgrad_;      // fp32 dL/dW, padded, before unpadding

    // Per-sample buffers (max_batch_ rows each).
    DeviceMemory x_;                      // fp16 input, n_in_pad
    std::vector<DeviceMemory> h_, z_;     // per hidden layer, width_pad (z_ empty for ReLU / None)
    DeviceMemory z_out_;                  // fp32 output pre-activation, n_out_pad
    DeviceMemory delta_[2];               // fp16 dL/dz ping-pong, max(width_pad, n_out_pad)
    DeviceMemory din_;                    // fp32 dL/dx, n_in_pad
    DeviceMemory inf_x_, inf_h_[2], inf_z_out_;  // inference's own

    mutable std::map<uint32_t, std::unique_ptr<BatchPlans>> plans_;
};

} // namespace fusedngp::gpu
