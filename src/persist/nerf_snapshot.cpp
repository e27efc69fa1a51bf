#include "persist/nerf_snapshot.h"

#include "core/errors.h"
#include "nerf/ray_marching_math.h"
#include "persist/metadata_fields.h"

namespace fusedngp {

namespace {

const SafetensorsTensor& required_tensor(const SafetensorsContents& c, const std::string& name, size_t count,
                                         const std::string& source) {
    const SafetensorsTensor* t = c.find(name);
    if (!t) throw InputError(source + ": NeRF snapshot has no \"" + name + "\" tensor");
    if (t->values.size() != count) {
        throw InputError(source + ": tensor \"" + name + "\" has " + std::to_string(t->values.size()) +
                         " values, expected " + std::to_string(count));
    }
    return *t;
}

// "<model>.optimizer.<name>" tensors in file order (the order they were saved).
std::vector<std::pair<std::string, std::vector<float>>> optimizer_tensors(const SafetensorsContents& c,
                                                                           const std::string& model) {
    const std::string prefix = model + ".optimizer.";
    std::vector<std::pair<std::string, std::vector<float>>> out;
    for (const auto& t : c.tensors) {
        if (t.name.compare(0, prefix.size(), prefix) == 0) out.emplace_back(t.name.substr(prefix.size()), t.values);
    }
    return out;
}

void add_optimizer_tensors(std::vector<SafetensorsTensor>& tensors, const std::string& model,
                           const std::vector<std::pair<std::string, std::vector<float>>>& buffers) {
    for (const auto& [name, values] : buffers) {
        tensors.push_back({model + ".optimizer." + name, {values.size()}, values, TensorDtype::F32});
    }
}

} // namespace

size_t occupancy_cell_count(float aabb_scale) {
    return (size_t)nerf::cascades_for_aabb_scale((int)aabb_scale) * nerf::kGridCells;
}

std::vector<float> bytes_as_values(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::vector<uint8_t> values_as_bytes(const std::vector<float>& values) {
    std::vector<uint8_t> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) out[i] = (uint8_t)values[i];  // U8 tensors hold 0..255 integers
    return out;
}

void save_nerf_snapshot(const std::string& path, const NerfSnapshot& s) {
    const nerf::NerfTrainingState& st = s.state;
    std::vector<SafetensorsTensor> tensors;
    tensors.push_back({"density.params", {st.density_params.size()}, st.density_params, TensorDtype::F32});
    tensors.push_back({"colour.params", {st.colour_params.size()}, st.colour_params, TensorDtype::F32});
    add_optimizer_tensors(tensors, "density", st.density_optimizer);
    add_optimizer_tensors(tensors, "colour", st.colour_optimizer);
    tensors.push_back({"occupancy.density", {st.grid_density.size()}, st.grid_density, TensorDtype::F32});
    tensors.push_back({"occupancy.bits", {st.grid_bits.size()}, bytes_as_values(st.grid_bits), TensorDtype::U8});
    SafetensorsMetadata meta;
    meta[kFormatKey] = kNerfSnapshotFormat;
    meta["mode"] = "nerf";
    meta["config"] = s.config.dump();
    meta["data"] = s.data_path;
    meta["backend"] = s.backend;
    meta["step"] = std::to_string(st.step);
    meta["rng_state"] = std::to_string(st.rng_state);
    meta["rays_per_batch"] = std::to_string(s.rays_per_batch);
    meta["seed"] = std::to_string(s.seed);
    meta["scene"] = nerf_scene_to_json(s.scene).dump();
    write_safetensors(path, tensors, meta);
}

NerfSnapshot load_nerf_snapshot(const std::string& path) {
    return nerf_snapshot_from_contents(read_safetensors(path), path);
}

NerfSnapshot nerf_snapshot_from_contents(const SafetensorsContents& c, const std::string& source) {
    auto fmt = c.metadata.find(kFormatKey);
    if (fmt == c.metadata.end() || fmt->second != kNerfSnapshotFormat) {
        const std::string mode = c.metadata.count("mode") ? c.metadata.at("mode") : std::string("unknown");
        throw InputError(source + ": not a NeRF snapshot (format " +
                         (fmt == c.metadata.end() ? std::string("missing") : "\"" + fmt->second + "\"") +
                         ", mode \"" + mode + "\"; expected a snapshot written by `train` in NeRF mode)");
    }
    NerfSnapshot s;
    s.config = metadata_json(c.metadata, "config", source);
    if (!s.config.is_object()) throw InputError(source + ": metadata \"config\" is not a JSON object");
    s.data_path = required_metadata(c.metadata, "data", source);
    s.backend = required_metadata(c.metadata, "backend", source);
    s.rays_per_batch = (uint32_t)metadata_u64(c.metadata, "rays_per_batch", source);
    if (s.rays_per_batch == 0) throw InputError(source + ": metadata \"rays_per_batch\" must be at least 1");
    s.seed = metadata_u64(c.metadata, "seed", source);
    s.scene = nerf_scene_from_json(metadata_json(c.metadata, "scene", source), source);
    nerf::NerfTrainingState& st = s.state;
    st.step = metadata_u64(c.metadata, "step", source);
    st.rng_state = metadata_u64(c.metadata, "rng_state", source);
    const SafetensorsTensor* density = c.find("density.params");
    const SafetensorsTensor* colour = c.find("colour.params");
    if (!density || !colour) throw InputError(source + ": NeRF snapshot lacks the \"density.params\" or \"colour.params\" tensor");
    require_finite_tensor(density->values, "density.params", source);
    require_finite_tensor(colour->values, "colour.params", source);
    st.density_params = density->values;
    st.colour_params = colour->values;
    st.density_optimizer = optimizer_tensors(c, "density");
    st.colour_optimizer = optimizer_tensors(c, "colour");
    const size_t cells = occupancy_cell_count(s.scene.aabb_scale);
    st.grid_density = required_tensor(c, "occupancy.density", cells, source).values;
    require_finite_tensor(st.grid_density, "occupancy.density", source);
    // A pointer, not a reference: GCC 13 cannot tell that it points into `c`.
    const SafetensorsTensor* bits_tensor = &required_tensor(c, "occupancy.bits", cells / 8, source);
    const SafetensorsTensor& bits = *bits_tensor;
    if (bits.dtype != TensorDtype::U8) throw InputError(source + ": tensor \"occupancy.bits\" must be U8");
    st.grid_bits = values_as_bytes(bits.values);
    return s;
}

} // namespace fusedngp
