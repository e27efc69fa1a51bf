#include "persist/weights.h"

#include "core/errors.h"
#include "persist/metadata_fields.h"

namespace fusedngp {

namespace {
constexpr const char* kWeightsFormat = "weights-v1";

} // namespace

void export_weights(const std::string& path, const ModelDescription& desc, const Model<float>& model,
                    const std::vector<float>& params, TensorDtype dtype) {
    if (params.size() != model.n_params()) throw std::logic_error("export_weights: parameter count mismatch");
    std::vector<SafetensorsTensor> tensors;
    for (const auto& t : model.named_tensors()) {
        SafetensorsTensor st;
        st.name = t.name;
        st.shape = t.shape;
        st.values.assign(params.begin() + (ptrdiff_t)t.offset, params.begin() + (ptrdiff_t)(t.offset + t.size()));
        st.dtype = dtype;
        tensors.push_back(std::move(st));
    }
    SafetensorsMetadata meta;
    meta[kFormatKey] = kWeightsFormat;
    meta["config"] = desc.config.dump();
    meta["mode"] = desc.mode;
    meta["n_input_dims"] = std::to_string(desc.n_input_dims);
    meta["n_output_dims"] = std::to_string(desc.n_output_dims);
    meta["mode_info"] = desc.mode_info.dump();
    meta["encoding"] = model.encoding().describe();
    meta["network"] = model.network().describe();
    write_safetensors(path, tensors, meta);
}

LoadedWeights load_weights(const std::string& path) { return weights_from_contents(read_safetensors(path), path); }

LoadedWeights weights_from_contents(const SafetensorsContents& c, const std::string& path) {
    auto get = [&](const std::string& key) -> const std::string& {
        auto it = c.metadata.find(key);
        if (it == c.metadata.end()) throw InputError(path + ": weight file metadata lacks \"" + key + "\"");
        return it->second;
    };
    if (get(kFormatKey) != kWeightsFormat) {
        throw InputError(path + ": not fusedngp weights (format \"" + get(kFormatKey) + "\")");
    }
    LoadedWeights w;
    try {
        w.desc.config = json::parse(get("config"));
        w.desc.mode_info = json::parse(get("mode_info"));
        w.desc.n_input_dims = (uint32_t)std::stoul(get("n_input_dims"));
        w.desc.n_output_dims = (uint32_t)std::stoul(get("n_output_dims"));
    } catch (const InputError&) {
        throw;
    } catch (const std::exception& e) {
        throw InputError(path + ": weight file metadata is invalid (" + e.what() + ")");
    }
    w.desc.mode = get("mode");
    std::unique_ptr<Model<float>> built;
    try {
        built = std::make_unique<Model<float>>(w.desc.n_input_dims, w.desc.n_output_dims, w.desc.config, 0);
    } catch (const ConfigError& e) {
        throw InputError(path + ": the config stored in the file is invalid: " + e.what());
    }
    const Model<float>& model = *built;
    w.params.assign(model.n_params(), 0.0f);
    for (const auto& t : model.named_tensors()) {
        const SafetensorsTensor* st = c.find(t.name);
        if (!st) throw InputError(path + ": tensor \"" + t.name + "\" is missing");
        if (st->shape != t.shape) {
            throw InputError(path + ": tensor \"" + t.name + "\" has shape " + shape_text(st->shape) +
                             ", the config needs " + shape_text(t.shape));
        }
        std::copy(st->values.begin(), st->values.end(), w.params.begin() + (ptrdiff_t)t.offset);
    }
    return w;
}

} // namespace fusedngp
