// cuBLASLt is opened on first use (gpu/cublaslt_library.h) rather than linked;
// this needs no device, only the library the build found.
#include <gtest/gtest.h>

#ifdef FUSEDNGP_HAVE_CUDA
#include "gpu/cublaslt_library.h"

#include <string>

namespace fusedngp::gpu {
namespace {

TEST(CublasLtLibrary, OpensAndResolvesEveryEntryPoint) {
    const CublasLtApi& api = cublaslt();
    for (const void* fn : {(const void*)api.create, (const void*)api.destroy, (const void*)api.status_string,
                           (const void*)api.matmul, (const void*)api.algo_get_heuristic, (const void*)api.desc_create,
                           (const void*)api.desc_destroy, (const void*)api.desc_set_attribute,
                           (const void*)api.preference_create, (const void*)api.preference_destroy,
                           (const void*)api.preference_set_attribute, (const void*)api.layout_create,
                           (const void*)api.layout_destroy})
        EXPECT_NE(fn, nullptr);
    EXPECT_NE(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized"), std::string::npos);
    EXPECT_EQ(&cublaslt(), &api);  // opened once
}

} // namespace
} // namespace fusedngp::gpu
#endif
