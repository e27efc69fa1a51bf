// Network: a trainable map (batch x n_input_dims) -> (batch x n_output_dims).
// The CPU reference has one implementation, Mlp. GPU networks (fully fused,
// cuBLASLt) share its parameter layout so weights move between them freely.
#pragma once

#include "core/common.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// What forward keeps for backward. Opaque to callers.
struct ForwardContext {
    virtual ~ForwardContext() = default;
};

template <typename T>
class Network {
public:
    virtual ~Network() = default;

    virtual std::string otype() const = 0;
    virtual uint32_t n_input_dims() const = 0;
    virtual uint32_t n_output_dims() const = 0;

    virtual size_t n_params() const = 0;
    virtual std::vector<ParamTensor> param_layout() const = 0;
    virtual void init_params(T* params, uint64_t seed) const = 0;

    // Inference: stores nothing.
    virtual void inference(const T* params, const Matrix<T>& in, Matrix<T>& out) const = 0;
    // Training forward: returns what backward needs.
    virtual std::unique_ptr<ForwardContext> forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const = 0;
    // Adds dL/dparams into `dparams`; writes dL/din into `din` when non-null.
    virtual void backward(const ForwardContext& ctx, const T* params, const Matrix<T>& in,
                          const Matrix<T>& dout, T* dparams, Matrix<T>* din) const = 0;

    virtual std::string describe() const { return otype(); }
};

} // namespace fusedngp
