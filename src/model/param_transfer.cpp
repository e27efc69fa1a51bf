#include "model/param_transfer.h"

#include "networks/activation.h"

#include <algorithm>

namespace fusedngp {

namespace {

const char* const kLayerPrefix = "network.layers.";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The network's weight tensors in layer order (their names carry the index).
std::vector<const NamedTensor*> network_layers(const std::vector<NamedTensor>& tensors) {
    std::vector<const NamedTensor*> layers;
    for (const auto& t : tensors) {
        if (starts_with(t.name, kLayerPrefix) && t.shape.size() == 2) layers.push_back(&t);
    }
    auto index = [](const NamedTensor* t) { return std::stoul(t->name.substr(std::string(kLayerPrefix).size())); };
    std::sort(layers.begin(), layers.end(), [&](auto* a, auto* b) { return index(a) < index(b); });
    return layers;
}

// The network's activations, with the factory's defaults (networks/factory.cpp).
struct Activations {
    Activation hidden = Activation::ReLU;
    Activation output = Activation::None;
};

Activations activations_of(const json& config) {
    const json net = config.contains("network") ? config.at("network") : json::object();
    Activations a;
    a.hidden = parse_activation(get_string(net, "network", "activation", "ReLU"), "network.activation");
    a.output = parse_activation(get_string(net, "network", "output_activation", "None"), "network.output_activation");
    return a;
}

// Activations for which an identity layer is (nearly) a no-op: see the header.
bool identity_friendly(Activation a) {
    return a == Activation::None || a == Activation::ReLU || a == Activation::LeakyReLU;
}

size_t copy_overlap(const NamedTensor& from, const std::vector<float>& from_params, const NamedTensor& to,
                    std::vector<float>& to_params, NewInputs new_inputs) {
    const size_t rows = std::min(from.shape[0], to.shape[0]);
    const size_t cols = std::min(from.shape[1], to.shape[1]);
    for (size_t r = 0; r < rows; ++r) {
        const float* src = from_params.data() + from.offset + r * from.shape[1];
        float* dst = to_params.data() + to.offset + r * to.shape[1];
        std::copy(src, src + cols, dst);
    }
    if (new_inputs == NewInputs::Zero) {
        for (size_t r = 0; r < to.shape[0]; ++r) {
            float* dst = to_params.data() + to.offset + r * to.shape[1];
            std::fill(dst + cols, dst + to.shape[1], 0.0f);
        }
    }
    return rows * cols;
}

// Row r reads neuron r alone; rows past fan_in keep their fresh init.
void set_identity(const NamedTensor& t, std::vector<float>& params) {
    const size_t fan_in = t.shape[1];
    for (size_t r = 0; r < std::min(t.shape[0], fan_in); ++r) {
        float* row = params.data() + t.offset + r * fan_in;
        std::fill(row, row + fan_in, 0.0f);
        row[r] = 1.0f;
    }
}

size_t copy_encoding(const ParamSource& old_model, const std::vector<NamedTensor>& new_tensors,
                     std::vector<float>& new_params) {
    size_t copied = 0;
    for (const auto& t : new_tensors) {
        if (!starts_with(t.name, "encoding.")) continue;
        auto it = std::find_if(old_model.tensors.begin(), old_model.tensors.end(),
                               [&](const NamedTensor& o) { return o.name == t.name; });
        if (it == old_model.tensors.end() || it->shape != t.shape) continue;
        std::copy_n(old_model.params.begin() + (std::ptrdiff_t)it->offset, t.size(),
                    new_params.begin() + (std::ptrdiff_t)t.offset);
        copied += t.size();
    }
    return copied;
}

// The carried pairs (old layer, new layer): hidden by index, output to output.
std::vector<std::pair<const NamedTensor*, const NamedTensor*>> layer_pairs(
    const std::vector<const NamedTensor*>& old_layers, const std::vector<const NamedTensor*>& new_layers) {
    std::vector<std::pair<const NamedTensor*, const NamedTensor*>> pairs;
    const size_t shared_hidden = std::min(old_layers.size(), new_layers.size()) - 1;
    for (size_t k = 0; k < shared_hidden; ++k) pairs.emplace_back(old_layers[k], new_layers[k]);
    pairs.emplace_back(old_layers.back(), new_layers.back());
    return pairs;
}

// Why the new model does not compute the old function at the switch; empty
// when it does. The first reason found, most basic first.
std::string why_function_changes(const Activations& old_act, const Activations& new_act, bool encoding_copied,
                                 const std::vector<const NamedTensor*>& old_layers,
                                 const std::vector<const NamedTensor*>& new_layers, NewInputs new_inputs) {
    if (!encoding_copied) return "encoding changed";
    if (old_layers.empty() || new_layers.empty()) return "no network layers to carry";
    if (old_act.hidden != new_act.hidden) return "activation changed";
    if (old_act.output != new_act.output) return "output activation changed";
    if (new_layers.size() < old_layers.size()) return "fewer hidden layers";
    for (const auto& [from, to] : layer_pairs(old_layers, new_layers)) {
        if (to->shape[0] < from->shape[0] || to->shape[1] < from->shape[1]) return "narrower network";
        if (to->shape[1] > from->shape[1] && new_inputs == NewInputs::Zero) continue;
        if (to->shape[1] > from->shape[1]) return "new neurons read with fresh weights";
    }
    if (new_layers.size() > old_layers.size()) {
        const Activation a = new_act.hidden;
        if (!identity_friendly(a)) return "a new " + activation_name(a) + " layer cannot be an identity";
        if (a == Activation::LeakyReLU) return "a new LeakyReLU layer shrinks negatives";
        // The first new layer reads the encoding itself when there was no hidden layer.
        if (a == Activation::ReLU && old_layers.size() == 1) return "a new first ReLU layer clips negative encodings";
    }
    return "";
}

} // namespace

TransferReport transfer_params(const ParamSource& old_model, const json& new_config,
                               const std::vector<NamedTensor>& new_tensors, std::vector<float>& new_params,
                               NewInputs new_inputs) {
    TransferReport report;
    if (old_model.config.value("encoding", json()) == new_config.value("encoding", json())) {
        report.copied += copy_encoding(old_model, new_tensors, new_params);
        report.encoding_copied = true;
    }
    const Activations old_act = activations_of(old_model.config), new_act = activations_of(new_config);
    auto old_layers = network_layers(old_model.tensors);
    auto new_layers = network_layers(new_tensors);
    report.why_not = why_function_changes(old_act, new_act, report.encoding_copied, old_layers, new_layers, new_inputs);
    report.function_preserved = report.why_not.empty();
    if (old_layers.empty() || new_layers.empty()) return report;
    for (const auto& [from, to] : layer_pairs(old_layers, new_layers)) {
        report.copied += copy_overlap(*from, old_model.params, *to, new_params, new_inputs);
    }
    report.layers_copied = std::min(old_layers.size(), new_layers.size());
    // New hidden layers: between the last carried hidden layer and the output.
    if (identity_friendly(new_act.hidden)) {
        for (size_t k = old_layers.size() - 1; k + 1 < new_layers.size(); ++k) {
            set_identity(*new_layers[k], new_params);
            ++report.layers_inserted;
        }
    }
    return report;
}

} // namespace fusedngp
