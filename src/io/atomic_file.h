// Writing files so that readers never see a partial file.
//
// Everything we save (images, snapshots, weights) goes through here: the data
// is written to `<path>.tmp.<pid>` in the same directory (so the final rename
// stays on one filesystem and is atomic), fsync'ed, then renamed over `path`.
// After a crash or an error `path` is either the old file or the complete new
// one, and the temporary file is removed.
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

} // namespace fusedngp
