// Error types. Every user-facing failure is one of these, so the CLI can print
// a one-line message and pick the exit code (2 for bad input, 1 for bugs).
#pragma once

#include <stdexcept>
#include <string>

namespace fusedngp {

// A bad configuration value. `path` is the JSON path of the field
// (e.g. "encoding.n_features_per_level"); the message names the allowed values.
class ConfigError : public std::runtime_error {
public:
    ConfigError(const std::string& path, const std::string& message)
        : std::runtime_error(path.empty() ? message : path + ": " + message), path_(path) {}
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// Bad user input that is not a config field: a file that cannot be read,
// a corrupt snapshot, an image with no pixels. The message names the file.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace fusedngp
