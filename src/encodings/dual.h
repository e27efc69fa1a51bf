// A tiny forward-mode dual number: a value and its derivatives with respect to
// N independent inputs. Lets polynomial code written once for a scalar type
// also produce exact Jacobians (used by the spherical-harmonics encoding, so
// that degree 8 needs no hand-written derivatives).
#pragma once

namespace fusedngp {

template <typename T, int N>
struct Dual {
    T value = 0;
    T grad[N] = {};

    Dual() = default;
    // A constant: zero derivative. Implicit so literals mix with duals.
    Dual(T constant) : value(constant) {}  // NOLINT(google-explicit-constructor)

    static Dual variable(T v, int index, T seed = T(1)) {
        Dual d(v);
        d.grad[index] = seed;
        return d;
    }
};

template <typename T, int N>
Dual<T, N> operator+(const Dual<T, N>& a, const Dual<T, N>& b) {
    Dual<T, N> r(a.value + b.value);
    for (int i = 0; i < N; ++i) r.grad[i] = a.grad[i] + b.grad[i];
    return r;
}

template <typename T, int N>
Dual<T, N> operator-(const Dual<T, N>& a, const Dual<T, N>& b) {
    Dual<T, N> r(a.value - b.value);
    for (int i = 0; i < N; ++i) r.grad[i] = a.grad[i] - b.grad[i];
    return r;
}

template <typename T, int N>
Dual<T, N> operator*(const Dual<T, N>& a, const Dual<T, N>& b) {
    Dual<T, N> r(a.value * b.value);
    for (int i = 0; i < N; ++i) r.grad[i] = a.grad[i] * b.value + a.value * b.grad[i];
    return r;
}

template <typename T, int N>
Dual<T, N> operator*(T a, const Dual<T, N>& b) {
    Dual<T, N> r(a * b.value);
    for (int i = 0; i < N; ++i) r.grad[i] = a * b.grad[i];
    return r;
}

template <typename T, int N>
Dual<T, N> operator*(const Dual<T, N>& a, T b) {
    return b * a;
}

template <typename T, int N>
Dual<T, N> operator/(const Dual<T, N>& a, T b) {
    Dual<T, N> r(a.value / b);
    for (int i = 0; i < N; ++i) r.grad[i] = a.grad[i] / b;
    return r;
}

} // namespace fusedngp
