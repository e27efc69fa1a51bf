// IEEE 754 binary16 ("half") <-> binary32 conversion, in portable integer code
// (no compiler _Float16 or F16C needed), for F16 tensors in safetensors files.
#pragma once

#include <cstdint>

namespace fusedngp {

// Rounds to nearest, ties to even. Overflow (|x| >= 65520) gives +-infinity,
// tiny values become half subnormals or +-0, NaN stays NaN (quiet, keeping the
// top payload bits), the sign of zero is kept.
uint16_t float_to_half(float value);

// Exact (every half is representable as a float).
float half_to_float(uint16_t half);

// The bit pattern of a float and back (memcpy, no aliasing tricks).
uint32_t float_bits(float f);
float bits_float(uint32_t u);

} // namespace fusedngp
