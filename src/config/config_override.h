// Live config changes: "KEY=VALUE" edits of a config by JSON path, as the
// desktop app applies them from its controls and from `--set KEY=VALUE@FRAME`.
//
// KEY is a config JSON path (network.n_neurons, encoding.n_levels, ...) or
// `batch_size` (not part of the config: the app's batch). VALUE is parsed as
// JSON when it is a number/bool/null, else taken as a string (so
// network.otype=CublasMLP needs no quotes). `optimizer.learning_rate` sets the
// innermost optimizer's rate (EMA/ExponentialDecay wrap Adam in "nested").
#pragma once

#include "core/json_fields.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

struct ConfigChange {
    std::string key;
    json value;
};

struct ScheduledChange {
    ConfigChange change;
    uint64_t frame = 0;
};

// How a change takes effect on a training run.
enum class ChangeEffect {
    Rebuild,       // a new model, weights carried over where shapes overlap
    LearningRate,  // the optimizer's rate, nothing rebuilt
    BatchSize,     // the batch per step, nothing rebuilt
};

// Keys the app can change live.
const std::vector<std::string>& settable_keys();

// "KEY=VALUE". Throws InputError naming the problem (no '=', unknown key).
ConfigChange parse_config_change(const std::string& text);
// "KEY=VALUE@FRAME". Throws InputError.
ScheduledChange parse_scheduled_change(const std::string& text);

ChangeEffect change_effect(const std::string& key);

// Writes the change into `config` (batch_size is ignored: not a config field).
void apply_config_change(json& config, const ConfigChange& change);

// The value at a key, or null when absent (batch_size: null).
json config_value(const json& config, const std::string& key);

// "128", "CublasMLP", "0.01"
std::string value_text(const json& value);

} // namespace fusedngp
