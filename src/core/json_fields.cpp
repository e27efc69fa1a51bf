#include "core/json_fields.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace fusedngp {

std::string json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

bool equals_ignore_case(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i])) return false;
    }
    return true;
}

void require_object(const json& obj, const std::string& path) {
    if (!obj.is_object()) {
        throw ConfigError(path.empty() ? "(root)" : path, "expected a JSON object, got " + std::string(obj.type_name()));
    }
}

std::string get_otype(const json& obj, const std::string& path) {
    require_object(obj, path);
    auto it = obj.find("otype");
    if (it == obj.end()) throw ConfigError(join_path(path, "otype"), "missing (every component needs an \"otype\")");
    if (!it->is_string()) throw ConfigError(join_path(path, "otype"), "must be a string");
    return it->get<std::string>();
}

double get_number(const json& obj, const std::string& path, const std::string& key, double fallback) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_number()) throw ConfigError(join_path(path, key), "must be a number, got " + std::string(it->type_name()));
    double v = it->get<double>();
    if (!std::isfinite(v)) throw ConfigError(join_path(path, key), "must be finite");
    return v;
}

static ConfigError out_of_range(const std::string& path, const std::string& key, const std::string& value,
                                int64_t min_value, int64_t max_value) {
    std::ostringstream msg;
    msg << "is " << value << ", allowed range is [" << min_value << ", ";
    if (max_value == INT64_MAX) msg << "inf)"; else msg << max_value << "]";
    return ConfigError(join_path(path, key), msg.str());
}

int64_t get_int(const json& obj, const std::string& path, const std::string& key, int64_t fallback,
                int64_t min_value, int64_t max_value) {
    auto it = obj.find(key);
    int64_t v = fallback;
    if (it != obj.end()) {
        if (it->is_number_unsigned() && it->get<uint64_t>() > (uint64_t)INT64_MAX) {
            throw out_of_range(path, key, json_text(*it), min_value, max_value);  // would wrap negative
        } else if (it->is_number_integer()) {
            v = it->get<int64_t>();
        } else if (it->is_number_float() && std::floor(it->get<double>()) == it->get<double>()) {
            // A whole number written as a float (1e300) may lie outside int64: converting it would be
            // undefined behaviour, so it is reported as out of range as written.
            double d = it->get<double>();
            if (d < -0x1p63 || d >= 0x1p63) throw out_of_range(path, key, json_text(*it), min_value, max_value);
            v = (int64_t)d;
        } else {
            throw ConfigError(join_path(path, key), "must be an integer, got " + json_text(*it));
        }
    }
    if (v < min_value || v > max_value) throw out_of_range(path, key, std::to_string(v), min_value, max_value);
    return v;
}

uint32_t get_size(const json& obj, const std::string& path, const std::string& key, uint32_t fallback) {
    auto it = obj.find(key);
    if (it != obj.end() && it->is_number() && it->get<double>() <= 0) {
        throw ConfigError(join_path(path, key), "must be a positive integer, got " + json_text(*it));
    }
    return (uint32_t)get_int(obj, path, key, fallback, 1, UINT32_MAX);
}

bool get_bool(const json& obj, const std::string& path, const std::string& key, bool fallback) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_boolean()) throw ConfigError(join_path(path, key), "must be true or false, got " + json_text(*it));
    return it->get<bool>();
}

std::string get_string(const json& obj, const std::string& path, const std::string& key, const std::string& fallback) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_string()) throw ConfigError(join_path(path, key), "must be a string, got " + json_text(*it));
    return it->get<std::string>();
}

std::string match_choice(const std::string& value, const std::vector<std::string>& allowed, const std::string& path) {
    for (const auto& a : allowed) {
        if (equals_ignore_case(a, value)) return a;
    }
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
    throw ConfigError(path, "unknown value \"" + value + "\"; allowed: " + list);
}

} // namespace fusedngp
