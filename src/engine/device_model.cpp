#include "engine/device_model.h"

#include "core/errors.h"
#include "engine/cuda_backend_kernels.h"
#include "gpu/components/gpu_composite_encoding.h"
#include "gpu/cuda_check.h"
#include "gpu/fused_mlp.h"
#include "networks/mlp.h"
#include "optimizers/state_matching.h"

#include <cstdio>
#include <sstream>

namespace fusedngp {
gpu::GpuMlpConfig gpu_mlp_config_of(const Model<float>& host, const std::string& path) {
    const auto* net = dynamic_cast<const Mlp<float>*>(&host.network());
    if (!net) throw ConfigError(path + ".otype", "not an MLP; the cuda backend runs MLPs only (use --backend cpu)");
    gpu::GpuMlpConfig c;
    c.n_input_dims = host.encoding().n_output_dims();
    c.n_output_dims = net->n_output_dims();
    c.width = net->n_neurons();
    c.n_hidden_layers = net->n_hidden_layers();
    c.hidden_activation = net->activation();
    c.output_activation = net->output_activation();
    return c;
}

gpu::MlpKernel requested_mlp_kernel(const json& network, const std::string& path) {
    const std::string otype = get_otype(network, path);
    if (equals_ignore_case(otype, "FullyFusedMLP")) return gpu::MlpKernel::FullyFused;
    if (equals_ignore_case(otype, "CublasMLP") || equals_ignore_case(otype, "CutlassMLP")) return gpu::MlpKernel::Cublas;
    return gpu::MlpKernel::Auto;
}

gpu::MlpKernel choose_mlp_kernel(const gpu::GpuMlpConfig& c, gpu::MlpKernel requested, const std::string& path) {
    if (requested == gpu::MlpKernel::Cublas) return gpu::MlpKernel::Cublas;
    const std::string why = gpu::fused_unsupported_reason(c);
    if (why.empty()) return gpu::MlpKernel::FullyFused;
    if (requested == gpu::MlpKernel::FullyFused) {
        const std::string hint = path + ".otype FullyFusedMLP runs n_neurons 16, 32, 64, 128 or 256 and "
                                        "n_hidden_layers 1..16; use otype CublasMLP or Auto for other networks";
        if (c.width != 16 && c.width != 32 && c.width != 64 && c.width != 128 && c.width != 256)
            throw ConfigError(path + ".n_neurons", std::to_string(c.width) + " is not supported; " + hint);
        if (c.n_hidden_layers < 1 || c.n_hidden_layers > 16)
            throw ConfigError(path + ".n_hidden_layers", std::to_string(c.n_hidden_layers) + " is not supported; " + hint);
        throw ConfigError(path + ".otype", "FullyFusedMLP cannot run this network: " + why + "; use CublasMLP or Auto");
    }
    std::fprintf(stderr, "fusedngp: %s.otype Auto: %s; using CublasMLP\n", path.c_str(), why.c_str());
    return gpu::MlpKernel::Cublas;
}

DeviceModel::DeviceModel(const Model<float>& host, const json& network_config, const std::string& network_path,
                         const json& optimizer_config, const gpu::GpuEncodingOptions& encoding_options,
                         cudaStream_t stream)
    : n_encoding_params_(host.n_encoding_params()), mlp_config_(gpu_mlp_config_of(host, network_path)) {
    encoding_ = gpu::make_gpu_encoding(host.encoding(), encoding_options);
    const gpu::MlpKernel requested = requested_mlp_kernel(network_config, network_path);
    mlp_ = gpu::create_gpu_mlp(mlp_config_, choose_mlp_kernel(mlp_config_, requested, network_path));
    optimizer_ = gpu::create_gpu_optimizer(optimizer_config);
    params_.resize(host.n_params());
    grads_.resize(host.n_params());
    params_.upload(host.params());  // the host's seeded init: both backends start identical
    grads_.fill_bytes(0, stream);
    optimizer_->allocate(host.param_groups(), stream);
    refresh_components(params_.data(), stream);
    // The gradient starts at zero (above), as the sparse path needs.
    __half* mirror = n_encoding_params_ > 0 ? encoding_->half_params_mirror() : nullptr;
    sparse_ = mirror && optimizer_->set_sparse_group("encoding", mirror);
}

std::string DeviceModel::describe() const {
    std::ostringstream os;
    os << encoding_->describe() << " -> " << mlp_->describe();
    return os.str();
}

void DeviceModel::reserve(uint32_t batch) {
    if (batch <= capacity_) return;
    encoded_.resize((size_t)batch * n_encoded_dims());
    dencoded_.resize((size_t)batch * n_encoded_dims());
    mlp_->reserve(batch);
    capacity_ = batch;
}

void DeviceModel::refresh_components(const float* d_params, cudaStream_t stream) {
    if (n_encoding_params_ > 0) encoding_->set_params(d_params, stream);
    mlp_->set_params_device(d_params + n_encoding_params_, stream);
}

void DeviceModel::forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) {
    const uint32_t n_enc = n_encoded_dims();
    const gpu::ConstDeviceRows in = gpu::const_rows(d_in, n_input_dims());
    if (caller_columns_encoding_)
        caller_columns_encoding_->forward_except_copy(in, gpu::rows(encoded_.data(), n_enc), batch, caller_columns_,
                                                      caller_columns_count_, stream);
    else
        encoding_->forward(in, gpu::rows(encoded_.data(), n_enc), batch, stream);
    forward_encoded(d_out, batch, stream);
}

void DeviceModel::forward_encoded(float* d_out, uint32_t batch, cudaStream_t stream) {
    mlp_->forward(encoded_.data(), d_out, batch, stream);
}

void DeviceModel::backward(const float* d_in, const float* d_dout, float* d_din, uint32_t batch, cudaStream_t stream,
                           unsigned int* nonfinite_flag) {
    const uint32_t n_enc = n_encoded_dims();
    float* grads_net = grads_.data() + n_encoding_params_;
    auto* fused = nonfinite_flag ? dynamic_cast<gpu::FusedMlp*>(mlp_.get()) : nullptr;
    if (fused) fused->backward(encoded_.data(), d_dout, dencoded_.data(), grads_net, batch, stream, false, nonfinite_flag);
    else mlp_->backward(encoded_.data(), d_dout, dencoded_.data(), grads_net, batch, stream);
    if (nonfinite_flag) {
        if (!fused) gpu::launch_flag_non_finite(dencoded_.data(), (size_t)batch * n_enc, nonfinite_flag, stream);
        gpu::launch_flag_non_finite(grads_net, grads_.size() - n_encoding_params_, nonfinite_flag, stream);
    }
    if (n_encoding_params_ == 0 && d_din == nullptr) return;
    // Sparse: the grid's gradient is all zero between steps (the optimizer
    // clears the rows it updates), so the backward adds instead of clearing.
    encoding_->backward(gpu::const_rows(d_in, n_input_dims()), gpu::const_rows(dencoded_.data(), n_enc),
                        n_encoding_params_ > 0 ? grads_.data() : nullptr, gpu::rows(d_din, n_input_dims()), batch,
                        stream, sparse_);
}

void DeviceModel::inference(const float* d_in, float* d_out, float* d_scratch, uint32_t batch,
                            cudaStream_t stream) const {
    const uint32_t n_enc = n_encoded_dims();
    encoding_->forward(gpu::const_rows(d_in, n_input_dims()), gpu::rows(d_scratch, n_enc), batch, stream);
    mlp_->inference(d_scratch, d_out, batch, stream);
}

void DeviceModel::skip_input_gradient_below(uint32_t column) {
    if (auto* composite = dynamic_cast<gpu::GpuCompositeEncoding*>(encoding_.get()))
        composite->skip_input_gradient_below(column);
}

int DeviceModel::encode_columns_by_caller(uint32_t column, uint32_t n) {
    const auto* composite = dynamic_cast<const gpu::GpuCompositeEncoding*>(encoding_.get());
    const int encoded_column = composite ? composite->copied_output_column(column, n) : -1;
    if (encoded_column < 0) return -1;
    caller_columns_encoding_ = composite;
    caller_columns_ = column;
    caller_columns_count_ = n;
    return encoded_column;
}

void DeviceModel::zero_gradient_if(const unsigned int* flag, cudaStream_t stream) {
    gpu::launch_zero_if_flagged(grads_.data(), grads_.size(), flag, stream);
}

void DeviceModel::step(cudaStream_t stream) {
    optimizer_->step(params_.data(), grads_.data(), stream);
    if (sparse_) {  // the optimizer refreshed the touched grid rows' fp16 copy
        mlp_->set_params_device(params_.data() + n_encoding_params_, stream);
        return;
    }
    refresh_components(params_.data(), stream);
}

void DeviceModel::use_inference_params(cudaStream_t stream) {
    refresh_components(optimizer_->inference_params(params_.data()), stream);
}

void DeviceModel::use_training_params(cudaStream_t stream) { refresh_components(params_.data(), stream); }

std::vector<float> DeviceModel::inference_params(cudaStream_t stream) const {
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> out(params_.size());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(out.data(), optimizer_->inference_params(params_.data()), out.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost));
    return out;
}

std::vector<std::pair<std::string, std::vector<float>>> DeviceModel::optimizer_state(cudaStream_t stream) const {
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::pair<std::string, std::vector<float>>> out;
    for (const gpu::GpuStateBuffer& b : optimizer_->state()) {
        std::vector<float> host(b.size);
        if (b.size > 0)
            FUSEDNGP_GPU_CHECK(cudaMemcpy(host.data(), b.data, b.size * sizeof(float), cudaMemcpyDeviceToHost));
        out.emplace_back(b.name, std::move(host));
    }
    return out;
}

void DeviceModel::load(const std::vector<float>& params,
                       const std::vector<std::pair<std::string, std::vector<float>>>& optimizer, uint64_t step,
                       const std::string& which, cudaStream_t stream) {
    if (params.size() != params_.size())
        throw InputError(which + " model: the state has " + std::to_string(params.size()) + " parameters, expected " +
                         std::to_string(params_.size()));
    std::vector<gpu::GpuStateBuffer> buffers = optimizer_->state();
    std::vector<StateBufferShape> shapes;
    for (const auto& b : buffers) shapes.push_back({b.name, b.size});
    const auto saved = match_state_buffers(shapes, optimizer, which + " optimizer: the state");
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    params_.upload(params);
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (buffers[i].size == 0) continue;
        if (saved[i]) {
            FUSEDNGP_GPU_CHECK(cudaMemcpy(buffers[i].data, saved[i]->data(), buffers[i].size * sizeof(float),
                                          cudaMemcpyHostToDevice));
        } else {
            FUSEDNGP_GPU_CHECK(cudaMemset(buffers[i].data, 0, buffers[i].size * sizeof(float)));
        }
    }
    optimizer_->set_step_count(step, stream);
    grads_.fill_bytes(0, stream);  // as the sparse path needs
    refresh_components(params_.data(), stream);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
}

} // namespace fusedngp
