// Model: an encoding followed by a network, with one flat parameter array.
//
// Layout of the flat array: the encoding's block first, then the network's.
// Every parameter has a stable name ("encoding.level03",
// "network.layers.0.weight"): weight export and snapshots use these names.
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"
#include "networks/network.h"
#include "optimizers/optimizer.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// A named view into the model's parameter array.
struct NamedTensor {
    std::string name;           // "encoding.level03", "network.layers.0.weight"
    size_t offset = 0;          // into the flat array
    std::vector<size_t> shape;
    size_t size() const {
        size_t n = 1;
        for (size_t s : shape) n *= s;
        return n;
    }
};

template <typename T>
class Model {
public:
    // `config` holds at least "encoding" and "network" (tiny-cuda-nn schema).
    Model(uint32_t n_input_dims, uint32_t n_output_dims, const json& config, uint64_t seed);

    uint32_t n_input_dims() const { return encoding_->n_input_dims(); }
    uint32_t n_output_dims() const { return network_->n_output_dims(); }

    const Encoding<T>& encoding() const { return *encoding_; }
    const Network<T>& network() const { return *network_; }

    size_t n_params() const { return params_.size(); }
    size_t n_encoding_params() const { return encoding_->n_params(); }
    size_t n_network_params() const { return network_->n_params(); }

    std::vector<T>& params() { return params_; }
    const std::vector<T>& params() const { return params_; }

    // Groups for the optimizer: "encoding" (row size = the grid's feature
    // count, so empty hash rows can be skipped) and "network".
    std::vector<ParamGroup> param_groups() const;
    std::vector<NamedTensor> named_tensors() const;

    // Batched inference with the given parameters (default: the model's own).
    void inference(const Matrix<T>& in, Matrix<T>& out, const T* params = nullptr) const;

    // Forward for training. Keeps what backward needs in this object, so a
    // Model is not re-entrant during a training step.
    void forward(const Matrix<T>& in, Matrix<T>& out);
    // Given dL/dout, writes dL/dparams into `grads` (resized, overwritten).
    // `din` receives dL/din when non-null.
    void backward(const Matrix<T>& in, const Matrix<T>& dout, std::vector<T>& grads, Matrix<T>* din = nullptr);

private:
    std::unique_ptr<Encoding<T>> encoding_;
    std::unique_ptr<Network<T>> network_;
    std::vector<T> params_;
    // Training intermediates.
    Matrix<T> encoded_;
    Matrix<T> dencoded_;
    std::unique_ptr<ForwardContext> network_context_;
};

} // namespace fusedngp
