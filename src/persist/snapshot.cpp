#include "persist/snapshot.h"

#include "core/errors.h"
#include "io/safetensors.h"

namespace fusedngp {

namespace {

constexpr const char* kFormatKey = "fusedngp.format";
constexpr const char* kSnapshotFormat = "snapshot-v1";

const std::string& require_key(const SafetensorsMetadata& meta, const std::string& key, const std::string& path) {
    auto it = meta.find(key);
    if (it == meta.end()) throw InputError(path + ": snapshot metadata lacks \"" + key + "\"");
    return it->second;
}

uint64_t parse_u64(const std::string& text, const std::string& key, const std::string& path) {
    try {
        size_t used = 0;
        unsigned long long v = std::stoull(text, &used);
        if (used != text.size()) throw std::invalid_argument(text);
        return v;
    } catch (const std::exception&) {
        throw InputError(path + ": snapshot metadata \"" + key + "\" is not an unsigned integer: \"" + text + "\"");
    }
}

json parse_json_value(const std::string& text, const std::string& key, const std::string& path) {
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        throw InputError(path + ": snapshot metadata \"" + key + "\" is not valid JSON");
    }
}

} // namespace

void save_snapshot(const std::string& path, const Snapshot& s) {
    std::vector<SafetensorsTensor> tensors;
    tensors.push_back({"params", {s.state.params.size()}, s.state.params, TensorDtype::F32});
    for (const auto& [name, values] : s.state.optimizer_buffers) {
        tensors.push_back({"optimizer." + name, {values.size()}, values, TensorDtype::F32});
    }
    SafetensorsMetadata meta;
    meta[kFormatKey] = kSnapshotFormat;
    meta["config"] = s.config.dump();
    meta["mode"] = s.mode;
    meta["data"] = s.data_path;
    meta["n_input_dims"] = std::to_string(s.n_input_dims);
    meta["n_output_dims"] = std::to_string(s.n_output_dims);
    meta["mode_info"] = s.mode_info.dump();
    meta["backend"] = s.backend;
    meta["step"] = std::to_string(s.state.step);
    meta["rng_state"] = std::to_string(s.state.rng_state);
    write_safetensors(path, tensors, meta);
}

Snapshot load_snapshot(const std::string& path) { return snapshot_from_contents(read_safetensors(path), path); }

Snapshot snapshot_from_contents(const SafetensorsContents& c, const std::string& path) {
    auto fmt = c.metadata.find(kFormatKey);
    if (fmt == c.metadata.end() || fmt->second != kSnapshotFormat) {
        throw InputError(path + ": not a fusedngp snapshot (metadata \"" + std::string(kFormatKey) + "\" is " +
                         (fmt == c.metadata.end() ? std::string("missing") : "\"" + fmt->second + "\"") +
                         ", expected \"" + kSnapshotFormat + "\")");
    }
    Snapshot s;
    s.config = parse_json_value(require_key(c.metadata, "config", path), "config", path);
    s.mode = require_key(c.metadata, "mode", path);
    s.data_path = require_key(c.metadata, "data", path);
    s.n_input_dims = (uint32_t)parse_u64(require_key(c.metadata, "n_input_dims", path), "n_input_dims", path);
    s.n_output_dims = (uint32_t)parse_u64(require_key(c.metadata, "n_output_dims", path), "n_output_dims", path);
    s.mode_info = parse_json_value(require_key(c.metadata, "mode_info", path), "mode_info", path);
    s.backend = require_key(c.metadata, "backend", path);
    s.state.step = parse_u64(require_key(c.metadata, "step", path), "step", path);
    s.state.rng_state = parse_u64(require_key(c.metadata, "rng_state", path), "rng_state", path);
    const SafetensorsTensor* params = c.find("params");
    if (!params) throw InputError(path + ": snapshot has no \"params\" tensor");
    s.state.params = params->values;
    const std::string prefix = "optimizer.";
    for (const auto& t : c.tensors) {
        if (t.name.compare(0, prefix.size(), prefix) == 0) {
            s.state.optimizer_buffers.emplace_back(t.name.substr(prefix.size()), t.values);
        }
    }
    return s;
}

bool is_snapshot_file(const std::string& path) {
    SafetensorsContents c = read_safetensors(path);
    auto fmt = c.metadata.find(kFormatKey);
    return fmt != c.metadata.end() && fmt->second == kSnapshotFormat;
}

} // namespace fusedngp
