#include "gpu/cublaslt_library.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace fusedngp::gpu {
namespace {

const std::string kSoname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
    if (void* h = dlopen(kSoname.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const std::string first_error = dlerror();
#ifdef FUSEDNGP_CUBLASLT_DIR
    const std::string beside_toolkit = std::string(FUSEDNGP_CUBLASLT_DIR) + "/" + kSoname;
    if (void* h = dlopen(beside_toolkit.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
#endif
    throw std::runtime_error("cannot load cuBLASLt (" + first_error +
                             "), which the cuBLAS MLP needs; use FullyFusedMLP or --backend cpu");
}

template <typename F>
void resolve(void* library, const char* name, F* fn) {
    *fn = reinterpret_cast<F>(dlsym(library, name));
    if (!*fn) throw std::runtime_error(kSoname + " has no " + name + "; it is older than the headers fusedngp was built with");
}

CublasLtApi load() {
    void* library = open_library();  // kept open for the process's lifetime
    CublasLtApi api{};
    resolve(library, "cublasLtCreate", &api.create);
    resolve(library, "cublasLtDestroy", &api.destroy);
    resolve(library, "cublasLtGetStatusString", &api.status_string);
    resolve(library, "cublasLtMatmul", &api.matmul);
    resolve(library, "cublasLtMatmulAlgoGetHeuristic", &api.algo_get_heuristic);
    resolve(library, "cublasLtMatmulDescCreate", &api.desc_create);
    resolve(library, "cublasLtMatmulDescDestroy", &api.desc_destroy);
    resolve(library, "cublasLtMatmulDescSetAttribute", &api.desc_set_attribute);
    resolve(library, "cublasLtMatmulPreferenceCreate", &api.preference_create);
    resolve(library, "cublasLtMatmulPreferenceDestroy", &api.preference_destroy);
    resolve(library, "cublasLtMatmulPreferenceSetAttribute", &api.preference_set_attribute);
    resolve(library, "cublasLtMatrixLayoutCreate", &api.layout_create);
    resolve(library, "cublasLtMatrixLayoutDestroy", &api.layout_destroy);
    return api;
}

} // namespace

const CublasLtApi& cublaslt() {
    static const CublasLtApi api = load();
    return api;
}

} // namespace fusedngp::gpu
