// Helpers shared by the libFuzzer targets (scripts/fuzz): the loaders read
// paths, so each input is written to a file in a private temporary folder
// first. Expected failures are the loaders' own InputError / ConfigError (a
// clear one-line message); anything else escaping a loader — another
// exception, a crash, a sanitizer report, a hang — is a finding.
#pragma once

#include "core/errors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace fusedngp::fuzz {

inline const std::string& scratch_dir();

// The folder is this process's own: at a normal exit it goes with whatever
// the loaders wrote into it (a crash leaves it, next to its report).
inline void remove_scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(scratch_dir(), ignored);
}

// A folder of this process's own, made once (the fuzzer may run jobs in
// parallel); on the heap, never destroyed, so the exit handler can read it.
inline const std::string& scratch_dir() {
    static const auto* dir = [] {
        char tmpl[] = "/tmp/fusedngp-fuzz-XXXXXX";
        const char* made = mkdtemp(tmpl);
        if (!made) std::abort();
        std::atexit(remove_scratch_dir);
        return new std::string(made);
    }();
    return *dir;
}

// Writes the input to scratch_dir()/name and returns the path.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
    const std::string path = scratch_dir() + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

// Runs `load`; the loaders' own errors are the expected outcome of bad input.
template <typename F>
void expect_clean_errors(F&& load) {
    try {
        load();
    } catch (const InputError&) {
    } catch (const ConfigError&) {
    }
}

} // namespace fusedngp::fuzz
