// libFuzzer target "transforms": a NeRF scene's transforms.json (both
// dialects) through load_nerf_dataset. Its image files do not exist, so a
// well-formed input ends in "no images" (InputError) after every field has
// been parsed and checked.
#include "fuzz_input_file.h"
#include "nerf/nerf_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fusedngp::fuzz::write_input(data, size, "transforms.json");
    std::vector<std::string> warnings;
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_nerf_dataset(path, {}, &warnings); });
    return 0;
}
