// Range checks for numeric command-line values, applied to the text before
// CLI11 converts it: an unsigned option would otherwise read "-3" as
// 2^64 - 3, and a double would take "nan" or "inf". Each failure is CLI11's
// usual one-line error naming the option, exit 2.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace fusedngp {

namespace cli_detail {
inline CLI::Validator number_check(const std::string& what, bool allow_zero) {
    return CLI::Validator(
        [what, allow_zero](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
                return "\"" + text + "\" is not a finite number";
            if (v < 0 || (!allow_zero && v == 0)) return "must be " + what + ", got " + text;
            return std::string();
        },
        allow_zero ? "NUMBER >= 0" : "NUMBER > 0");
}
} // namespace cli_detail

// Finite and >= 0.
inline CLI::Validator non_negative_number() { return cli_detail::number_check(">= 0", true); }
// Finite and > 0.
inline CLI::Validator positive_number() { return cli_detail::number_check("> 0", false); }
// Any finite number.
inline CLI::Validator finite_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end == text.c_str() || *end != '\0' || !std::isfinite(v))
                return "\"" + text + "\" is not a finite number";
            return std::string();
        },
        "NUMBER");
}

} // namespace fusedngp
