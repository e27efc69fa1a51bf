// Shared basic types of the CPU reference engine.
#pragma once

#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

// Batch-major, row-major matrix: one row per sample, one column per feature.
// The CPU reference keeps this layout everywhere so that a row is one sample's
// contiguous feature vector (easy to read, easy to compare against the GPU).
template <typename T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// One named tensor inside a component's flat parameter block. Used for
// documentation, weight export and per-row optimizer rules.
struct ParamTensor {
    std::string name;            // e.g. "level03" or "layers.0.weight"
    size_t offset = 0;           // in elements, relative to the component's block
    std::vector<size_t> shape;   // row-major; product == element count
    size_t row_size = 1;         // elements that form one optimizer "row" (grid feature vector)
    size_t size() const {
        size_t n = 1;
        for (size_t s : shape) n *= s;
        return n;
    }
};

} // namespace fusedngp
