// Bit-for-bit equality of two host vectors (the tests that hold one GPU path
// to another's exact bits: the fused update against the per-group launches).
#pragma once

#include <cstring>
#include <vector>

namespace fusedngp::test {

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

} // namespace fusedngp::test
