#include "io/atomic_file.h"

#include "core/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fusedngp {
namespace {

std::string os_reason() { return std::strerror(errno); }

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
    throw InputError("cannot write '" + path + "': " + reason);
}

// Flushes a file's data (or a directory's entries) to the disk.
bool fsync_path(const std::string& path, int flags) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::fsync(fd) == 0;
    int saved = errno;
    ::close(fd);
    errno = saved;
    return ok;
}

std::string parent_directory(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

} // namespace

std::string atomic_temp_path(const std::string& path) {
    return path + ".tmp." + std::to_string((long long)::getpid());
}

void write_file_atomically(const std::string& path,
                           const std::function<void(const std::string& tmp_path)>& writer) {
    if (path.empty()) fail(path, "empty file name");
    const std::string tmp = atomic_temp_path(path);
    try {
        writer(tmp);
    } catch (const std::exception& e) {
        std::remove(tmp.c_str());
        fail(path, e.what());
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    if (!fsync_path(tmp, O_RDONLY)) {
        std::string reason = errno == ENOENT ? "the writer did not create the file" : os_reason();
        std::remove(tmp.c_str());
        fail(path, reason);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string reason = os_reason();
        std::remove(tmp.c_str());
        fail(path, reason);
    }
    // Persist the rename itself. Best effort: some filesystems refuse fsync on
    // directories, and the data is already complete under its final name.
    fsync_path(parent_directory(path), O_RDONLY | O_DIRECTORY);
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
    write_file_atomically(path, [&](const std::string& tmp) {
        int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw InputError(os_reason());
        const char* bytes = static_cast<const char*>(data);
        size_t written = 0;
        while (written < size) {
            ssize_t n = ::write(fd, bytes + written, size - written);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                std::string reason = os_reason();
                ::close(fd);
                throw InputError(reason);
            }
            written += (size_t)n;
        }
        if (::close(fd) != 0) throw InputError(os_reason());
    });
}

void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
    write_file_atomically(path, bytes.data(), bytes.size());
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw InputError("cannot read '" + path + "': " + os_reason());
    std::vector<uint8_t> bytes;
    struct stat info {};
    if (::fstat(::fileno(f), &info) == 0 && info.st_size > 0) bytes.reserve((size_t)info.st_size);
    uint8_t chunk[1 << 16];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
    bool failed = std::ferror(f) != 0;
    std::string reason = os_reason();
    std::fclose(f);
    if (failed) throw InputError("cannot read '" + path + "': " + reason);
    return bytes;
}

} // namespace fusedngp
