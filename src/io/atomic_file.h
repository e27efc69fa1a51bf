// Writing files so that readers never see a partial file.
//
// Everything we save (images, snapshots, weights) goes through here: the data
// is written to `<path>.fusedngp-tmp.<pid>` in the same directory (so the final
// rename stays on one filesystem and is atomic), fsync'ed, then renamed over
// `path`. After a crash or an error `path` is either the old file or the
// complete new one. An error removes the temporary file; a process killed
// mid-write (SIGKILL, power loss) cannot, so the next run that writes into the
// folder removes it (remove_stale_temp_files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusedngp {

// Calls `writer(tmp_path)`, which must create and fill tmp_path, then makes it
// durable and renames it to `path`. Any failure (an exception from writer,
// writer not creating the file, an OS error) removes the temporary file and
// throws InputError naming `path` and the reason (e.g. "Not a directory").
// Two threads of one process must not write the same path at the same time
// (they would share the temporary name).
void write_file_atomically(const std::string& path,
                           const std::function<void(const std::string& tmp_path)>& writer);

// Writes `size` bytes atomically, as above.
void write_file_atomically(const std::string& path, const void* data, size_t size);
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes);

// Reads a whole file. Throws InputError naming the file and the OS reason.
std::vector<uint8_t> read_file_bytes(const std::string& path);

// The temporary name write_file_atomically uses for `path` in this process.
std::string atomic_temp_path(const std::string& path);

// Whether a file name (no directory) has atomic_temp_path's form for some
// process: `<name>.fusedngp-tmp.<digits>`.
bool is_atomic_temp_name(const std::string& file_name);

// Removes the temporary files that processes killed mid-write left in `dir`:
// regular files whose name has atomic_temp_path's form, whose process id is
// not a running process and which were last modified before this process
// started. Files of running writers and every other name are left alone.
// Best effort (errors are ignored); returns the number of files removed.
size_t remove_stale_temp_files(const std::string& dir);

} // namespace fusedngp
