// One-blob encoding (Mueller et al., "Neural Importance Sampling"): each input
// dimension becomes B bins holding the mass of a Gaussian blob centred at x_d
// with sigma = 1/B, integrated over bin b = [b/B, (b+1)/B]:
//   u = x_d * B
//   out[d*B + b] = 0.5 * (erf((b + 1 - u) / sqrt(2)) - erf((b - u) / sqrt(2)))
//   d out / d x_d = B / sqrt(2 pi) * (exp(-(b - u)^2 / 2) - exp(-(b + 1 - u)^2 / 2))
// Smooth everywhere; inputs are not clamped (meant for x in [0, 1]).
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>

namespace fusedngp {

template <typename T>
class OneBlobEncoding : public Encoding<T> {
public:
    OneBlobEncoding(uint32_t n_dims, uint32_t n_bins) : n_dims_(n_dims), n_bins_(n_bins) {}

    std::string otype() const override { return "OneBlob"; }
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return n_dims_ * n_bins_; }

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

private:
    uint32_t n_dims_;
    uint32_t n_bins_;
};

// Field: n_bins (16), positive.
template <typename T>
std::unique_ptr<Encoding<T>> create_one_blob_encoding(uint32_t n_input_dims, const json& config,
                                                      const std::string& path);

} // namespace fusedngp
