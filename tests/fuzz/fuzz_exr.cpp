// libFuzzer target "exr": load_image on OpenEXR bytes (tinyexr).
#include "fuzz_input_file.h"
#include "io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fusedngp::fuzz::write_input(data, size, "input.exr");
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_image(path); });
    return 0;
}
