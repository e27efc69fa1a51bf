#include "config/config.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace fusedngp {

namespace {

struct TextPosition {
    size_t line = 1;
    size_t column = 1;
};

// 1-based line and column of the character at 0-based `index` of `text`.
TextPosition position_of(const std::string& text, size_t index) {
    index = std::min(index, text.size());
    TextPosition pos;
    size_t line_start = 0;
    for (size_t i = 0; i < index; ++i) {
        if (text[i] == '\n') {
            ++pos.line;
            line_start = i + 1;
        }
    }
    pos.column = index - line_start + 1;
    return pos;
}

// nlohmann's message is "[json.exception.parse_error.101] parse error at line
// L, column C: <reason>"; we report our own position, so keep only the reason.
std::string parse_error_reason(const std::string& what) {
    const size_t at = what.find("parse error");
    if (at == std::string::npos) return what;
    const size_t colon = what.find(": ", at);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

std::string read_file_text(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        throw InputError("cannot read config file \"" + path + "\": it is a directory");
    }
    std::ifstream file(path, std::ios::binary);
    if (!file) throw InputError("cannot open config file \"" + path + "\": " + std::strerror(errno));
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (file.bad()) throw InputError("cannot read config file \"" + path + "\": " + std::strerror(errno));
    return text;
}

} // namespace

const std::vector<std::string>& config_sections() {
    static const std::vector<std::string> sections = {"loss", "optimizer", "encoding", "network"};
    return sections;
}

json load_config_file(const std::string& path) {
    const std::string text = read_file_text(path);
    json config;
    try {
        config = json::parse(text, /*callback=*/nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
    } catch (const json::parse_error& e) {
        // e.byte is 1-based: the failing character sits at index byte - 1.
        const TextPosition pos = position_of(text, e.byte > 0 ? e.byte - 1 : 0);
        throw ConfigError("", path + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                                  ": malformed JSON: " + parse_error_reason(e.what()));
    } catch (const json::exception& e) {  // a number too large for a double (found by scripts/fuzz)
        const std::string what = e.what();
        const size_t tag_end = what.find("] ");
        throw ConfigError("", path + ": malformed JSON: " + (tag_end == std::string::npos ? what : what.substr(tag_end + 2)));
    }
    if (!config.is_object()) {
        throw ConfigError("", path + ": the root of a config must be a JSON object, got " +
                                  std::string(config.type_name()));
    }
    return config;
}

json default_config() {
    // Image fitting, as configs/image.json (a test keeps the two identical).
    return json::parse(R"({
        "loss": {"otype": "RelativeL2"},
        "optimizer": {
            "otype": "EMA",
            "decay": 0.99,
            "nested": {
                "otype": "ExponentialDecay",
                "decay_start": 10000,
                "decay_interval": 5000,
                "decay_base": 0.33,
                "nested": {
                    "otype": "Adam",
                    "learning_rate": 1e-2,
                    "beta1": 0.9,
                    "beta2": 0.99,
                    "epsilon": 1e-15,
                    "l2_reg": 1e-6
                }
            }
        },
        "encoding": {
            "otype": "HashGrid",
            "n_levels": 16,
            "n_features_per_level": 2,
            "log2_hashmap_size": 19,
            "base_resolution": 16,
            "per_level_scale": 1.3819
        },
        "network": {
            "otype": "FullyFusedMLP",
            "activation": "ReLU",
            "output_activation": "None",
            "n_neurons": 64,
            "n_hidden_layers": 2
        }
    })");
}

json config_with_defaults(const json& user) {
    require_object(user, "");
    json config = user;
    const json defaults = default_config();
    for (const std::string& section : config_sections()) {
        auto it = user.find(section);
        if (it == user.end()) {
            config[section] = defaults[section];
        } else {
            require_object(*it, section);
        }
    }
    return config;
}

} // namespace fusedngp
