// Small shared helpers for the encoding implementations (not part of the
// public interface).
#pragma once

#include "core/common.h"
#include "core/json_fields.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace fusedngp {

// A width mismatch here is a bug in the caller (the model wires widths from
// the config), not a user error, so it is std::invalid_argument.
template <typename T>
void require_input_width(const Matrix<T>& in, uint32_t n_input_dims, const std::string& who) {
    if ((uint64_t)in.cols() != n_input_dims) {
        throw std::invalid_argument(who + ": input has " + std::to_string(in.cols()) + " columns, expected " +
                                    std::to_string(n_input_dims));
    }
}

template <typename T>
void require_same_shape(const Matrix<T>& in, const Matrix<T>& dout, uint32_t n_output_dims, const std::string& who) {
    if (dout.rows() != in.rows() || (uint64_t)dout.cols() != n_output_dims) {
        throw std::invalid_argument(who + ": dL/dout is " + std::to_string(dout.rows()) + "x" +
                                    std::to_string(dout.cols()) + ", expected " + std::to_string(in.rows()) + "x" +
                                    std::to_string(n_output_dims));
    }
}

// Throws ConfigError when an encoding that accepts only `allowed` input widths
// is given `given` dims. Names `path.n_dims_to_encode` when the config sets
// it (a Composite entry), else `path.otype`.
void require_encoding_input_dims(const json& config, const std::string& path, const std::string& otype,
                                 uint32_t given, const std::vector<uint32_t>& allowed);

// Formats a double without trailing zeros, for describe().
std::string format_number(double v);

} // namespace fusedngp
