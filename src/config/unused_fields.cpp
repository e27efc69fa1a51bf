#include "config/unused_fields.h"

#include <algorithm>
#include <map>
#include <set>

namespace fusedngp {

namespace {

using FieldSet = std::set<std::string>;

// Fields each otype reads (lower-case otype), plus the tiny-cuda-nn Adam
// fields docs/CONFIG.md documents as accepted without effect.
const std::map<std::string, FieldSet>& known_fields() {
    static const std::map<std::string, FieldSet> table = {
        {"identity", {"scale", "offset"}},
        {"frequency", {"n_frequencies"}},
        {"trianglewave", {"n_frequencies"}},
        {"oneblob", {"n_bins"}},
        {"sphericalharmonics", {"degree"}},
        {"grid", {"type", "n_levels", "n_features_per_level", "log2_hashmap_size", "base_resolution",
                  "per_level_scale", "interpolation"}},
        {"composite", {"nested"}},
        {"mlp", {"n_neurons", "n_hidden_layers", "activation", "output_activation"}},
        {"loss", {"huber_delta"}},
        {"adam", {"learning_rate", "beta1", "beta2", "epsilon", "l2_reg", "relative_decay", "absolute_decay",
                  "adabound", "skip_zero_gradient_rows", "per_row_bias_correction"}},
        {"sgd", {"learning_rate", "l2_reg"}},
        {"ema", {"decay", "window_fraction", "update_every", "nested", "full_precision"}},
        {"exponentialdecay", {"decay_start", "decay_interval", "decay_base", "decay_end", "nested"}},
        {"composite_optimizer", {"nested", "groups", "learning_rate_scale"}},
    };
    return table;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return s;
}

// Which table row describes a component of this section and otype.
std::string kind_of(const std::string& section, const std::string& otype) {
    std::string o = lower(otype);
    if (section == "encoding") {
        if (o == "hashgrid" || o == "densegrid" || o == "tiledgrid") return "grid";
        return o;
    }
    if (section == "network") return "mlp";
    if (section == "loss") return "loss";
    if (o == "composite") return "composite_optimizer";
    return o;
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string suggestion(const std::string& key, const FieldSet& known) {
    std::string best;
    size_t best_distance = 4;  // only close matches are worth suggesting
    for (const auto& k : known) {
        size_t d = edit_distance(key, k);
        if (d < best_distance) {
            best_distance = d;
            best = k;
        }
    }
    return best.empty() ? "" : " (did you mean " + best + "?)";
}

void check_component(const json& obj, const std::string& section, const std::string& path, bool in_composite,
                     std::vector<std::string>& out) {
    if (!obj.is_object() || !obj.contains("otype") || !obj["otype"].is_string()) return;
    const std::string otype = obj["otype"].get<std::string>();
    auto it = known_fields().find(kind_of(section, otype));
    if (it == known_fields().end()) return;  // an unknown otype is reported as an error elsewhere
    FieldSet known = it->second;
    known.insert("otype");
    if (in_composite) known.insert(section == "encoding" ? "n_dims_to_encode" : "n_params_to_optimize");
    for (const auto& [key, value] : obj.items()) {
        if (!known.count(key)) {
            out.push_back(join_path(path, key) + " is ignored (not a field fusedngp's " + otype + " reads)" +
                          suggestion(key, known));
        }
    }
    // Nested components: optimizer wrappers and Composite encodings/optimizers.
    if (obj.contains("nested")) {
        const json& nested = obj["nested"];
        const bool composite = lower(otype) == "composite";
        if (nested.is_object()) check_component(nested, section, join_path(path, "nested"), false, out);
        if (nested.is_array()) {
            for (size_t i = 0; i < nested.size(); ++i) {
                check_component(nested[i], section, path + ".nested[" + std::to_string(i) + "]", composite, out);
            }
        }
    }
    if (obj.contains("groups") && obj["groups"].is_object()) {
        for (const auto& [name, group] : obj["groups"].items()) {
            check_component(group, section, join_path(path, "groups." + name), false, out);
        }
    }
}

} // namespace

std::vector<std::string> unused_config_fields(const json& config) {
    std::vector<std::string> out;
    if (!config.is_object()) return out;
    for (const char* section : {"loss", "optimizer", "encoding", "network"}) {
        if (config.contains(section)) check_component(config[section], section, section, false, out);
    }
    return out;
}

} // namespace fusedngp
