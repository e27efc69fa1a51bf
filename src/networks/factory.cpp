#include "networks/factory.h"

#include "networks/activation.h"
#include "networks/mlp.h"

#include <limits>

namespace fusedngp {

// Every tiny-cuda-nn MLP otype maps to the same CPU Mlp (see factory.h).
const std::vector<std::string>& mlp_otypes() {
    static const std::vector<std::string> otypes = {"FullyFusedMLP", "CutlassMLP", "CublasMLP", "MLP", "Auto", "CPU"};
    return otypes;
}

namespace {

constexpr int64_t kMaxHiddenLayers = 1024;
constexpr double kMaxNetworkWeights = 2147483648.0;  // 2^31

} // namespace

template <typename T>
std::unique_ptr<Network<T>> create_network(uint32_t n_input_dims, uint32_t n_output_dims, const json& config,
                                           const std::string& path) {
    const std::string otype = match_choice(get_otype(config, path), mlp_otypes(), join_path(path, "otype"));
    if (n_input_dims == 0) throw ConfigError(path, "the network's input width is 0 (encoding produced no features)");
    if (n_output_dims == 0) throw ConfigError(path, "the network's output width is 0");

    const uint32_t n_neurons = get_size(config, path, "n_neurons", 64);
    const auto n_hidden_layers = (uint32_t)get_int(config, path, "n_hidden_layers", 2, 0, kMaxHiddenLayers);
    // A bound on the weights, so a mistyped width is a config error rather
    // than an allocation failure.
    const double n_weights = n_hidden_layers == 0
                                 ? (double)n_input_dims * n_output_dims
                                 : (double)n_neurons * (n_input_dims + (n_hidden_layers - 1.0) * n_neurons + n_output_dims);
    if (n_weights > kMaxNetworkWeights) {
        throw ConfigError(join_path(path, "n_neurons"),
                          std::to_string(n_neurons) + " neurons x " + std::to_string(n_hidden_layers) +
                              " hidden layers make " + std::to_string((long long)n_weights) +
                              " weights, more than the limit 2^31");
    }
    const Activation activation =
        parse_activation(get_string(config, path, "activation", "ReLU"), join_path(path, "activation"));
    const Activation output_activation =
        parse_activation(get_string(config, path, "output_activation", "None"), join_path(path, "output_activation"));
    return std::make_unique<Mlp<T>>(n_input_dims, n_output_dims, n_neurons, n_hidden_layers, activation,
                                    output_activation, otype);
}

template std::unique_ptr<Network<float>> create_network<float>(uint32_t, uint32_t, const json&, const std::string&);
template std::unique_ptr<Network<double>> create_network<double>(uint32_t, uint32_t, const json&, const std::string&);

} // namespace fusedngp
