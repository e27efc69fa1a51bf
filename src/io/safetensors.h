// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//   8 bytes   little-endian uint64 N = header length
//   N bytes   UTF-8 JSON object: {"<name>": {"dtype": "F32"|"F16"|"U8", "shape": [..],
//             "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value"}}
//   rest      tensor data, little-endian, offsets relative to the data start
// See docs/SAFETENSORS.md for the exact rules we write and check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fusedngp {

// U8 holds small integers (0..255, e.g. bitfields); in memory they are floats
// like every other tensor, and writing a U8 value that is not one throws.
enum class TensorDtype { F32, F16, U8 };

// "F32" / "F16" / "U8", as in the header.
const char* to_string(TensorDtype dtype);

struct SafetensorsTensor {
    std::string name;
    std::vector<size_t> shape;   // row-major; [] is a scalar (one element)
    std::vector<float> values;   // shape's product elements, row-major
    TensorDtype dtype = TensorDtype::F32;  // how it is (or was) stored in the file

    size_t element_count() const;
};

using SafetensorsMetadata = std::map<std::string, std::string>;

struct SafetensorsContents {
    std::vector<SafetensorsTensor> tensors;  // in file (data offset) order
    SafetensorsMetadata metadata;

    // nullptr if absent.
    const SafetensorsTensor* find(const std::string& name) const;
};

// The file image: tensors laid out back to back in the given order, F16
// values rounded to nearest even, header padded with spaces to a multiple of 8
// bytes, "__metadata__" written only if non-empty. Throws std::invalid_argument
// for caller bugs: empty, duplicate or "__metadata__" names, values.size() not
// matching the shape.
std::vector<uint8_t> encode_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                        const SafetensorsMetadata& metadata = {});

// Parses and validates a file image; `source` names it in InputError messages.
// Rejects: fewer than 8 bytes, header length beyond the file or over 100 MB,
// header not a JSON object, entries without a valid dtype (F32/F16/U8 only) /
// shape / data_offsets, byte counts that disagree with shape x dtype, offsets
// out of range, overlapping or non-contiguous data, bytes after the last tensor,
// non-string metadata values.
SafetensorsContents decode_safetensors(const std::vector<uint8_t>& bytes, const std::string& source);

// encode_safetensors + atomic write (InputError naming the path on failure).
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const SafetensorsMetadata& metadata = {});

// read + decode_safetensors (InputError naming the path).
SafetensorsContents read_safetensors(const std::string& path);

} // namespace fusedngp
