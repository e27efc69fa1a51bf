// libFuzzer target "image": load_image on PNG, JPEG, BMP, TGA and HDR bytes
// (stb_image), the extension chosen by the input's magic bytes as a user's
// file name would.
#include "fuzz_input_file.h"
#include "io/image.h"

#include <cstring>

namespace {

const char* extension_for(const uint8_t* data, size_t size) {
    auto starts = [&](const char* magic) { return size >= std::strlen(magic) && !std::memcmp(data, magic, std::strlen(magic)); };
    if (starts("\x89PNG")) return ".png";
    if (starts("\xFF\xD8")) return ".jpg";
    if (starts("BM")) return ".bmp";
    if (starts("#?")) return ".hdr";
    return ".tga";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fusedngp::fuzz::write_input(data, size, std::string("input") + extension_for(data, size));
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_image(path); });
    return 0;
}
