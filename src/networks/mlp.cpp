#include "networks/mlp.h"

#include "core/rng.h"
#include "networks/activation_ops.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fusedngp {

namespace {

// The batch is processed in fixed chunks of rows, in parallel over chunks.
// Each chunk runs its own small matrix products (Eigen's internal threading is
// off: EIGEN_DONT_PARALLELIZE), and weight gradients are summed per chunk and
// then over chunks in chunk order. The chunking does not depend on the thread
// count, so results are bit-identical for any number of threads; and no
// thread ever spin-waits for another inside a product, which on a busy
// machine made a step 20x slower.
constexpr Eigen::Index kRowChunk = 1024;

Eigen::Index chunk_count(Eigen::Index batch) { return (batch + kRowChunk - 1) / kRowChunk; }

template <typename T>
using MatrixMap = Eigen::Map<Matrix<T>>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const Matrix<T>>;

// The elementwise passes below take __restrict pointers (separate in- and
// output, or one in-place array) so that the compiler vectorises them and
// turns ReLU's branch into a select: a mispredicted branch per element costs
// more than the whole multiply on random-sign pre-activations.

// y = f(z), y and z distinct.
template <typename T>
void activation_forward(Activation a, const T* __restrict z, T* __restrict y, Eigen::Index rows, Eigen::Index cols) {
    activation_ops::dispatch(a, [&](auto op) {
        using Op = decltype(op);
        for (Eigen::Index i = 0; i < rows; ++i) {
            for (Eigen::Index j = i * cols; j < (i + 1) * cols; ++j) y[j] = Op::template value<T>(z[j]);
        }
    });
}

// y = f(y) in place.
template <typename T>
void activation_forward_inplace(Activation a, T* y, Eigen::Index rows, Eigen::Index cols) {
    if (a == Activation::None) return;
    activation_ops::dispatch(a, [&](auto op) {
        using Op = decltype(op);
        for (Eigen::Index i = 0; i < rows; ++i) {
            for (Eigen::Index j = i * cols; j < (i + 1) * cols; ++j) y[j] = Op::template value<T>(y[j]);
        }
    });
}

// grad *= f'(z) in place: turns dL/dy into dL/dz.
template <typename T>
void activation_backward_inplace(Activation a, const T* __restrict z, T* __restrict grad, Eigen::Index rows,
                                 Eigen::Index cols) {
    if (a == Activation::None) return;
    activation_ops::dispatch(a, [&](auto op) {
        using Op = decltype(op);
        for (Eigen::Index i = 0; i < rows; ++i) {
            for (Eigen::Index j = i * cols; j < (i + 1) * cols; ++j) grad[j] *= Op::template derivative<T>(z[j]);
        }
    });
}

} // namespace

// What backward needs: every layer's pre-activation Z_k (for f'(Z_k)) and
// every hidden layer's output H_k = f(Z_k) (the input of layer k+1, for dW).
template <typename T>
struct MlpForwardContext : ForwardContext {
    std::vector<Matrix<T>> pre_activations;  // n_layers, (batch x fan_out)
    std::vector<Matrix<T>> hidden_outputs;   // n_layers - 1, (batch x n_neurons)
};

template <typename T>
Mlp<T>::Mlp(uint32_t n_input_dims, uint32_t n_output_dims, uint32_t n_neurons, uint32_t n_hidden_layers,
            Activation activation, Activation output_activation, std::string otype)
    : n_input_dims_(n_input_dims),
      n_output_dims_(n_output_dims),
      n_neurons_(n_neurons),
      n_hidden_layers_(n_hidden_layers),
      activation_(activation),
      output_activation_(output_activation),
      otype_(std::move(otype)) {
    if (n_input_dims == 0 || n_output_dims == 0 || n_neurons == 0) {
        throw std::invalid_argument("Mlp: n_input_dims, n_output_dims and n_neurons must be positive");
    }
    uint32_t fan_in = n_input_dims;
    for (uint32_t k = 0; k <= n_hidden_layers; ++k) {
        uint32_t fan_out = (k == n_hidden_layers) ? n_output_dims : n_neurons;
        layers_.push_back({fan_in, fan_out, n_params_});
        n_params_ += (size_t)fan_in * fan_out;
        fan_in = fan_out;
    }
}

template <typename T>
std::vector<ParamTensor> Mlp<T>::param_layout() const {
    std::vector<ParamTensor> layout;
    for (size_t k = 0; k < n_layers(); ++k) {
        ParamTensor p;
        p.name = "layers." + std::to_string(k) + ".weight";
        p.offset = layers_[k].offset;
        p.shape = {layers_[k].fan_out, layers_[k].fan_in};
        layout.push_back(std::move(p));
    }
    return layout;
}

template <typename T>
void Mlp<T>::init_params(T* params, uint64_t seed) const {
    // Computed in double and rounded, so float and double models start from
    // the same weights (up to rounding) and the GPU can reproduce them.
    Rng rng(seed);
    for (const LayerShape& layer : layers_) {
        const double s = std::sqrt(6.0 / ((double)layer.fan_in + (double)layer.fan_out));
        const size_t n = (size_t)layer.fan_in * layer.fan_out;
        for (size_t i = 0; i < n; ++i) params[layer.offset + i] = (T)rng.uniform<double>(-s, s);
    }
}

template <typename T>
void Mlp<T>::check_input(const Matrix<T>& in) const {
    if (in.cols() != (Eigen::Index)n_input_dims_) {
        throw std::invalid_argument("Mlp: input has " + std::to_string(in.cols()) + " columns, expected " +
                                    std::to_string(n_input_dims_));
    }
}

template <typename T>
void Mlp<T>::inference(const T* params, const Matrix<T>& in, Matrix<T>& out) const {
    check_input(in);
    if (&in == &out) throw std::invalid_argument("Mlp::inference: `out` must not be `in`");
    const Eigen::Index batch = in.rows();
    out.resize(batch, n_output_dims_);
    const Eigen::Index n_chunks = chunk_count(batch);
#pragma omp parallel for schedule(static) if (n_chunks > 1)
    for (Eigen::Index c = 0; c < n_chunks; ++c) {
        const Eigen::Index r0 = c * kRowChunk, rows = std::min(kRowChunk, batch - r0);
        // Two hidden buffers used in turn; layer 0 reads the input rows in
        // place and the last layer writes into `out`.
        Matrix<T> buffers[2];
        for (size_t k = 0; k < n_layers(); ++k) {
            const LayerShape& layer = layers_[k];
            ConstMatrixMap<T> weight(params + layer.offset, layer.fan_out, layer.fan_in);
            auto layer_output = [&](auto&& target) {
                if (k == 0) target.noalias() = in.middleRows(r0, rows) * weight.transpose();
                else target.noalias() = buffers[(k - 1) % 2] * weight.transpose();
            };
            if (is_output_layer(k)) {
                layer_output(out.middleRows(r0, rows));
                activation_forward_inplace(layer_activation(k), out.data() + r0 * out.cols(), rows,
                                           (Eigen::Index)layer.fan_out);
            } else {
                Matrix<T>& target = buffers[k % 2];
                target.resize(rows, layer.fan_out);
                layer_output(target);
                activation_forward_inplace(layer_activation(k), target.data(), rows, (Eigen::Index)layer.fan_out);
            }
        }
    }
}

template <typename T>
std::unique_ptr<ForwardContext> Mlp<T>::forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const {
    check_input(in);
    if (&in == &out) throw std::invalid_argument("Mlp::forward: `out` must not be `in`");
    const Eigen::Index batch = in.rows();
    auto ctx = std::make_unique<MlpForwardContext<T>>();
    ctx->pre_activations.resize(n_layers());
    ctx->hidden_outputs.resize(n_layers() - 1);
    for (size_t k = 0; k < n_layers(); ++k) {
        ctx->pre_activations[k].resize(batch, layers_[k].fan_out);
        if (!is_output_layer(k)) ctx->hidden_outputs[k].resize(batch, layers_[k].fan_out);
    }
    out.resize(batch, n_output_dims_);
    const Eigen::Index n_chunks = chunk_count(batch);
#pragma omp parallel for schedule(static) if (n_chunks > 1)
    for (Eigen::Index c = 0; c < n_chunks; ++c) {
        const Eigen::Index r0 = c * kRowChunk, rows = std::min(kRowChunk, batch - r0);
        for (size_t k = 0; k < n_layers(); ++k) {
            const LayerShape& layer = layers_[k];
            ConstMatrixMap<T> weight(params + layer.offset, layer.fan_out, layer.fan_in);
            const Matrix<T>& input = (k == 0) ? in : ctx->hidden_outputs[k - 1];
            Matrix<T>& z = ctx->pre_activations[k];
            z.middleRows(r0, rows).noalias() = input.middleRows(r0, rows) * weight.transpose();
            Matrix<T>& y = is_output_layer(k) ? out : ctx->hidden_outputs[k];
            const Eigen::Index offset = r0 * (Eigen::Index)layer.fan_out;
            activation_forward(layer_activation(k), z.data() + offset, y.data() + offset, rows,
                               (Eigen::Index)layer.fan_out);
        }
    }
    return ctx;
}

template <typename T>
void Mlp<T>::backward(const ForwardContext& ctx, const T* params, const Matrix<T>& in, const Matrix<T>& dout,
                      T* dparams, Matrix<T>* din) const {
    const auto* mlp_ctx = dynamic_cast<const MlpForwardContext<T>*>(&ctx);
    if (!mlp_ctx) throw std::invalid_argument("Mlp::backward: context does not come from Mlp::forward");
    check_input(in);
    const Eigen::Index batch = in.rows();
    if (dout.rows() != batch || dout.cols() != (Eigen::Index)n_output_dims_ ||
        mlp_ctx->pre_activations.back().rows() != batch) {
        throw std::invalid_argument("Mlp::backward: dout or context shape does not match the input batch");
    }

    Eigen::Index widest = 0;
    for (const LayerShape& layer : layers_) widest = std::max<Eigen::Index>(widest, layer.fan_out);
    if (din) din->resize(batch, n_input_dims_);
    const Eigen::Index n_chunks = chunk_count(batch);
    // Per-chunk weight gradients, summed in chunk order below.
    std::vector<T> partial(dparams ? (size_t)n_chunks * n_params_ : 0);
    const size_t last = n_layers() - 1;

#pragma omp parallel for schedule(static) if (n_chunks > 1)
    for (Eigen::Index c = 0; c < n_chunks; ++c) {
        const Eigen::Index r0 = c * kRowChunk, rows = std::min(kRowChunk, batch - r0);
        // dL/dZ of the current layer and dL/dH of the one below, in two
        // buffers sized for the widest layer and reused for all layers.
        Vector<T> grad_storage[2] = {Vector<T>(rows * widest), Vector<T>(rows * widest)};
        int current = 0;
        MatrixMap<T> dz_out(grad_storage[current].data(), rows, layers_[last].fan_out);
        dz_out = dout.middleRows(r0, rows);
        activation_backward_inplace(output_activation_,
                                    mlp_ctx->pre_activations[last].data() + r0 * (Eigen::Index)layers_[last].fan_out,
                                    dz_out.data(), rows, (Eigen::Index)layers_[last].fan_out);
        for (size_t k = last + 1; k-- > 0;) {
            const LayerShape& layer = layers_[k];
            MatrixMap<T> dz(grad_storage[current].data(), rows, layer.fan_out);
            const Matrix<T>& layer_input = (k == 0) ? in : mlp_ctx->hidden_outputs[k - 1];
            if (dparams) {
                MatrixMap<T> dweight(partial.data() + (size_t)c * n_params_ + layer.offset, layer.fan_out, layer.fan_in);
                dweight.noalias() = dz.transpose() * layer_input.middleRows(r0, rows);
            }
            ConstMatrixMap<T> weight(params + layer.offset, layer.fan_out, layer.fan_in);
            if (k > 0) {
                MatrixMap<T> dh(grad_storage[1 - current].data(), rows, layer.fan_in);
                dh.noalias() = dz * weight;
                activation_backward_inplace(activation_,
                                            mlp_ctx->pre_activations[k - 1].data() + r0 * (Eigen::Index)layer.fan_in,
                                            dh.data(), rows, (Eigen::Index)layer.fan_in);
                current = 1 - current;
            } else if (din) {
                din->middleRows(r0, rows).noalias() = dz * weight;
            }
        }
    }
    if (dparams) {
        for (Eigen::Index c = 0; c < n_chunks; ++c) {
            const T* p = partial.data() + (size_t)c * n_params_;
            for (size_t i = 0; i < n_params_; ++i) dparams[i] += p[i];
        }
    }
}

template <typename T>
std::string Mlp<T>::describe() const {
    std::ostringstream s;
    s << otype_ << " (CPU MLP): " << n_input_dims_ << " -> " << n_hidden_layers_ << " x " << n_neurons_
      << " " << activation_name(activation_) << " -> " << n_output_dims_ << " "
      << activation_name(output_activation_) << ", " << n_params_ << " params, no bias";
    return s.str();
}

template class Mlp<float>;
template class Mlp<double>;

} // namespace fusedngp
