// Mlp: the CPU reference multi-layer perceptron (tiny-cuda-nn's MLP schema).
//
//   in -> W0 -> f -> W1 -> f -> ... -> W(n_hidden_layers) -> f_out -> out
//
// No biases (as tiny-cuda-nn). Layer k's weight is `layers.k.weight`, shape
// {fan_out, fan_in}, row-major (PyTorch nn.Linear convention), and the layers
// lie back to back in order in the flat parameter block. n_hidden_layers == 0
// means a single linear layer in -> out. Any width and depth are accepted.
//
// Init: Xavier-uniform per layer, s = sqrt(6 / (fan_in + fan_out)), each
// weight w = -s + 2s * u with u = Rng(seed).next_double(), computed in double
// and rounded to T, drawn in parameter order (layer 0 row 0 col 0 first).
#pragma once

#include "networks/activation.h"
#include "networks/network.h"

#include <string>
#include <vector>

namespace fusedngp {

template <typename T>
class Mlp : public Network<T> {
public:
    // `otype` is only recorded (the config's canonical spelling); every MLP
    // otype computes the same function on the CPU.
    Mlp(uint32_t n_input_dims, uint32_t n_output_dims, uint32_t n_neurons, uint32_t n_hidden_layers,
        Activation activation, Activation output_activation, std::string otype = "MLP");

    std::string otype() const override { return otype_; }
    uint32_t n_input_dims() const override { return n_input_dims_; }
    uint32_t n_output_dims() const override { return n_output_dims_; }
    uint32_t n_neurons() const { return n_neurons_; }
    uint32_t n_hidden_layers() const { return n_hidden_layers_; }
    Activation activation() const { return activation_; }
    Activation output_activation() const { return output_activation_; }

    size_t n_params() const override { return n_params_; }
    std::vector<ParamTensor> param_layout() const override;
    void init_params(T* params, uint64_t seed) const override;

    void inference(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    std::unique_ptr<ForwardContext> forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const ForwardContext& ctx, const T* params, const Matrix<T>& in,
                  const Matrix<T>& dout, T* dparams, Matrix<T>* din) const override;

    std::string describe() const override;

private:
    struct LayerShape {
        uint32_t fan_in;
        uint32_t fan_out;
        size_t offset;  // of the weight inside the parameter block
    };

    size_t n_layers() const { return layers_.size(); }
    bool is_output_layer(size_t k) const { return k + 1 == layers_.size(); }
    Activation layer_activation(size_t k) const { return is_output_layer(k) ? output_activation_ : activation_; }
    void check_input(const Matrix<T>& in) const;

    uint32_t n_input_dims_;
    uint32_t n_output_dims_;
    uint32_t n_neurons_;
    uint32_t n_hidden_layers_;
    Activation activation_;
    Activation output_activation_;
    std::string otype_;
    std::vector<LayerShape> layers_;
    size_t n_params_ = 0;
};

} // namespace fusedngp
