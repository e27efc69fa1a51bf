// Views of batch-major fp32 device matrices: row i (one sample) starts at
// data + i * stride. A stride larger than the row width lets a component read
// or write a column slice of a wider matrix in place (Composite encodings
// write each nested encoding's outputs straight into their columns).
// Plain structs: usable from host code and kernels alike.
#pragma once

#include <cstdint>

namespace fusedngp::gpu {

struct DeviceRows {
    float* data = nullptr;
    uint32_t stride = 0;  // floats between consecutive rows
};

struct ConstDeviceRows {
    const float* data = nullptr;
    uint32_t stride = 0;
};

// A dense [batch][cols] matrix.
inline DeviceRows rows(float* data, uint32_t cols) { return {data, cols}; }
inline ConstDeviceRows const_rows(const float* data, uint32_t cols) { return {data, cols}; }

} // namespace fusedngp::gpu
