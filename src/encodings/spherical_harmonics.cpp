#include "encodings/spherical_harmonics.h"

#include "core/math_constants.h"
#include "encodings/dual.h"
#include "encodings/encoding_checks.h"

#include <cmath>

namespace fusedngp {

namespace {

double factorial(uint32_t n) {
    double r = 1;
    for (uint32_t i = 2; i <= n; ++i) r *= i;
    return r;
}

// P_m^m = (-1)^m (2m-1)!!  (the Condon-Shortley phase lives here).
double legendre_diagonal(uint32_t m) {
    double r = 1;
    for (uint32_t k = 1; k <= m; ++k) r *= -(double)(2 * k - 1);
    return r;
}

size_t sh_index(int l, int m) { return (size_t)(l * l + l + m); }

// Evaluates all degree^2 basis functions at v = (x, y, z). Written once for
// a scalar S (T for values, Dual<T,3> for values and Jacobians).
template <typename T, typename S>
void evaluate_basis(uint32_t degree, const T* normalisation, const S& x, const S& y, const S& z, S* out) {
    const int L = (int)degree;
    // (x + i y)^m = c[m] + i s[m], built up by repeated complex multiplication.
    S c[SphericalHarmonicsEncoding<T>::kMaxDegree];
    S s[SphericalHarmonicsEncoding<T>::kMaxDegree];
    c[0] = S(T(1));
    s[0] = S(T(0));
    for (int m = 1; m < L; ++m) {
        c[m] = x * c[m - 1] - y * s[m - 1];
        s[m] = x * s[m - 1] + y * c[m - 1];
    }
    for (int m = 0; m < L; ++m) {
        // Legendre recurrence in l at fixed m, keeping the last two values.
        S p_prev(T(0));
        S p((T)legendre_diagonal((uint32_t)m));
        for (int l = m; l < L; ++l) {
            if (l == m + 1) {
                S next = (T)(2 * m + 1) * z * p;
                p_prev = p;
                p = next;
            } else if (l > m + 1) {
                S next = ((T)(2 * l - 1) * z * p - (T)(l + m - 1) * p_prev) / (T)(l - m);
                p_prev = p;
                p = next;
            }
            if (m == 0) {
                out[sh_index(l, 0)] = normalisation[sh_index(l, 0)] * p;
            } else {
                out[sh_index(l, m)] = normalisation[sh_index(l, m)] * p * c[m];
                out[sh_index(l, -m)] = normalisation[sh_index(l, -m)] * p * s[m];
            }
        }
    }
}

} // namespace

template <typename T>
SphericalHarmonicsEncoding<T>::SphericalHarmonicsEncoding(uint32_t degree) : degree_(degree) {
    normalisation_.resize(n_output_dims());
    for (int l = 0; l < (int)degree_; ++l) {
        for (int m = -l; m <= l; ++m) {
            uint32_t am = (uint32_t)std::abs(m);
            double k = std::sqrt((2 * l + 1) / (4 * kPi) * factorial(l - am) / factorial(l + am));
            if (m != 0) k *= std::sqrt(2.0);
            normalisation_[sh_index(l, m)] = (T)k;
        }
    }
}

template <typename T>
void SphericalHarmonicsEncoding<T>::forward(const T*, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, 3, "SphericalHarmonics");
    const int64_t batch = in.rows();
    out.resize(batch, n_output_dims());
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* v = in.data() + i * 3;
        evaluate_basis<T, T>(degree_, normalisation_.data(), T(2) * v[0] - T(1), T(2) * v[1] - T(1),
                             T(2) * v[2] - T(1), out.data() + i * n_output_dims());
    }
}

template <typename T>
void SphericalHarmonicsEncoding<T>::backward(const T*, const Matrix<T>& in, const Matrix<T>& dout, T*,
                                             Matrix<T>* din) const {
    require_input_width(in, 3, "SphericalHarmonics");
    require_same_shape(in, dout, n_output_dims(), "SphericalHarmonics");
    if (!din) return;
    using D3 = Dual<T, 3>;
    const int64_t batch = in.rows();
    const uint32_t n_out = n_output_dims();
    din->resize(batch, 3);
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* v = in.data() + i * 3;
        // Seed 2 = d(2x - 1)/dx, so the duals carry derivatives w.r.t. the raw input.
        D3 x = D3::variable(T(2) * v[0] - T(1), 0, T(2));
        D3 y = D3::variable(T(2) * v[1] - T(1), 1, T(2));
        D3 z = D3::variable(T(2) * v[2] - T(1), 2, T(2));
        D3 basis[kMaxDegree * kMaxDegree];
        evaluate_basis<T, D3>(degree_, normalisation_.data(), x, y, z, basis);
        const T* g = dout.data() + i * n_out;
        T* gx = din->data() + i * 3;
        for (int k = 0; k < 3; ++k) {
            T sum = 0;
            for (uint32_t j = 0; j < n_out; ++j) sum += g[j] * basis[j].grad[k];
            gx[k] = sum;
        }
    }
}

template <typename T>
std::string SphericalHarmonicsEncoding<T>::describe() const {
    return "SphericalHarmonics(degree " + std::to_string(degree_) + " -> " + std::to_string(n_output_dims()) +
           " outputs)";
}

template <typename T>
std::unique_ptr<Encoding<T>> create_spherical_harmonics_encoding(uint32_t n_input_dims, const json& config,
                                                                 const std::string& path) {
    require_encoding_input_dims(config, path, "SphericalHarmonics", n_input_dims, {3});
    auto degree = (uint32_t)get_int(config, path, "degree", 4, 1, SphericalHarmonicsEncoding<T>::kMaxDegree);
    return std::make_unique<SphericalHarmonicsEncoding<T>>(degree);
}

template class SphericalHarmonicsEncoding<float>;
template class SphericalHarmonicsEncoding<double>;
template std::unique_ptr<Encoding<float>> create_spherical_harmonics_encoding<float>(uint32_t, const json&,
                                                                                     const std::string&);
template std::unique_ptr<Encoding<double>> create_spherical_harmonics_encoding<double>(uint32_t, const json&,
                                                                                       const std::string&);

} // namespace fusedngp
