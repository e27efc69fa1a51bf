// Minimal device memory ownership and CUDA error checking for the GPU
// components (encodings, losses, optimizers). Every CUDA runtime call goes
// through FUSEDNGP_GPU_CHECK, so a failure is an exception naming the call,
// its file:line and CUDA's description instead of a silent wrong result.
//
// To be unified with the fused-MLP code's DeviceMemory / FUSEDNGP_CUDA_CHECK;
// the names differ on purpose so both headers can be included together.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fusedngp::gpu {

// A CUDA runtime call failed.
class CudaCallError : public std::runtime_error {
public:
    CudaCallError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
    cudaError_t code() const { return code_; }

private:
    cudaError_t code_;
};

// cudaMalloc failed; the message and requested_bytes() give the size asked for.
class DeviceAllocationError : public CudaCallError {
public:
    DeviceAllocationError(cudaError_t code, size_t bytes, const std::string& what)
        : CudaCallError(code, what), bytes_(bytes) {}
    size_t requested_bytes() const { return bytes_; }

private:
    size_t bytes_;
};

inline void check_cuda_call(cudaError_t err, const char* expr, const char* file, int line) {
    if (err == cudaSuccess) return;
    throw CudaCallError(err, std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                                 cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

} // namespace fusedngp::gpu

#define FUSEDNGP_GPU_CHECK(expr) ::fusedngp::gpu::check_cuda_call((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration at once (faults
// inside the kernel surface at the next synchronising call).
#define FUSEDNGP_GPU_CHECK_LAUNCH() FUSEDNGP_GPU_CHECK(cudaGetLastError())

namespace fusedngp::gpu {

// Owns `size()` elements of T in device memory (uninitialised). Move-only.
// Allocation happens only in the constructor and resize(): never inside a
// training step, so steps can be captured in a CUDA graph.
template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t count) { resize(count); }
    ~DeviceBuffer() { release(); }

    DeviceBuffer(DeviceBuffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            release();
            data_ = std::exchange(other.data_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // Reallocates when the count changes; the contents are then undefined.
    void resize(size_t count) {
        if (count == size_) return;
        release();
        if (count == 0) return;
        const size_t bytes = count * sizeof(T);
        void* ptr = nullptr;
        const cudaError_t err = cudaMalloc(&ptr, bytes);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
            throw DeviceAllocationError(err, bytes,
                                        "cudaMalloc of " + std::to_string(bytes) + " bytes failed: " +
                                            cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
        }
        data_ = static_cast<T*>(ptr);
        size_ = count;
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    size_t bytes() const { return size_ * sizeof(T); }
    bool empty() const { return size_ == 0; }

    // Synchronous host -> device copy of exactly size() elements.
    void upload(const std::vector<T>& host) {
        if (host.size() != size_) {
            throw std::invalid_argument("DeviceBuffer::upload: " + std::to_string(host.size()) +
                                        " host elements for a buffer of " + std::to_string(size_));
        }
        if (size_) FUSEDNGP_GPU_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
    }

    // Synchronous device -> host copy of all elements.
    std::vector<T> download() const {
        std::vector<T> host(size_);
        if (size_) FUSEDNGP_GPU_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
        return host;
    }

    // Sets every byte to `byte` on `stream` (0: zeros; 0xFF: float NaN).
    void fill_bytes(int byte, cudaStream_t stream) {
        if (size_) FUSEDNGP_GPU_CHECK(cudaMemsetAsync(data_, byte, bytes(), stream));
    }

private:
    void release() noexcept {
        if (data_) cudaFree(data_);  // errors here would be from earlier work; nothing to do in a destructor
        data_ = nullptr;
        size_ = 0;
    }

    T* data_ = nullptr;
    size_t size_ = 0;
};

} // namespace fusedngp::gpu
