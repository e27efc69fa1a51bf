#include "encodings/encoding_checks.h"

#include <sstream>

namespace fusedngp {

void require_encoding_input_dims(const json& config, const std::string& path, const std::string& otype,
                                 uint32_t given, const std::vector<uint32_t>& allowed) {
    for (uint32_t a : allowed) {
        if (a == given) return;
    }
    std::string expected;
    for (size_t i = 0; i < allowed.size(); ++i) {
        expected += (i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", ")) + std::to_string(allowed[i]);
    }
    const bool in_composite = config.is_object() && config.contains("n_dims_to_encode");
    throw ConfigError(join_path(path, in_composite ? "n_dims_to_encode" : "otype"),
                      otype + " encodes " + expected + " input dims, but " + std::to_string(given) +
                          (given == 1 ? " is" : " are") + " given");
}

std::string format_number(double v) {
    std::ostringstream s;
    s.precision(6);
    s << v;
    return s.str();
}

} // namespace fusedngp
