#include "model/param_transfer.h"

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

} // namespace

TransferReport transfer_params(const ParamSource& old_model, const json& new_encoding_config,
                               const std::vector<NamedTensor>& new_tensors, std::vector<float>& new_params,
                               NewInputs new_inputs) {
    TransferReport report;
    if (old_model.encoding_config == new_encoding_config) {
        report.copied += copy_encoding(old_model, new_tensors, new_params);
        report.encoding_copied = true;
    }
    auto old_layers = network_layers(old_model.tensors);
    auto new_layers = network_layers(new_tensors);
    if (old_layers.empty() || new_layers.empty()) return report;
    // Hidden layers pair up by index; the output layers pair with each other.
    const size_t shared_hidden = std::min(old_layers.size(), new_layers.size()) - 1;
    for (size_t k = 0; k < shared_hidden; ++k) {
        report.copied += copy_overlap(*old_layers[k], old_model.params, *new_layers[k], new_params, new_inputs);
    }
    report.copied += copy_overlap(*old_layers.back(), old_model.params, *new_layers.back(), new_params, new_inputs);
    report.layers_copied = shared_hidden + 1;
    return report;
}

} // namespace fusedngp
