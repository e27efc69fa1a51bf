// create_gpu_optimizer (declared in gpu_optimizer.h).
#include "gpu/components/gpu_adam.h"
#include "gpu/components/gpu_ema.h"
#include "gpu/components/gpu_exponential_decay.h"
#include "gpu/components/gpu_optimizer.h"
#include "gpu/components/gpu_sgd.h"
#include "optimizers/factory.h"
#include "optimizers/settings_fields.h"

namespace fusedngp::gpu {

namespace {

// `config` has passed the CPU factory, so only the GPU's own limits are
// checked here. `inside_decay`: an ExponentialDecay encloses this config.
std::unique_ptr<GpuOptimizer> build(const json& config, const std::string& path, bool inside_decay) {
    const std::string otype = get_otype(config, path);
    auto nested = [&](bool decay) {
        return build(get_nested_config(config, path), join_path(path, "nested"), decay);
    };
    if (equals_ignore_case(otype, "Adam")) return std::make_unique<GpuAdam>(parse_adam_settings(config, path));
    if (equals_ignore_case(otype, "SGD")) return std::make_unique<GpuSgd>(parse_sgd_settings(config, path));
    if (equals_ignore_case(otype, "EMA")) {
        return std::make_unique<GpuEma>(parse_ema_settings(config, path), nested(inside_decay));
    }
    if (equals_ignore_case(otype, "ExponentialDecay")) {
        if (inside_decay) {
            throw ConfigError(join_path(path, "otype"),
                              "an ExponentialDecay nested inside another ExponentialDecay is not supported by the "
                              "GPU optimizers (the CPU engine supports it)");
        }
        return std::make_unique<GpuExponentialDecay>(parse_exponential_decay_settings(config, path), nested(true));
    }
    throw ConfigError(join_path(path, "otype"), "\"" + otype +
                                                    "\" is not implemented by the GPU optimizers (the CPU engine "
                                                    "supports it); GPU: Adam, SGD, EMA, ExponentialDecay");
}

} // namespace

std::unique_ptr<GpuOptimizer> create_gpu_optimizer(const json& config, const std::string& path) {
    create_optimizer<float>(config, path);  // the CPU's validation and errors, for every field
    return build(config, path, false);
}

} // namespace fusedngp::gpu
