// Loading a config file (tiny-cuda-nn / instant-ngp JSON schema) and filling
// missing top-level sections with built-in defaults. See docs/CONFIG.md.
#pragma once

#include "core/json_fields.h"

#include <string>
#include <vector>

namespace fusedngp {

// The top-level sections every config has after config_with_defaults.
const std::vector<std::string>& config_sections();  // loss, optimizer, encoding, network

// Reads and parses a JSON config. Comments (// and /* */) are allowed.
// Throws InputError naming the file when it cannot be read, and ConfigError
// when it is not valid JSON ("<file>:<line>:<column>: malformed JSON: <reason>")
// or its root is not an object.
json load_config_file(const std::string& path);

// The built-in defaults: the image-fitting config (same content as
// configs/image.json).
json default_config();

// `user` with each missing top-level section taken from default_config().
// Present sections are kept as they are (their fields get each component's
// own defaults later); they must be objects. Other top-level keys (instant-ngp's
// "rgb_network", "dir_encoding", "envmap", ...) are kept and ignored.
json config_with_defaults(const json& user);

} // namespace fusedngp
