// Reading config fields with errors that name the field and the allowed values.
#pragma once

#include "core/errors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

using json = nlohmann::json;

// "encoding" + "n_levels" -> "encoding.n_levels"
std::string join_path(const std::string& path, const std::string& key);
// A value as JSON text for a message; bytes that are not UTF-8 become U+FFFD
// (json::dump() would throw on them).
std::string json_text(const json& value);

// Case-insensitive comparison, as tiny-cuda-nn matches otype names.
bool equals_ignore_case(const std::string& a, const std::string& b);

// The object's "otype" as written. Errors if missing or not a string.
std::string get_otype(const json& obj, const std::string& path);

// Typed getters with a default. They throw ConfigError naming `path.key` when
// the value has the wrong type or is out of range.
double get_number(const json& obj, const std::string& path, const std::string& key, double fallback);
// Integer >= min_value (and <= max_value).
int64_t get_int(const json& obj, const std::string& path, const std::string& key, int64_t fallback,
                int64_t min_value, int64_t max_value = INT64_MAX);
// Strictly positive integer (sizes).
uint32_t get_size(const json& obj, const std::string& path, const std::string& key, uint32_t fallback);
bool get_bool(const json& obj, const std::string& path, const std::string& key, bool fallback);
std::string get_string(const json& obj, const std::string& path, const std::string& key, const std::string& fallback);

// Picks the entry of `allowed` that equals `value` ignoring case, or throws
// ConfigError listing the allowed values.
std::string match_choice(const std::string& value, const std::vector<std::string>& allowed,
                         const std::string& path);

// Requires obj to be a JSON object.
void require_object(const json& obj, const std::string& path);

} // namespace fusedngp
