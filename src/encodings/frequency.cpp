#include "encodings/frequency.h"

#include "core/math_constants.h"
#include "encodings/encoding_checks.h"
#include "encodings/per_dimension.h"

#include <cmath>

namespace fusedngp {

template <typename T>
FrequencyEncoding<T>::FrequencyEncoding(uint32_t n_dims, uint32_t n_frequencies)
    : n_dims_(n_dims), n_frequencies_(n_frequencies) {
    // pi * 2^f is formed in double (exact power-of-two scaling) and rounded
    // once to T, so float and double differ only by that one rounding.
    for (uint32_t f = 0; f < n_frequencies_; ++f) angular_freq_.push_back((T)std::ldexp(kPi, (int)f));
}

template <typename T>
void FrequencyEncoding<T>::forward(const T*, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_dims_, "Frequency");
    const uint32_t F = n_frequencies_;
    encode_each_dimension(in, n_dims_, 2 * F, out, [&](T x, T* y) {
        for (uint32_t f = 0; f < F; ++f) {
            T phase = angular_freq_[f] * x;
            y[2 * f] = std::sin(phase);
            y[2 * f + 1] = std::cos(phase);
        }
    });
}

template <typename T>
void FrequencyEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                    Matrix<T>* din) const {
    require_input_width(in, n_dims_, "Frequency");
    require_same_shape(in, dout, n_output_dims(), "Frequency");
    if (!din) return;
    const uint32_t F = n_frequencies_;
    backprop_each_dimension(in, dout, n_dims_, 2 * F, *din, [&](T x, const T* g) {
        T sum = 0;
        for (uint32_t f = 0; f < F; ++f) {
            T phase = angular_freq_[f] * x;
            // d sin/dx = w cos, d cos/dx = -w sin
            sum += angular_freq_[f] * (g[2 * f] * std::cos(phase) - g[2 * f + 1] * std::sin(phase));
        }
        return sum;
    });
}

template <typename T>
std::string FrequencyEncoding<T>::describe() const {
    return "Frequency(" + std::to_string(n_dims_) + "D, " + std::to_string(n_frequencies_) + " frequencies -> " +
           std::to_string(n_output_dims()) + " outputs)";
}

template <typename T>
std::unique_ptr<Encoding<T>> create_frequency_encoding(uint32_t n_input_dims, const json& config,
                                                       const std::string& path) {
    // Above 2^63 * pi the phase is pure rounding noise even in double.
    auto n_frequencies = (uint32_t)get_int(config, path, "n_frequencies", 12, 1, 64);
    return std::make_unique<FrequencyEncoding<T>>(n_input_dims, n_frequencies);
}

template class FrequencyEncoding<float>;
template class FrequencyEncoding<double>;
template std::unique_ptr<Encoding<float>> create_frequency_encoding<float>(uint32_t, const json&, const std::string&);
template std::unique_ptr<Encoding<double>> create_frequency_encoding<double>(uint32_t, const json&, const std::string&);

} // namespace fusedngp
