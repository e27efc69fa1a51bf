// libFuzzer target "snapshot": the image/SDF snapshot reader and the NeRF one,
// both on every input.
#include "fuzz_input_file.h"
#include "persist/nerf_snapshot.h"
#include "persist/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fusedngp::fuzz::write_input(data, size, "snapshot.fusedngp");
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_snapshot(path); });
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_nerf_snapshot(path); });
    return 0;
}
