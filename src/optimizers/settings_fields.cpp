#include "optimizers/settings_fields.h"

#include <sstream>

namespace fusedngp {

namespace {

std::string describe_value(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

} // namespace

double get_nonnegative(const json& obj, const std::string& path, const std::string& key, double fallback) {
    double v = get_number(obj, path, key, fallback);
    if (v < 0) throw ConfigError(join_path(path, key), "is " + describe_value(v) + ", must be >= 0");
    return v;
}

double get_positive(const json& obj, const std::string& path, const std::string& key, double fallback) {
    double v = get_number(obj, path, key, fallback);
    if (!(v > 0)) throw ConfigError(join_path(path, key), "is " + describe_value(v) + ", must be > 0");
    return v;
}

double get_fraction_below_one(const json& obj, const std::string& path, const std::string& key, double fallback) {
    double v = get_number(obj, path, key, fallback);
    if (v < 0 || v >= 1) throw ConfigError(join_path(path, key), "is " + describe_value(v) + ", allowed range is [0, 1)");
    return v;
}

double get_fraction(const json& obj, const std::string& path, const std::string& key, double fallback) {
    double v = get_number(obj, path, key, fallback);
    if (v < 0 || v > 1) throw ConfigError(join_path(path, key), "is " + describe_value(v) + ", allowed range is [0, 1]");
    return v;
}

const json& get_nested_config(const json& config, const std::string& path) {
    auto it = config.find("nested");
    const std::string nested_path = join_path(path, "nested");
    if (it == config.end()) {
        throw ConfigError(nested_path, "missing (this optimizer wraps another one, e.g. \"nested\": {\"otype\": \"Adam\"})");
    }
    require_object(*it, nested_path);
    return *it;
}

} // namespace fusedngp
