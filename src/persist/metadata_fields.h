// Reading a safetensors file's metadata (string to string) back into typed
// fields, with errors naming the file and the key. Shared by every file kind
// we write: snapshots, NeRF snapshots and NeRF weights.
#pragma once

#include "core/json_fields.h"
#include "io/safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

// The metadata key naming a file's kind and version ("snapshot-v1", ...).
constexpr const char* kFormatKey = "fusedngp.format";

// "[2, 3]": a tensor shape for error messages.
std::string shape_text(const std::vector<size_t>& shape);

// The value of `key`; InputError "<source>: metadata lacks "key"" without it.
std::string required_metadata(const SafetensorsMetadata& meta, const std::string& key, const std::string& source);
// The same as a decimal unsigned integer, or as JSON; InputError otherwise.
uint64_t metadata_u64(const SafetensorsMetadata& meta, const std::string& key, const std::string& source);
json metadata_json(const SafetensorsMetadata& meta, const std::string& key, const std::string& source);
// InputError when `values` (tensor `name` of `source`) holds a NaN or an
// infinity: a corrupt file, or the state of a run that diverged.
void require_finite_tensor(const std::vector<float>& values, const std::string& name, const std::string& source);

} // namespace fusedngp
