// libFuzzer target "mesh": load_mesh_from_bytes on OBJ, PLY (ASCII and
// binary), STL (ASCII and binary) and OFF, the format chosen from the
// input's first bytes as a user's file name would.
#include "fuzz_input_file.h"
#include "geometry/mesh_io.h"

#include <cstring>
#include <vector>

namespace {

const char* name_for(const uint8_t* data, size_t size) {
    auto starts = [&](const char* magic) { return size >= std::strlen(magic) && !std::memcmp(data, magic, std::strlen(magic)); };
    if (starts("ply")) return "input.ply";
    if (starts("OFF") || starts("COFF") || starts("NOFF")) return "input.off";
    if (starts("solid")) return "input.stl";
    for (size_t i = 0; i < size && i < 80; ++i)
        if (data[i] == 0) return "input.stl";  // a binary STL header
    return "input.obj";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<uint8_t> bytes(data, data + size);
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_mesh_from_bytes(bytes, name_for(data, size)); });
    return 0;
}
