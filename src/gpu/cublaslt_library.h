// cuBLASLt, loaded on first use. Linked normally, libcublasLt's initialisers
// cost every process ~0.4 s and ~200 MB of memory at start-up, runs that never
// touch a GPU and each of the test suite's processes included; only the
// cuBLAS MLP (cublas_mlp.cpp) calls it, so it is opened there, once.
#pragma once

#include <cublasLt.h>

namespace fusedngp::gpu {

// The cuBLASLt entry points fusedngp uses, with their declared types.
struct CublasLtApi {
    decltype(&cublasLtCreate) create;
    decltype(&cublasLtDestroy) destroy;
    decltype(&cublasLtGetStatusString) status_string;
    decltype(&cublasLtMatmul) matmul;
    decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
    decltype(&cublasLtMatmulDescCreate) desc_create;
    decltype(&cublasLtMatmulDescDestroy) desc_destroy;
    decltype(&cublasLtMatmulDescSetAttribute) desc_set_attribute;
    decltype(&cublasLtMatmulPreferenceCreate) preference_create;
    decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
    decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
    decltype(&cublasLtMatrixLayoutCreate) layout_create;
    decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
};

// Opens libcublasLt.so.<major of the headers> (the loader's search path, then
// the toolkit folder it was built against) on the first call. Throws
// std::runtime_error naming the library and the loader's reason when it is
// missing or lacks an entry point.
const CublasLtApi& cublaslt();

} // namespace fusedngp::gpu
