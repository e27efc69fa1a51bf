// libFuzzer target "config": a JSON config (comments allowed) as the CLI
// reads it, then the encoding and network it describes, built through the
// same factories (which validate every field; they allocate no parameters).
// Lines after a line "--set" are KEY=VALUE overrides applied first.
#include "config/config.h"
#include "config/config_override.h"
#include "config/unused_fields.h"
#include "encodings/factory.h"
#include "fuzz_input_file.h"
#include "networks/factory.h"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> sets;
    const size_t split = text.find("\n--set\n");
    if (split != std::string::npos) {
        std::istringstream lines(text.substr(split + 7));
        for (std::string line; std::getline(lines, line);) sets.push_back(line);
        text.resize(split);
    }
    const std::string path = fusedngp::fuzz::write_input(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                                         "config.json");
    fusedngp::fuzz::expect_clean_errors([&] {
        fusedngp::json config = fusedngp::load_config_file(path);
        for (const std::string& s : sets) fusedngp::apply_config_change(config, fusedngp::parse_config_change(s));
        const fusedngp::json full = fusedngp::config_with_defaults(config);
        fusedngp::unused_config_fields(full);
        auto encoding = fusedngp::create_encoding<float>(3, full.at("encoding"));
        fusedngp::create_network<float>(encoding->n_output_dims(), 1, full.at("network"));
    });
    return 0;
}
