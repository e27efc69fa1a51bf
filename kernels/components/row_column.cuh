// The row and column of an element-wise kernel's item, for the component
// kernels and the NeRF kernels alike.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// Item i of a matrix of n = rows * cols items walked row by row: its row and
// column. The division is 32-bit whenever n fits: a 64-bit one by a runtime
// value is a long software sequence, and it made the element-wise copies
// several times slower than their memory traffic (NeRF's colour input, 2^18
// x 16 identity columns: 30 us a backward on an H100).
struct RowColumn {
    size_t row;
    uint32_t column;
};

__device__ inline RowColumn row_column(size_t i, uint32_t cols, size_t n) {
    if (n <= UINT32_MAX) {
        const uint32_t row = (uint32_t)i / cols;
        return {row, (uint32_t)i - row * cols};
    }
    return {i / cols, (uint32_t)(i % cols)};
}

} // namespace fusedngp::gpu
