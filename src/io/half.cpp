#include "io/half.h"

#include <cstring>

namespace fusedngp {

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
}

float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
}

namespace {

// value / 2^shift rounded to nearest, ties to even (shift >= 1).
uint32_t shift_right_round_even(uint32_t value, int shift) {
    const uint32_t kept = value >> shift;
    const uint32_t remainder = value & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (kept & 1u))) return kept + 1u;
    return kept;
}

} // namespace

uint16_t float_to_half(float value) {
    const uint32_t bits = float_bits(value);
    const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    const int exponent = (int)((bits >> 23) & 0xffu);
    const uint32_t mantissa = bits & 0x7fffffu;

    if (exponent == 0xff) {  // infinity or NaN
        if (mantissa == 0) return sign | 0x7c00u;
        return (uint16_t)(sign | 0x7e00u | (mantissa >> 13));  // force quiet so it stays NaN
    }
    const int unbiased = exponent - 127;
    if (unbiased >= 16) return sign | 0x7c00u;  // >= 2^16: beyond the largest half even after rounding
    if (unbiased >= -14) {
        // Normal half: 10 of the 23 mantissa bits survive. Building exponent and
        // mantissa as one integer lets a rounding carry step into the exponent
        // (and up to infinity, 0x7c00) correctly.
        const uint32_t combined = ((uint32_t)(unbiased + 15) << 23) | mantissa;
        return (uint16_t)(sign | shift_right_round_even(combined, 13));
    }
    // Subnormal half (units of 2^-24) or zero. The float is (1.m) * 2^unbiased
    // = significand * 2^(unbiased-23); in half units that is significand >> shift.
    const int shift = -unbiased - 1;  // 14 .. for unbiased -15 ..
    if (shift > 24) return sign;      // below half the smallest subnormal (also float subnormals)
    const uint32_t significand = mantissa | 0x800000u;
    return (uint16_t)(sign | shift_right_round_even(significand, shift));
}

float half_to_float(uint16_t half) {
    const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
    const int exponent = (half >> 10) & 0x1f;
    const uint32_t mantissa = half & 0x3ffu;
    if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24, exact in float.
        const float magnitude = (float)mantissa * 0x1.0p-24f;
        return sign ? -magnitude : magnitude;
    }
    return bits_float(sign | ((uint32_t)(exponent - 15 + 127) << 23) | (mantissa << 13));
}

} // namespace fusedngp
