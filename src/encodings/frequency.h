// Frequency (positional) encoding, as in NeRF:
//   phase = (T)(pi * 2^f) * x_d
//   out[d*2F + 2f + 0] = sin(phase),  out[d*2F + 2f + 1] = cos(phase)
// i.e. sin(2^f * pi * x_d + s * pi/2) for s in {0, 1}.
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>
#include <vector>

namespace fusedngp {

template <typename T>
class FrequencyEncoding : public Encoding<T> {
public:
    FrequencyEncoding(uint32_t n_dims, uint32_t n_frequencies);

    std::string otype() const override { return "Frequency"; }
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return n_dims_ * 2 * n_frequencies_; }

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

private:
    uint32_t n_dims_;
    uint32_t n_frequencies_;
    std::vector<T> angular_freq_;  // (T)(pi * 2^f), f = 0..F-1
};

// Field: n_frequencies (12), in [1, 64].
template <typename T>
std::unique_ptr<Encoding<T>> create_frequency_encoding(uint32_t n_input_dims, const json& config,
                                                       const std::string& path);

} // namespace fusedngp
