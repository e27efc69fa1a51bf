// Vec3: a plain 3-float vector for geometry shared by host and device code.
// The same inline functions run in the CPU reference and in CUDA kernels, so
// a query's math is written once (the kernels' CPU twin is the plain loop
// that calls these on the host).
#pragma once

#include "core/host_device.h"

#include <cmath>
#include <cstdint>

namespace fusedngp {

struct Vec3 {
    float x = 0, y = 0, z = 0;
    Vec3() = default;
    FUSEDNGP_HD Vec3(float x_, float y_, float z_) : x(x_), y(y_), z(z_) {}
    FUSEDNGP_HD float operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
    FUSEDNGP_HD float& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }
};

FUSEDNGP_HD Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
FUSEDNGP_HD Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
FUSEDNGP_HD Vec3 operator-(Vec3 a) { return {-a.x, -a.y, -a.z}; }
FUSEDNGP_HD Vec3 operator*(Vec3 a, float s) { return {a.x * s, a.y * s, a.z * s}; }
FUSEDNGP_HD Vec3 operator*(float s, Vec3 a) { return {a.x * s, a.y * s, a.z * s}; }
FUSEDNGP_HD Vec3 operator/(Vec3 a, float s) { return {a.x / s, a.y / s, a.z / s}; }
FUSEDNGP_HD Vec3& operator+=(Vec3& a, Vec3 b) { a = a + b; return a; }
FUSEDNGP_HD Vec3& operator-=(Vec3& a, Vec3 b) { a = a - b; return a; }
FUSEDNGP_HD Vec3& operator*=(Vec3& a, float s) { a = a * s; return a; }
FUSEDNGP_HD Vec3 mul(Vec3 a, Vec3 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
FUSEDNGP_HD float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
FUSEDNGP_HD Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
FUSEDNGP_HD float length_squared(Vec3 a) { return dot(a, a); }
FUSEDNGP_HD float length(Vec3 a) { return sqrtf(dot(a, a)); }
FUSEDNGP_HD Vec3 normalize(Vec3 a) {
    float l = length(a);
    return l > 0 ? a / l : Vec3{0, 0, 0};
}
FUSEDNGP_HD Vec3 min(Vec3 a, Vec3 b) { return {fminf(a.x, b.x), fminf(a.y, b.y), fminf(a.z, b.z)}; }
FUSEDNGP_HD Vec3 max(Vec3 a, Vec3 b) { return {fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z)}; }

// Axis-aligned box. An empty box has lo > hi.
struct Box3 {
    Vec3 lo{1e30f, 1e30f, 1e30f};
    Vec3 hi{-1e30f, -1e30f, -1e30f};
    FUSEDNGP_HD void extend(Vec3 p) { lo = min(lo, p); hi = max(hi, p); }
    FUSEDNGP_HD void extend(const Box3& b) { lo = min(lo, b.lo); hi = max(hi, b.hi); }
    FUSEDNGP_HD Vec3 center() const { return (lo + hi) * 0.5f; }
    FUSEDNGP_HD Vec3 extent() const { return hi - lo; }
    FUSEDNGP_HD bool empty() const { return lo.x > hi.x || lo.y > hi.y || lo.z > hi.z; }
};

// The box that holds everything (a crop box that crops nothing).
FUSEDNGP_HD Box3 unbounded_box() {
    Box3 b;
    b.lo = {-1e30f, -1e30f, -1e30f};
    b.hi = {1e30f, 1e30f, 1e30f};
    return b;
}

// The common part of two boxes (empty when they do not overlap).
FUSEDNGP_HD Box3 intersection(const Box3& a, const Box3& b) {
    Box3 r;
    r.lo = max(a.lo, b.lo);
    r.hi = min(a.hi, b.hi);
    return r;
}

// 1/dir with zero components replaced by 1e-30 (so 0 * inf never makes NaN).
FUSEDNGP_HD Vec3 safe_inverse(Vec3 d) {
    return {1.f / (d.x != 0 ? d.x : 1e-30f), 1.f / (d.y != 0 ? d.y : 1e-30f), 1.f / (d.z != 0 ? d.z : 1e-30f)};
}

// Slab test (the renderers, the NeRF marcher): the ray's interval [t0, t1] inside the box, clipped to t >= 0.
// False when the ray misses it (or the box lies behind the origin, or is
// empty: the slabs of an inverted box would give the gap between its faces).
FUSEDNGP_HD bool ray_box_interval(Vec3 origin, Vec3 inv_dir, const Box3& box, float& t0, float& t1) {
    t0 = 0.f;
    t1 = 3.4e38f;
    if (box.empty()) return false;
    for (int a = 0; a < 3; ++a) {
        float ta = (box.lo[a] - origin[a]) * inv_dir[a];
        float tb = (box.hi[a] - origin[a]) * inv_dir[a];
        if (ta > tb) { float s = ta; ta = tb; tb = s; }
        t0 = fmaxf(t0, ta);
        t1 = fminf(t1, tb);
    }
    return t0 <= t1;
}

} // namespace fusedngp
