#include "persist/nerf_weights.h"

#include "core/errors.h"
#include "nerf/ray_marching_math.h"
#include "persist/metadata_fields.h"
#include "persist/nerf_snapshot.h"

namespace fusedngp {

namespace {

void add_model_tensors(std::vector<SafetensorsTensor>& tensors, const std::string& prefix, const Model<float>& model,
                       const std::vector<float>& params, TensorDtype dtype) {
    if (params.size() != model.n_params()) throw std::logic_error("export_nerf_weights: parameter count mismatch");
    for (const auto& t : model.named_tensors()) {
        SafetensorsTensor st;
        st.name = prefix + "." + t.name;
        st.shape = t.shape;
        st.values.assign(params.begin() + (ptrdiff_t)t.offset, params.begin() + (ptrdiff_t)(t.offset + t.size()));
        st.dtype = dtype;
        tensors.push_back(std::move(st));
    }
}

const SafetensorsTensor& grid_tensor(const SafetensorsContents& c, const std::string& name,
                                     const std::vector<size_t>& shape, const std::string& source) {
    const SafetensorsTensor* t = c.find(name);
    if (!t) throw InputError(source + ": tensor \"" + name + "\" is missing");
    if (t->shape != shape) {
        throw InputError(source + ": tensor \"" + name + "\" has shape " + shape_text(t->shape) + ", the scene needs " +
                         shape_text(shape));
    }
    return *t;
}

} // namespace

void export_nerf_weights(const std::string& path, const json& config, const NerfScene& scene,
                         const nerf::NerfTraining& model, TensorDtype dtype) {
    std::vector<SafetensorsTensor> tensors;
    add_model_tensors(tensors, "density", model.density_model(), model.density_inference_params(), dtype);
    add_model_tensors(tensors, "colour", model.colour_model(), model.colour_inference_params(), dtype);
    const nerf::OccupancyGrid grid = model.occupancy_grid();
    const size_t n = (size_t)grid.n_cascades();
    // Densities stay F32 whatever the dtype: trunc_exp reaches e^15, beyond F16's range.
    tensors.push_back({"occupancy.density", {n, nerf::kGridCells}, grid.density(), TensorDtype::F32});
    tensors.push_back({"occupancy.bits", {n, nerf::kGridCells / 8}, bytes_as_values(grid.bits()), TensorDtype::U8});
    SafetensorsMetadata meta;
    meta[kFormatKey] = kNerfWeightsFormat;
    meta["mode"] = "nerf";
    meta["config"] = config.dump();
    meta["scene"] = nerf_scene_to_json(scene).dump();
    meta["density.encoding"] = model.density_model().encoding().describe();
    meta["density.network"] = model.density_model().network().describe();
    meta["colour.encoding"] = model.colour_model().encoding().describe();
    meta["colour.network"] = model.colour_model().network().describe();
    write_safetensors(path, tensors, meta);
}

NerfWeightsHeader nerf_weights_header(const SafetensorsContents& c, const std::string& source) {
    const std::string format = required_metadata(c.metadata, kFormatKey, source);
    if (format != kNerfWeightsFormat) {
        throw InputError(source + ": not NeRF weights (format \"" + format + "\", expected \"" + kNerfWeightsFormat + "\")");
    }
    NerfWeightsHeader h;
    h.config = metadata_json(c.metadata, "config", source);
    h.scene = nerf_scene_from_json(metadata_json(c.metadata, "scene", source), source);
    if (!h.config.is_object()) throw InputError(source + ": metadata \"config\" is not a JSON object");
    return h;
}

std::vector<float> nerf_model_params(const SafetensorsContents& c, const Model<float>& model, const std::string& prefix,
                                     const std::string& source) {
    std::vector<float> params(model.n_params(), 0.0f);
    for (const auto& t : model.named_tensors()) {
        const std::string name = prefix + "." + t.name;
        const SafetensorsTensor* st = c.find(name);
        if (!st) throw InputError(source + ": tensor \"" + name + "\" is missing");
        if (st->shape != t.shape) {
            throw InputError(source + ": tensor \"" + name + "\" has shape " + shape_text(st->shape) +
                             ", the config needs " + shape_text(t.shape));
        }
        std::copy(st->values.begin(), st->values.end(), params.begin() + (ptrdiff_t)t.offset);
    }
    return params;
}

void nerf_occupancy_tensors(const SafetensorsContents& c, const NerfScene& scene, const std::string& source,
                            std::vector<float>& density, std::vector<uint8_t>& bits) {
    const size_t n = (size_t)nerf::cascades_for_aabb_scale((int)scene.aabb_scale);
    density = grid_tensor(c, "occupancy.density", {n, nerf::kGridCells}, source).values;
    // A pointer, not a reference: GCC 13 cannot tell that it points into `c`.
    const SafetensorsTensor* bits_tensor = &grid_tensor(c, "occupancy.bits", {n, nerf::kGridCells / 8}, source);
    const SafetensorsTensor& b = *bits_tensor;
    if (b.dtype != TensorDtype::U8) throw InputError(source + ": tensor \"occupancy.bits\" must be U8");
    bits = values_as_bytes(b.values);
}

bool is_nerf_model_file(const SafetensorsContents& c) {
    auto it = c.metadata.find(kFormatKey);
    return it != c.metadata.end() && (it->second == kNerfSnapshotFormat || it->second == kNerfWeightsFormat);
}

} // namespace fusedngp
