// Config fields that nothing reads. Unknown fields are accepted (configs
// written for tiny-cuda-nn or instant-ngp must load unchanged), but a typo
// such as "log2_hash_map_size" would otherwise silently fall back to the
// default. These are warnings, never errors.
#pragma once

#include "core/json_fields.h"

#include <string>
#include <vector>

namespace fusedngp {

// One message per unused field inside the loss, optimizer, encoding and
// network sections (nested optimizers and Composite entries included), e.g.
// "encoding.log2_hash_map_size is not a HashGrid field (did you mean
// log2_hashmap_size?)". Top-level extra sections are not reported.
std::vector<std::string> unused_config_fields(const json& config);

} // namespace fusedngp
