#include "optimizers/state_matching.h"

#include "core/errors.h"

#include <algorithm>

namespace fusedngp {

bool optional_state_buffer(const std::string& name) {
    const std::string key = "row_steps";
    if (name == key) return true;
    return name.size() > key.size() && name.compare(name.size() - key.size() - 1, std::string::npos, "." + key) == 0;
}

std::vector<const std::vector<float>*> match_state_buffers(const std::vector<StateBufferShape>& expected,
                                                           const SavedStateBuffers& saved, const std::string& what) {
    std::vector<const std::vector<float>*> out;
    for (const StateBufferShape& b : expected) {
        auto it = std::find_if(saved.begin(), saved.end(), [&](const auto& kv) { return kv.first == b.name; });
        if (it == saved.end()) {
            if (!optional_state_buffer(b.name)) throw InputError(what + " lacks optimizer state \"" + b.name + "\"");
            out.push_back(nullptr);
            continue;
        }
        if (it->second.size() != b.size) {
            throw InputError(what + " optimizer state \"" + b.name + "\" has " + std::to_string(it->second.size()) +
                             " values, expected " + std::to_string(b.size));
        }
        out.push_back(&it->second);
    }
    for (const auto& kv : saved) {
        auto known = std::find_if(expected.begin(), expected.end(), [&](const auto& b) { return b.name == kv.first; });
        if (known == expected.end()) {
            throw InputError(what + " holds optimizer state \"" + kv.first + "\" that this optimizer does not have");
        }
    }
    return out;
}

} // namespace fusedngp
