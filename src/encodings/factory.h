// Builds an encoding from its JSON config (tiny-cuda-nn schema).
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>

namespace fusedngp {

// `n_input_dims` is the width of the data fed to the encoding. Throws
// ConfigError naming `path.<field>` for any bad or unsupported value,
// including an otype that does not accept n_input_dims.
template <typename T>
std::unique_ptr<Encoding<T>> create_encoding(uint32_t n_input_dims, const json& config,
                                             const std::string& path = "encoding");

} // namespace fusedngp
