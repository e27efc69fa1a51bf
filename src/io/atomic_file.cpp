#include "io/atomic_file.h"

#include "core/errors.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <system_error>

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

constexpr const char* kTempMarker = ".fusedngp-tmp.";

// When this process started (wall clock), taken during static initialisation.
// Linux stamps files from the coarse clock, which lags the precise one by up
// to a scheduler tick: a file written a millisecond after start could read as
// older than a precise start time. Both from the coarse clock, a file this
// process writes is never older than its start.
const timespec kProcessStart = [] {
    timespec now{};
#ifdef CLOCK_REALTIME_COARSE
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
#else
    ::clock_gettime(CLOCK_REALTIME, &now);
#endif
    return now;
}();

bool older_than_process(const struct stat& info) {
    const timespec& m = info.st_mtim;
    return m.tv_sec < kProcessStart.tv_sec || (m.tv_sec == kProcessStart.tv_sec && m.tv_nsec < kProcessStart.tv_nsec);
}

// The process id in a temporary file's name; 0 if the name has not our form.
long long temp_name_pid(const std::string& name) {
    const size_t at = name.rfind(kTempMarker);
    if (at == std::string::npos || at == 0) return 0;
    const std::string digits = name.substr(at + std::strlen(kTempMarker));
    if (digits.empty() || digits.size() > 10) return 0;
    for (char c : digits)
        if (c < '0' || c > '9') return 0;
    return std::atoll(digits.c_str());
}

bool process_is_running(long long pid) {
    if (pid <= 0 || pid > 0x7fffffffLL) return false;
    // EPERM: it exists but belongs to someone else.
    return ::kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

std::string parent_directory(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

} // namespace

std::string atomic_temp_path(const std::string& path) {
    return path + kTempMarker + std::to_string((long long)::getpid());
}

bool is_atomic_temp_name(const std::string& file_name) { return temp_name_pid(file_name) > 0; }

size_t remove_stale_temp_files(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::directory_iterator it(dir.empty() ? "." : dir, ec);
    size_t removed = 0;
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const long long pid = temp_name_pid(name);
        if (pid <= 0 || pid == (long long)::getpid() || process_is_running(pid)) continue;
        struct stat info {};
        const std::string path = it->path().string();
        if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || !older_than_process(info)) continue;
        if (std::remove(path.c_str()) == 0) ++removed;
    }
    return removed;
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
