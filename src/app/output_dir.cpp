#include "app/output_dir.h"

#include "core/errors.h"
#include "io/atomic_file.h"

#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace fusedngp {

void prepare_output_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
        throw InputError(dir + ": cannot create output directory (" +
                         (ec ? ec.message() : std::string("a file with that name exists")) + ")");
    }
    // Probe: a real write through the same atomic path the outputs use.
    std::string probe = (fs::path(dir) / (".fusedngp_write_test." + std::to_string(getpid()))).string();
    try {
        write_file_atomically(probe, "probe", 5);
    } catch (const InputError& e) {
        throw InputError(dir + ": output directory is not writable (" + e.what() + ")");
    }
    fs::remove(probe, ec);
}

void prepare_output_file(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path parent = fs::path(path).parent_path();
    prepare_output_dir(parent.empty() ? "." : parent.string());
}

} // namespace fusedngp
