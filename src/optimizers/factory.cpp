#include "optimizers/factory.h"

#include "optimizers/adam.h"
#include "optimizers/composite.h"
#include "optimizers/ema.h"
#include "optimizers/exponential_decay.h"
#include "optimizers/settings_fields.h"
#include "optimizers/sgd.h"

#include <vector>

namespace fusedngp {

namespace {

const std::vector<std::string> kSupportedOtypes = {"Adam", "SGD", "EMA", "ExponentialDecay", "Composite"};

// tiny-cuda-nn optimizers we know of but do not implement: a clearer message
// than "unknown value".
const std::vector<std::string> kUnsupportedTcnnOtypes = {"Novograd", "Shampoo", "Average", "Batched",
                                                         "Lookahead", "Lion"};

std::string supported_list() {
    std::string list;
    for (size_t i = 0; i < kSupportedOtypes.size(); ++i) list += (i ? ", " : "") + kSupportedOtypes[i];
    return list;
}

std::string canonical_otype(const json& config, const std::string& path) {
    const std::string otype = get_otype(config, path);
    for (const std::string& known : kUnsupportedTcnnOtypes) {
        if (equals_ignore_case(otype, known)) {
            throw ConfigError(join_path(path, "otype"), "tiny-cuda-nn's \"" + known +
                                                            "\" optimizer is not supported by fusedngp; supported: " +
                                                            supported_list());
        }
    }
    // "Ema" (instant-ngp's spelling) matches "EMA" because otypes ignore case.
    return match_choice(otype, kSupportedOtypes, join_path(path, "otype"));
}

template <typename T>
std::unique_ptr<Optimizer<T>> create_nested(const json& config, const std::string& path) {
    return create_optimizer<T>(get_nested_config(config, path), join_path(path, "nested"));
}

} // namespace

template <typename T>
std::unique_ptr<Optimizer<T>> create_optimizer(const json& config, const std::string& path) {
    const std::string otype = canonical_otype(config, path);
    if (otype == "Adam") return std::make_unique<AdamOptimizer<T>>(parse_adam_settings(config, path));
    if (otype == "SGD") return std::make_unique<SgdOptimizer<T>>(parse_sgd_settings(config, path));
    if (otype == "EMA") {
        return std::make_unique<EmaOptimizer<T>>(parse_ema_settings(config, path), create_nested<T>(config, path));
    }
    if (otype == "ExponentialDecay") {
        return std::make_unique<ExponentialDecayOptimizer<T>>(parse_exponential_decay_settings(config, path),
                                                              create_nested<T>(config, path));
    }
    return create_composite_optimizer<T>(config, path);
}

template std::unique_ptr<Optimizer<float>> create_optimizer<float>(const json&, const std::string&);
template std::unique_ptr<Optimizer<double>> create_optimizer<double>(const json&, const std::string&);

} // namespace fusedngp
