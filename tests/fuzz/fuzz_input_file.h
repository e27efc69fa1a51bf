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
#include <set>
#include <string>
#include <unistd.h>

namespace fusedngp::fuzz {

// The files write_input made, removed with their folder when the fuzzer
// exits normally (a crash leaves them, next to its report). Both live on
// the heap, never destroyed, so the exit handler can still read them.
inline std::set<std::string>& written_files() {
    static auto* files = new std::set<std::string>;
    return *files;
}

inline const std::string& scratch_dir();

inline void remove_scratch_dir() {
    for (const std::string& f : written_files()) std::remove(f.c_str());
    rmdir(scratch_dir().c_str());
}

// A folder of this process's own, made once (the fuzzer may run jobs in parallel).
inline const std::string& scratch_dir() {
    static const auto* dir = [] {
        char tmpl[] = "/tmp/fusedngp-fuzz-XXXXXX";
        const char* made = mkdtemp(tmpl);
        if (!made) std::abort();
        written_files();
        std::atexit(remove_scratch_dir);
        return new std::string(made);
    }();
    return *dir;
}

// Writes the input to scratch_dir()/name and returns the path.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
    const std::string path = scratch_dir() + "/" + name;
    written_files().insert(path);
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
