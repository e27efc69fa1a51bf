// Encoding: maps input coordinates (batch x n_input_dims) to features
// (batch x n_output_dims), optionally with trainable parameters.
//
// Parameters live in a flat block owned by the caller (the model), so the
// optimizer, snapshots and weight export see one contiguous array. The
// encoding only knows its block's size and layout.
#pragma once

#include "core/common.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

template <typename T>
class Encoding {
public:
    virtual ~Encoding() = default;

    virtual std::string otype() const = 0;     // canonical name, e.g. "HashGrid"
    virtual uint32_t n_input_dims() const = 0;
    virtual uint32_t n_output_dims() const = 0;

    // Number of trainable parameters and their layout inside the block.
    virtual size_t n_params() const { return 0; }
    virtual std::vector<ParamTensor> param_layout() const { return {}; }
    // Documented, seeded initialisation. `params` has n_params() elements.
    virtual void init_params(T* /*params*/, uint64_t /*seed*/) const {}

    // out = encode(in). `out` is resized to (batch, n_output_dims).
    virtual void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const = 0;

    // Given dL/dout: adds dL/dparams into `dparams` (may be null when the
    // encoding has no parameters or they are frozen), and writes dL/din into
    // `din` when non-null (resized to (batch, n_input_dims)).
    virtual void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout,
                          T* dparams, Matrix<T>* din) const = 0;

    // Human-readable one-liner for `fusedngp info`.
    virtual std::string describe() const { return otype(); }
};

} // namespace fusedngp
