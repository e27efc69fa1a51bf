#include "encodings/one_blob.h"

#include "encodings/encoding_checks.h"
#include "encodings/per_dimension.h"

#include <cmath>

namespace fusedngp {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Gaussian CDF (times 2, minus 1) at bin boundary b for a blob at u.
template <typename T>
T boundary_erf(uint32_t b, T u) {
    return std::erf(((T)b - u) * (T)kInvSqrt2);
}

// Gaussian density (up to 1/sqrt(2 pi)) at bin boundary b.
template <typename T>
T boundary_density(uint32_t b, T u) {
    T t = (T)b - u;
    return std::exp(T(-0.5) * t * t);
}

} // namespace

template <typename T>
void OneBlobEncoding<T>::forward(const T*, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_dims_, "OneBlob");
    const uint32_t B = n_bins_;
    encode_each_dimension(in, n_dims_, B, out, [&](T x, T* y) {
        const T u = x * (T)B;
        // Neighbouring bins share a boundary: evaluate each erf once.
        T lower = boundary_erf(0, u);
        for (uint32_t b = 0; b < B; ++b) {
            T upper = boundary_erf(b + 1, u);
            y[b] = T(0.5) * (upper - lower);
            lower = upper;
        }
    });
}

template <typename T>
void OneBlobEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                  Matrix<T>* din) const {
    require_input_width(in, n_dims_, "OneBlob");
    require_same_shape(in, dout, n_output_dims(), "OneBlob");
    if (!din) return;
    const uint32_t B = n_bins_;
    const T slope_scale = (T)((double)B * kInvSqrt2Pi);
    backprop_each_dimension(in, dout, n_dims_, B, *din, [&](T x, const T* g) {
        const T u = x * (T)B;
        T lower = boundary_density(0, u);
        T sum = 0;
        for (uint32_t b = 0; b < B; ++b) {
            T upper = boundary_density(b + 1, u);
            sum += g[b] * (lower - upper);
            lower = upper;
        }
        return slope_scale * sum;
    });
}

template <typename T>
std::string OneBlobEncoding<T>::describe() const {
    return "OneBlob(" + std::to_string(n_dims_) + "D, " + std::to_string(n_bins_) + " bins -> " +
           std::to_string(n_output_dims()) + " outputs)";
}

template <typename T>
std::unique_ptr<Encoding<T>> create_one_blob_encoding(uint32_t n_input_dims, const json& config,
                                                      const std::string& path) {
    uint32_t n_bins = get_size(config, path, "n_bins", 16);
    return std::make_unique<OneBlobEncoding<T>>(n_input_dims, n_bins);
}

template class OneBlobEncoding<float>;
template class OneBlobEncoding<double>;
template std::unique_ptr<Encoding<float>> create_one_blob_encoding<float>(uint32_t, const json&, const std::string&);
template std::unique_ptr<Encoding<double>> create_one_blob_encoding<double>(uint32_t, const json&,
                                                                            const std::string&);

} // namespace fusedngp
