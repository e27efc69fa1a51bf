// Identity encoding: out = in * scale + offset (elementwise).
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>

namespace fusedngp {

template <typename T>
class IdentityEncoding : public Encoding<T> {
public:
    IdentityEncoding(uint32_t n_dims, T scale, T offset) : n_dims_(n_dims), scale_(scale), offset_(offset) {}

    std::string otype() const override { return "Identity"; }
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return n_dims_; }

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

private:
    uint32_t n_dims_;
    T scale_;
    T offset_;
};

// Fields: scale (1.0), offset (0.0).
template <typename T>
std::unique_ptr<Encoding<T>> create_identity_encoding(uint32_t n_input_dims, const json& config,
                                                      const std::string& path);

} // namespace fusedngp
