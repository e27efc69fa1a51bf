// Triangle-wave encoding: a cheap, piecewise-linear stand-in for Frequency.
//   t = 2^f * x_d                      (exact power-of-two scaling)
//   out[d*F + f] = 4 * |t - floor(t) - 1/2| - 1
// Period 1 in t, range [-1, 1]: +1 at integers, -1 at half-integers (shaped
// like cos(2 pi t)). Derivative: 2^f * (frac(t) >= 1/2 ? 4 : -4); at the kinks
// the right-hand slope is used.
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>

namespace fusedngp {

template <typename T>
class TriangleWaveEncoding : public Encoding<T> {
public:
    TriangleWaveEncoding(uint32_t n_dims, uint32_t n_frequencies) : n_dims_(n_dims), n_frequencies_(n_frequencies) {}

    std::string otype() const override { return "TriangleWave"; }
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return n_dims_ * n_frequencies_; }

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

private:
    uint32_t n_dims_;
    uint32_t n_frequencies_;
};

// Field: n_frequencies (12), in [1, 64].
template <typename T>
std::unique_ptr<Encoding<T>> create_triangle_wave_encoding(uint32_t n_input_dims, const json& config,
                                                           const std::string& path);

} // namespace fusedngp
