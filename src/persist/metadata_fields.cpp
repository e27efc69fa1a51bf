#include "persist/metadata_fields.h"

#include "core/errors.h"

#include <stdexcept>

namespace fusedngp {

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

} // namespace fusedngp
