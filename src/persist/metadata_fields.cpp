#include "persist/metadata_fields.h"

#include "core/errors.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fusedngp {

std::string shape_text(const std::vector<size_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string required_metadata(const SafetensorsMetadata& meta, const std::string& key, const std::string& source) {
    auto it = meta.find(key);
    if (it == meta.end()) throw InputError(source + ": metadata lacks \"" + key + "\"");
    return it->second;
}

uint64_t metadata_u64(const SafetensorsMetadata& meta, const std::string& key, const std::string& source) {
    const std::string text = required_metadata(meta, key, source);
    try {
        size_t used = 0;
        const unsigned long long v = std::stoull(text, &used);
        if (used != text.size() || text.empty() || text[0] == '-') throw std::invalid_argument(text);
        return v;
    } catch (const std::exception&) {
        throw InputError(source + ": metadata \"" + key + "\" is not an unsigned integer: \"" + text + "\"");
    }
}

json metadata_json(const SafetensorsMetadata& meta, const std::string& key, const std::string& source) {
    const std::string text = required_metadata(meta, key, source);
    try {
        return json::parse(text);
    } catch (const json::exception&) {
        throw InputError(source + ": metadata \"" + key + "\" is not valid JSON");
    }
}

void require_finite_tensor(const std::vector<float>& values, const std::string& name, const std::string& source) {
    const size_t non_finite =
        (size_t)std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (non_finite == 0) return;
    throw InputError(source + ": \"" + name + "\" holds " + std::to_string(non_finite) + " of " +
                     std::to_string(values.size()) +
                     " values that are not finite numbers (a corrupt file, or a run that diverged)");
}

} // namespace fusedngp
