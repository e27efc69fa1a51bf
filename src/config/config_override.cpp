#include "config/config_override.h"

#include "core/errors.h"

#include <algorithm>

namespace fusedngp {

namespace {

// The innermost optimizer object: EMA and ExponentialDecay wrap it in "nested".
json& innermost_optimizer(json& config) {
    json* opt = &config["optimizer"];
    while (opt->is_object() && opt->contains("nested") && (*opt)["nested"].is_object()) opt = &(*opt)["nested"];
    return *opt;
}

const json* innermost_optimizer(const json& config) {
    if (!config.contains("optimizer")) return nullptr;
    const json* opt = &config["optimizer"];
    while (opt->is_object() && opt->contains("nested") && (*opt)["nested"].is_object()) opt = &(*opt)["nested"];
    return opt;
}

json parse_value(const std::string& text) {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_number() || parsed.is_boolean()) return parsed;
    if (parsed.is_string()) return parsed;  // written with quotes
    json raw(text);
    try {
        (void)raw.dump();  // nlohmann keeps raw bytes but refuses to write invalid UTF-8: check now
    } catch (const json::type_error&) {
        throw InputError("--set value \"" + json_text(raw) + "\" is not valid UTF-8");
    }
    return raw;
}

std::string allowed_keys_text() {
    std::string text;
    for (const auto& k : settable_keys()) text += (text.empty() ? "" : ", ") + k;
    return text;
}

} // namespace

const std::vector<std::string>& settable_keys() {
    static const std::vector<std::string> keys = {
        "network.otype", "network.n_neurons", "network.n_hidden_layers", "network.activation",
        "network.output_activation", "encoding.otype", "encoding.n_levels", "encoding.n_features_per_level",
        "encoding.log2_hashmap_size", "encoding.base_resolution", "encoding.per_level_scale",
        "encoding.n_frequencies", "encoding.interpolation", "loss.otype", "optimizer.learning_rate",
        "batch_size", "rgb_network.otype", "rgb_network.n_neurons", "rgb_network.n_hidden_layers"};
    return keys;
}

ConfigChange parse_config_change(const std::string& text) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
        throw InputError("--set \"" + text + "\": expected KEY=VALUE@FRAME, e.g. network.n_neurons=128@50");
    }
    ConfigChange change{text.substr(0, eq), parse_value(text.substr(eq + 1))};
    const auto& keys = settable_keys();
    if (std::find(keys.begin(), keys.end(), change.key) == keys.end()) {
        throw InputError("--set \"" + text + "\": unknown key \"" + change.key + "\"; allowed: " + allowed_keys_text());
    }
    return change;
}

ScheduledChange parse_scheduled_change(const std::string& text) {
    auto at = text.rfind('@');
    if (at == std::string::npos) {
        throw InputError("--set \"" + text + "\": missing @FRAME, expected KEY=VALUE@FRAME, e.g. network.n_neurons=128@50");
    }
    const std::string frame_text = text.substr(at + 1);
    if (frame_text.empty() || frame_text.size() > 12 ||
        !std::all_of(frame_text.begin(), frame_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw InputError("--set \"" + text + "\": FRAME must be a non-negative integer, got \"" + frame_text + "\"");
    }
    ScheduledChange s;
    s.change = parse_config_change(text.substr(0, at));
    s.frame = std::stoull(frame_text);
    return s;
}

ChangeEffect change_effect(const std::string& key) {
    if (key == "optimizer.learning_rate") return ChangeEffect::LearningRate;
    if (key == "batch_size") return ChangeEffect::BatchSize;
    return ChangeEffect::Rebuild;
}

void apply_config_change(json& config, const ConfigChange& change) {
    if (change.key == "batch_size") return;
    if (change.key == "optimizer.learning_rate") {
        innermost_optimizer(config)["learning_rate"] = change.value;
        return;
    }
    auto dot = change.key.find('.');
    config[change.key.substr(0, dot)][change.key.substr(dot + 1)] = change.value;
}

json config_value(const json& config, const std::string& key) {
    if (key == "batch_size") return nullptr;
    if (key == "optimizer.learning_rate") {
        const json* opt = innermost_optimizer(config);
        return opt && opt->contains("learning_rate") ? (*opt)["learning_rate"] : json(nullptr);
    }
    auto dot = key.find('.');
    const std::string section = key.substr(0, dot), field = key.substr(dot + 1);
    if (!config.contains(section) || !config[section].contains(field)) return nullptr;
    return config[section][field];
}

std::string value_text(const json& value) { return value.is_string() ? value.get<std::string>() : json_text(value); }

} // namespace fusedngp
