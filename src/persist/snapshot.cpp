#include "persist/snapshot.h"

#include "core/errors.h"
#include "io/safetensors.h"
#include "persist/metadata_fields.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

namespace {

constexpr const char* kSnapshotFormat = "snapshot-v1";

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
    s.config = metadata_json(c.metadata, "config", path);
    s.mode = required_metadata(c.metadata, "mode", path);
    s.data_path = required_metadata(c.metadata, "data", path);
    s.n_input_dims = (uint32_t)metadata_u64(c.metadata, "n_input_dims", path);
    s.n_output_dims = (uint32_t)metadata_u64(c.metadata, "n_output_dims", path);
    s.mode_info = metadata_json(c.metadata, "mode_info", path);
    s.backend = required_metadata(c.metadata, "backend", path);
    s.state.step = metadata_u64(c.metadata, "step", path);
    s.state.rng_state = metadata_u64(c.metadata, "rng_state", path);
    const SafetensorsTensor* params = c.find("params");
    if (!params) throw InputError(path + ": snapshot has no \"params\" tensor");
    require_finite_tensor(params->values, "params", path);
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
