#include "encodings/frequency.h"

#include "encodings/encoding_checks.h"

#include <cmath>

namespace fusedngp {

constexpr double kPi = 3.14159265358979323846;

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
    const int64_t batch = in.rows();
    const uint32_t F = n_frequencies_;
    out.resize(batch, n_output_dims());
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* x = in.data() + i * n_dims_;
        T* y = out.data() + i * n_output_dims();
        for (uint32_t d = 0; d < n_dims_; ++d) {
            for (uint32_t f = 0; f < F; ++f) {
                T phase = angular_freq_[f] * x[d];
                y[d * 2 * F + 2 * f] = std::sin(phase);
                y[d * 2 * F + 2 * f + 1] = std::cos(phase);
            }
        }
    }
}

template <typename T>
void FrequencyEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                    Matrix<T>* din) const {
    require_input_width(in, n_dims_, "Frequency");
    require_same_shape(in, dout, n_output_dims(), "Frequency");
    if (!din) return;
    const int64_t batch = in.rows();
    const uint32_t F = n_frequencies_;
    din->resize(batch, n_dims_);
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* x = in.data() + i * n_dims_;
        const T* g = dout.data() + i * n_output_dims();
        T* gx = din->data() + i * n_dims_;
        for (uint32_t d = 0; d < n_dims_; ++d) {
            T sum = 0;
            for (uint32_t f = 0; f < F; ++f) {
                T phase = angular_freq_[f] * x[d];
                // d sin/dx = w cos, d cos/dx = -w sin
                sum += angular_freq_[f] * (g[d * 2 * F + 2 * f] * std::cos(phase) -
                                           g[d * 2 * F + 2 * f + 1] * std::sin(phase));
            }
            gx[d] = sum;
        }
    }
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
