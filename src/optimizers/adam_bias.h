// Adam's bias correction sqrt(1 - beta2^t) / (1 - beta1^t) as a table over
// t = 1, 2, ..., for the optimizers that count steps per row (see adam.h).
// The CPU and GPU Adam read the same doubles, so a row's step size,
// (float)(learning_rate * table[t - 1]), is the same on both.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace fusedngp {

// Entries stop where both powers are below 2^-60 (the correction is 1.0 in
// double from there on; ~4.1 k entries for beta2 = 0.99, ~42 k for 0.999),
// and at kMaxAdamBiasEntries at most: a row that has taken more steps uses
// the last entry, within beta2^(2^20) of 1 (3e-5 for beta2 = 0.99999).
constexpr size_t kMaxAdamBiasEntries = size_t(1) << 20;

inline std::vector<double> adam_bias_corrections(double beta1, double beta2) {
    std::vector<double> table;
    for (size_t t = 1; t <= kMaxAdamBiasEntries; ++t) {
        const double p1 = std::pow(beta1, (double)t), p2 = std::pow(beta2, (double)t);
        table.push_back(std::sqrt(1.0 - p2) / (1.0 - p1));
        if (p1 < 0x1.0p-60 && p2 < 0x1.0p-60) break;
    }
    return table;
}

// The row's step count after one more update, saturating at the table's end
// (counts are stored as floats: exact up to 2^24, far above the table size).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline float next_row_step(float steps, unsigned int table_size) {
    return steps < (float)table_size ? steps + 1.f : (float)table_size;
}

} // namespace fusedngp
