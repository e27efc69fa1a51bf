#include "encodings/triangle_wave.h"

#include "encodings/encoding_checks.h"
#include "encodings/per_dimension.h"

#include <cmath>

namespace fusedngp {

namespace {

template <typename T>
T fractional_part(T t) {
    return t - std::floor(t);
}

template <typename T>
T triangle(T t) {
    return T(4) * std::abs(fractional_part(t) - T(0.5)) - T(1);
}

template <typename T>
T triangle_slope(T t) {
    return fractional_part(t) >= T(0.5) ? T(4) : T(-4);
}

} // namespace

template <typename T>
void TriangleWaveEncoding<T>::forward(const T*, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_dims_, "TriangleWave");
    const uint32_t F = n_frequencies_;
    encode_each_dimension(in, n_dims_, F, out, [&](T x, T* y) {
        for (uint32_t f = 0; f < F; ++f) y[f] = triangle(std::ldexp(x, (int)f));
    });
}

template <typename T>
void TriangleWaveEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                       Matrix<T>* din) const {
    require_input_width(in, n_dims_, "TriangleWave");
    require_same_shape(in, dout, n_output_dims(), "TriangleWave");
    if (!din) return;
    const uint32_t F = n_frequencies_;
    backprop_each_dimension(in, dout, n_dims_, F, *din, [&](T x, const T* g) {
        T sum = 0;
        for (uint32_t f = 0; f < F; ++f) sum += g[f] * std::ldexp(triangle_slope(std::ldexp(x, (int)f)), (int)f);
        return sum;
    });
}

template <typename T>
std::string TriangleWaveEncoding<T>::describe() const {
    return "TriangleWave(" + std::to_string(n_dims_) + "D, " + std::to_string(n_frequencies_) + " frequencies -> " +
           std::to_string(n_output_dims()) + " outputs)";
}

template <typename T>
std::unique_ptr<Encoding<T>> create_triangle_wave_encoding(uint32_t n_input_dims, const json& config,
                                                           const std::string& path) {
    auto n_frequencies = (uint32_t)get_int(config, path, "n_frequencies", 12, 1, 64);
    return std::make_unique<TriangleWaveEncoding<T>>(n_input_dims, n_frequencies);
}

template class TriangleWaveEncoding<float>;
template class TriangleWaveEncoding<double>;
template std::unique_ptr<Encoding<float>> create_triangle_wave_encoding<float>(uint32_t, const json&,
                                                                               const std::string&);
template std::unique_ptr<Encoding<double>> create_triangle_wave_encoding<double>(uint32_t, const json&,
                                                                                 const std::string&);

} // namespace fusedngp
