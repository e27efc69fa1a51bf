// create_gpu_optimizer (declared in gpu_optimizer.h).
#include "gpu/components/gpu_adam.h"
#include "gpu/components/gpu_composite_optimizer.h"
#include "gpu/components/gpu_ema.h"
#include "gpu/components/gpu_exponential_decay.h"
#include "gpu/components/gpu_optimizer.h"
#include "gpu/components/gpu_sgd.h"
#include "optimizers/factory.h"
#include "optimizers/settings_fields.h"

namespace fusedngp::gpu {

namespace {

std::unique_ptr<GpuOptimizer> build_composite(const json& config, const std::string& path, bool inside_decay);

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
    if (equals_ignore_case(otype, "Composite")) return build_composite(config, path, inside_decay);
    throw ConfigError(join_path(path, "otype"), "\"" + otype +
                                                    "\" is not implemented by the GPU optimizers (the CPU engine "
                                                    "supports it); GPU: Adam, SGD, EMA, ExponentialDecay, Composite");
}

// The CPU's create_composite_optimizer has checked the form and the fields.
std::unique_ptr<GpuOptimizer> build_composite(const json& config, const std::string& path, bool inside_decay) {
    std::vector<GpuCompositePart> parts;
    const bool by_slice = config.contains("nested");
    if (!by_slice) {
        const std::string groups_path = join_path(path, "groups");
        const json& groups = config.at("groups");
        for (auto it = groups.begin(); it != groups.end(); ++it) {
            GpuCompositePart part;
            part.label = "groups." + it.key();
            part.slot.group_name = it.key();
            part.optimizer = build(it.value(), join_path(groups_path, it.key()), inside_decay);
            parts.push_back(std::move(part));
        }
    } else {
        const json& nested = config.at("nested");
        for (size_t i = 0; i < nested.size(); ++i) {
            const std::string entry_path = join_path(path, "nested") + "[" + std::to_string(i) + "]";
            GpuCompositePart part;
            part.label = "nested." + std::to_string(i);
            if (nested[i].contains("n_params_to_optimize")) {
                part.slot.slice_size = (size_t)get_int(nested[i], entry_path, "n_params_to_optimize", 0, 0);
            }
            part.optimizer = build(nested[i], entry_path, inside_decay);
            parts.push_back(std::move(part));
        }
    }
    const double scale = get_nonnegative(config, path, "learning_rate_scale", 1.0);
    return std::make_unique<GpuComposite>(std::move(parts), by_slice, scale, path);
}

} // namespace

std::unique_ptr<GpuOptimizer> create_gpu_optimizer(const json& config, const std::string& path) {
    create_optimizer<float>(config, path);  // the CPU's validation and errors, for every field
    return build(config, path, false);
}

} // namespace fusedngp::gpu
