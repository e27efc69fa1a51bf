// Pi and the degree/radian conversions shared by the host code (the camera,
// the encodings, the scene loaders).
#pragma once

namespace fusedngp {

constexpr double kPi = 3.14159265358979323846;
constexpr float kPiFloat = 3.14159265358979f;

inline float radians_from_degrees(float degrees) { return degrees * (kPiFloat / 180.f); }
inline float degrees_from_radians(float radians) { return radians * (180.f / kPiFloat); }

} // namespace fusedngp
