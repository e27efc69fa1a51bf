// CUDA error handling for the GPU backend: every runtime call is checked and
// a failure becomes an exception naming the call site.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace fusedngp::gpu {

class CudaError : public std::runtime_error {
public:
    CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
    cudaError_t code() const { return code_; }

private:
    cudaError_t code_;
};

// cudaMalloc failed: the message names the size that was asked for.
class GpuOutOfMemory : public CudaError {
public:
    GpuOutOfMemory(size_t bytes, const std::string& what)
        : CudaError(cudaErrorMemoryAllocation, what), bytes_(bytes) {}
    size_t requested_bytes() const { return bytes_; }

private:
    size_t bytes_;
};

inline void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
    if (err == cudaSuccess) return;
    throw CudaError(err, std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                             cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

} // namespace fusedngp::gpu

#define FUSEDNGP_CUDA_CHECK(expr) ::fusedngp::gpu::cuda_check((expr), #expr, __FILE__, __LINE__)
