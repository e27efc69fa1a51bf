// Owning device allocation shared by the GPU MLPs. cudaMalloc failure ->
// GpuOutOfMemory naming the size asked for.
#pragma once

#include "gpu/cuda_check.h"

#include <cstddef>

namespace fusedngp::gpu {

class DeviceMemory {
public:
    DeviceMemory() = default;
    explicit DeviceMemory(size_t bytes);
    ~DeviceMemory();
    DeviceMemory(DeviceMemory&& other) noexcept;
    DeviceMemory& operator=(DeviceMemory&& other) noexcept;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;

    template <typename T>
    T* as() const { return static_cast<T*>(ptr_); }
    size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
};

} // namespace fusedngp::gpu
