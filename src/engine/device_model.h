// DeviceModel: one Model<float> (encoding + MLP) trained on the GPU: the
// fp32 master parameters (the host model's layout and seeded init), their
// gradient, the optimizer, and the GPU encoding and MLP that read them. The
// NeRF trainer composes two of these the way the CPU trainer composes two
// Models; CudaBackend keeps its own single-model pipeline (fused step, update
// graph), which this class does not replace.
//
// Intermediates for training live here (sized by reserve); the caller owns
// the inputs, outputs and output gradients. All calls are asynchronous on
// `stream` except the state transfers and reserve.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/components/gpu_optimizer.h"
#include "gpu/gpu_mlp.h"
#include "gpu/gpu_mlp_factory.h"
#include "model/model.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fusedngp::gpu {
class GpuCompositeEncoding;
}

namespace fusedngp {

// The GPU MLP shape of a host model's network (ConfigError naming
// `path`.otype when it is not an MLP).
gpu::GpuMlpConfig gpu_mlp_config_of(const Model<float>& host, const std::string& path);
// network.otype -> kernel. MLP and CPU (accepted by the CPU engine) mean
// "no preference" on the GPU, like Auto.
gpu::MlpKernel requested_mlp_kernel(const json& network, const std::string& path);
// The kernel to build: FullyFused where it runs and was asked for or Auto
// (a ConfigError naming the field when FullyFused was asked for and cannot
// run), else Cublas (with a notice for Auto).
gpu::MlpKernel choose_mlp_kernel(const gpu::GpuMlpConfig& config, gpu::MlpKernel requested, const std::string& path);

class DeviceModel {
public:
    // `host` gives the layout, names and initial parameters (it is copied
    // from, not kept); `network_config` (the section at `network_path`)
    // picks the MLP kernel as CudaBackend does; `optimizer_config` is a
    // tiny-cuda-nn optimizer section.
    DeviceModel(const Model<float>& host, const json& network_config, const std::string& network_path,
                const json& optimizer_config, const gpu::GpuEncodingOptions& encoding_options, cudaStream_t stream);

    uint32_t n_input_dims() const { return encoding_->n_input_dims(); }
    uint32_t n_output_dims() const { return mlp_config_.n_output_dims; }
    size_t n_params() const { return params_.size(); }
    size_t n_encoding_params() const { return n_encoding_params_; }
    std::string mlp_kernel() const { return mlp_->kernel_name(); }
    std::string describe() const;

    // Sizes the training intermediates for batches up to `batch` (allocates).
    void reserve(uint32_t batch);
    // Sizes inference() for batches up to `batch` (allocates; the cuBLAS
    // kernel keeps per-sample buffers, the fused one none).
    void reserve_inference(uint32_t batch) { mlp_->reserve(batch); }

    // Training forward: in [batch][n_input_dims] -> out [batch][n_output_dims].
    void forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream);
    // The training forward for a caller that already holds the batch's
    // encoding (an inference with the same parameters): it writes the rows,
    // [batch][n_encoded_dims], to encoded_input(), and only the MLP runs.
    // backward() then works as after forward().
    float* encoded_input() { return encoded_.data(); }
    void forward_encoded(float* d_out, uint32_t batch, cudaStream_t stream);
    // After forward() on the same input: the parameter gradient (overwritten)
    // and, when d_din is not null, dL/din [batch][n_input_dims]. With
    // `nonfinite_flag`, *nonfinite_flag = 1 where the parameter gradient is
    // not finite, found without reading all of it: fp16 overflow shows as
    // inf/NaN in the MLP's dL/dW and dL/dencoded (the fused kernel notes the
    // latter as it stores it), and the encoding's gradient is a weighted sum
    // of dL/dencoded (finite values of at most fp16's range, summed over a
    // batch, stay far from fp32's), so those two are checked.
    void backward(const float* d_in, const float* d_dout, float* d_din, uint32_t batch, cudaStream_t stream,
                  unsigned int* nonfinite_flag = nullptr);
    // Inference with whatever parameters the components hold (see
    // use_inference_params); `scratch` holds batch * encoded floats.
    void inference(const float* d_in, float* d_out, float* d_scratch, uint32_t batch, cudaStream_t stream) const;
    uint32_t n_encoded_dims() const { return encoding_->n_output_dims(); }

    // backward() may leave dL/din of input columns below `column` unwritten
    // (inputs that are data, not outputs of something trained): a Composite
    // encoding then skips the input gradient of nested encodings that read
    // only those columns. Other encodings write every column as before.
    void skip_input_gradient_below(uint32_t column);

    // A training forward() in which the caller writes the encoded columns of
    // input columns [column, column + n) itself, where the encoding copies
    // them unchanged (an Identity part of a Composite): returns the first of
    // those columns in encoded_input()'s rows (n_encoded_dims() floats a
    // row), and forward() skips that part from now on; -1, changing nothing,
    // otherwise. After backward(), encoded_gradient() holds their dL/d(encoded),
    // which is their dL/din. inference() still encodes every column.
    int encode_columns_by_caller(uint32_t column, uint32_t n);
    const float* encoded_gradient() const { return dencoded_.data(); }

    // After a backward that flagged a non-finite gradient: a no-op update (the
    // moments still decay once, as CudaBackend's fallback).
    void zero_gradient_if(const unsigned int* flag, cudaStream_t stream);
    // One optimizer step, then the components read the new parameters.
    void step(cudaStream_t stream);

    // The components read the optimizer's inference parameters (the EMA
    // average) until use_training_params().
    void use_inference_params(cudaStream_t stream);
    void use_training_params(cudaStream_t stream);

    // State (synchronous).
    std::vector<float> params() const { return params_.download(); }
    std::vector<float> inference_params(cudaStream_t stream) const;
    std::vector<float> gradients() const { return grads_.download(); }
    std::vector<std::pair<std::string, std::vector<float>>> optimizer_state(cudaStream_t stream) const;
    uint64_t step_count(cudaStream_t stream) const { return optimizer_->step_count(stream); }
    // Throws InputError naming `which` on a size or buffer mismatch.
    void load(const std::vector<float>& params, const std::vector<std::pair<std::string, std::vector<float>>>& optimizer,
              uint64_t step, const std::string& which, cudaStream_t stream);
    double learning_rate() const { return optimizer_->learning_rate(); }
    void set_learning_rate(double lr, cudaStream_t stream) { optimizer_->set_learning_rate(lr, stream); }
    void set_loss_scale(float scale) { mlp_->set_loss_scale(scale); }
    // Sparse encoding updates (GpuOptimizer::set_sparse_group, as CudaBackend):
    // the optimizer updates and clears only the grid rows a step touched and
    // keeps their fp16 copy current. On where the optimizer and encoding allow.
    bool sparse_encoding_updates() const { return sparse_; }

private:
    void refresh_components(const float* d_params, cudaStream_t stream);

    size_t n_encoding_params_ = 0;
    gpu::GpuMlpConfig mlp_config_;
    std::unique_ptr<gpu::GpuEncoding> encoding_;
    std::unique_ptr<gpu::GpuMlp> mlp_;
    std::unique_ptr<gpu::GpuOptimizer> optimizer_;
    gpu::DeviceBuffer<float> params_, grads_;
    gpu::DeviceBuffer<float> encoded_, dencoded_;
    uint32_t capacity_ = 0;
    bool sparse_ = false;
    // Set by encode_columns_by_caller: the Composite whose copying part
    // forward() skips, and that part's input columns.
    const gpu::GpuCompositeEncoding* caller_columns_encoding_ = nullptr;
    uint32_t caller_columns_ = 0, caller_columns_count_ = 0;
};

} // namespace fusedngp
