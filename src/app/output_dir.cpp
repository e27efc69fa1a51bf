#include "app/output_dir.h"

#include "core/errors.h"
#include "io/atomic_file.h"

#include <filesystem>
#include <system_error>
#include <vector>
#include <unistd.h>

namespace fusedngp {

namespace {
std::vector<std::filesystem::path>& created_dirs() {  // deepest last, in creation order
    static std::vector<std::filesystem::path> dirs;
    return dirs;
}
} // namespace

void prepare_output_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // The directories this call creates: `dir` and any missing parents.
    std::vector<fs::path> missing;
    for (fs::path p = fs::absolute(dir, ec); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    fs::create_directories(dir, ec);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) created_dirs().push_back(*it);
    if (ec || !fs::is_directory(dir)) {
        throw InputError(dir + ": cannot create output directory (" +
                         (ec ? ec.message() : std::string("a file with that name exists")) + ")");
    }
    // Temporary files of earlier runs killed mid-write (ours only, see atomic_file.h).
    remove_stale_temp_files(dir);
    // Probe: a real write through the same atomic path the outputs use. Its
    // name has the temporary files' form, so a run killed between the write
    // and the removal leaves nothing the next run does not clean up.
    std::string probe = atomic_temp_path((fs::path(dir) / ".fusedngp_write_test").string());
    try {
        write_file_atomically(probe, "probe", 5);
    } catch (const InputError& e) {
        throw InputError(dir + ": output directory is not writable (" + e.what() + ")");
    }
    fs::remove(probe, ec);
}

void remove_unused_output_dirs() {
    namespace fs = std::filesystem;
    std::error_code ec;
    auto& dirs = created_dirs();
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        if (fs::is_directory(*it, ec) && fs::is_empty(*it, ec)) fs::remove(*it, ec);
    }
    dirs.clear();
}

void prepare_output_file(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path parent = fs::path(path).parent_path();
    prepare_output_dir(parent.empty() ? "." : parent.string());
}

} // namespace fusedngp
