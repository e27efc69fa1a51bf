#include "gpu/device_memory.h"

#include <string>
#include <utility>

namespace fusedngp::gpu {

DeviceMemory::DeviceMemory(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();  // clear the sticky-free allocation error
        ptr_ = nullptr;
        throw GpuOutOfMemory(bytes, "cudaMalloc of " + std::to_string(bytes) + " bytes failed: " +
                                        cudaGetErrorString(err));
    }
}

DeviceMemory::~DeviceMemory() {
    if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
    if (this != &other) {
        if (ptr_ != nullptr) cudaFree(ptr_);
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

} // namespace fusedngp::gpu
