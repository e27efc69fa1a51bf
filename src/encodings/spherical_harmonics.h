// Real spherical harmonics of a direction, bands l = 0 .. degree-1
// (degree^2 outputs, output index l*l + l + m for m = -l..l).
//
// Input: x in [0,1]^3, mapped to v = 2x - 1 (not renormalised). The basis is
// the orthonormal real SH with the Condon-Shortley phase, written as
// polynomials in (v.x, v.y, v.z) the way graphics code does (e.g. Y_2^0 =
// 0.3154 * (3 z^2 - 1)), so values for non-unit v follow those polynomials:
//   Y_l^0  = K_l^0 * P_l^0(z)
//   Y_l^m  = sqrt(2) K_l^m * P_l^m(z) * Re((x + i y)^m)        m > 0
//   Y_l^-m = sqrt(2) K_l^m * P_l^m(z) * Im((x + i y)^m)        m > 0
//   K_l^m  = sqrt((2l+1)/(4 pi) * (l-m)!/(l+m)!)
// where P_l^m is the associated Legendre function divided by sin^m(theta),
// a polynomial in z (see docs/ENCODINGS.md for the exact recurrence).
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>
#include <vector>

namespace fusedngp {

template <typename T>
class SphericalHarmonicsEncoding : public Encoding<T> {
public:
    static constexpr uint32_t kMaxDegree = 8;

    explicit SphericalHarmonicsEncoding(uint32_t degree);

    std::string otype() const override { return "SphericalHarmonics"; }
    uint32_t n_input_dims() const override { return 3; }
    uint32_t n_output_dims() const override { return degree_ * degree_; }

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

    uint32_t degree() const { return degree_; }

private:
    uint32_t degree_;
    std::vector<T> normalisation_;  // per output: K_l^m, times sqrt(2) for m != 0
};

// Field: degree (4), in [1, 8]. n_input_dims must be 3.
template <typename T>
std::unique_ptr<Encoding<T>> create_spherical_harmonics_encoding(uint32_t n_input_dims, const json& config,
                                                                 const std::string& path);

} // namespace fusedngp
