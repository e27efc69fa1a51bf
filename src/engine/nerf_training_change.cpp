#include "engine/nerf_training_change.h"

#include "engine/nerf_training_factory.h"
#include "nerf/nerf_trainer.h"

#include <algorithm>

namespace fusedngp {

namespace {

using Buffers = std::vector<std::pair<std::string, std::vector<float>>>;

const std::vector<float>* find_buffer(const Buffers& buffers, const std::string& name) {
    for (const auto& [n, values] : buffers)
        if (n == name) return &values;
    return nullptr;
}

bool same_layout(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].offset != b[i].offset || a[i].shape != b[i].shape) return false;
    return true;
}

bool is_encoding_tensor(const NamedTensor& t) { return t.name.rfind("encoding.", 0) == 0; }

// The encoding's entries of a parameter-shaped buffer (tensors matched by name).
void copy_encoding_entries(const std::vector<NamedTensor>& from_tensors, const std::vector<float>& from,
                           const std::vector<NamedTensor>& to_tensors, std::vector<float>& to) {
    for (const NamedTensor& t : to_tensors) {
        if (!is_encoding_tensor(t)) continue;
        auto it = std::find_if(from_tensors.begin(), from_tensors.end(), [&](const NamedTensor& f) {
            return f.name == t.name && f.size() == t.size();
        });
        if (it == from_tensors.end()) continue;
        std::copy_n(from.begin() + (std::ptrdiff_t)it->offset, t.size(), to.begin() + (std::ptrdiff_t)t.offset);
    }
}

struct ModelSide {
    json config;  // {"encoding", "network"}
    std::vector<NamedTensor> tensors;
    size_t n_params = 0;
};

ModelSide side(const Model<float>& model, json config) {
    return {std::move(config), model.named_tensors(), model.n_params()};
}

// The new model's parameters and optimizer buffers (holding its fresh state)
// from the old model's.
TransferReport carry_model(const ModelSide& from, const std::vector<float>& from_params, const Buffers& from_optimizer,
                           const ModelSide& to, std::vector<float>& to_params, Buffers& to_optimizer) {
    const TransferReport report = transfer_params({from.config, from.tensors, from_params}, to.config, to.tensors,
                                                  to_params, NewInputs::Zero);
    const bool unchanged = same_layout(from.tensors, to.tensors);
    for (auto& [name, values] : to_optimizer) {
        const std::vector<float>* old = find_buffer(from_optimizer, name);
        if (!old) continue;
        if (unchanged && old->size() == values.size()) {
            values = *old;
        } else if (values.size() != to.n_params || old->size() != from.n_params) {
            // Per-row counts of the grid's rows: theirs while the grid is.
            if (report.encoding_copied && old->size() == values.size()) values = *old;
        } else if (name == "average") {
            // The EMA average is weights: reshaped as the weights are.
            transfer_params({from.config, from.tensors, *old}, to.config, to.tensors, values, NewInputs::Zero);
        } else if (report.encoding_copied) {
            copy_encoding_entries(from.tensors, *old, to.tensors, values);
        }
    }
    return report;
}

} // namespace

NerfTrainingChange change_nerf_training(nerf::NerfTraining& from, const json& from_config, const std::string& backend,
                                        const NerfDataset& dataset, const json& config,
                                        const nerf::NerfTrainerSettings& settings) {
    NerfTrainingChange change;
    change.training = create_nerf_training(backend, dataset, config, settings);
    nerf::NerfTraining& to = *change.training;
    const nerf::NerfTrainingState old = from.save_state();
    nerf::NerfTrainingState next = to.save_state();
    change.density = carry_model(side(from.density_model(), nerf::nerf_density_model_config(from_config)),
                                 old.density_params, old.density_optimizer,
                                 side(to.density_model(), nerf::nerf_density_model_config(config)),
                                 next.density_params, next.density_optimizer);
    change.colour = carry_model(side(from.colour_model(), nerf::nerf_colour_model_config(from_config)),
                                old.colour_params, old.colour_optimizer,
                                side(to.colour_model(), nerf::nerf_colour_model_config(config)), next.colour_params,
                                next.colour_optimizer);
    next.step = old.step;
    next.rng_state = old.rng_state;
    next.grid_density = old.grid_density;
    next.grid_bits = old.grid_bits;
    to.load_state(next);
    return change;
}

} // namespace fusedngp
