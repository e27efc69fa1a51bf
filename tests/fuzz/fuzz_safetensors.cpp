// libFuzzer target "safetensors": load_weights, the reader `fusedngp render`
// and `info` use for exported weights.
#include "fuzz_input_file.h"
#include "persist/weights.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fusedngp::fuzz::write_input(data, size, "weights.safetensors");
    fusedngp::fuzz::expect_clean_errors([&] { fusedngp::load_weights(path); });
    return 0;
}
