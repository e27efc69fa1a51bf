#include "encodings/identity.h"

#include "encodings/encoding_checks.h"

namespace fusedngp {

template <typename T>
void IdentityEncoding<T>::forward(const T*, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_dims_, "Identity");
    out = (in.array() * scale_ + offset_).matrix();
}

template <typename T>
void IdentityEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                   Matrix<T>* din) const {
    require_input_width(in, n_dims_, "Identity");
    require_same_shape(in, dout, n_dims_, "Identity");
    if (din) *din = dout * scale_;
}

template <typename T>
std::string IdentityEncoding<T>::describe() const {
    return "Identity(" + std::to_string(n_dims_) + "D, scale " + format_number((double)scale_) + ", offset " +
           format_number((double)offset_) + ")";
}

template <typename T>
std::unique_ptr<Encoding<T>> create_identity_encoding(uint32_t n_input_dims, const json& config,
                                                      const std::string& path) {
    double scale = get_number(config, path, "scale", 1.0);
    double offset = get_number(config, path, "offset", 0.0);
    return std::make_unique<IdentityEncoding<T>>(n_input_dims, (T)scale, (T)offset);
}

template class IdentityEncoding<float>;
template class IdentityEncoding<double>;
template std::unique_ptr<Encoding<float>> create_identity_encoding<float>(uint32_t, const json&, const std::string&);
template std::unique_ptr<Encoding<double>> create_identity_encoding<double>(uint32_t, const json&, const std::string&);

} // namespace fusedngp
