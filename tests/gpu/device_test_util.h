// What the GPU tests share: whether there is a device (without one they skip)
// and a fixture that owns a stream and, after the test, surfaces any
// asynchronous kernel fault.
#pragma once

#include "gpu/components/device_buffer.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace fusedngp::test {

// Asked once per process; a failed query (no driver) counts as no device.
inline bool device_available() {
    static const bool available = [] {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
        }
        return count > 0;
    }();
    return available;
}

#define REQUIRE_DEVICE() \
    if (!::fusedngp::test::device_available()) GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount reports none)"

class DeviceStreamTest : public ::testing::Test {
protected:
    void SetUp() override {
        REQUIRE_DEVICE();
        FUSEDNGP_GPU_CHECK(cudaStreamCreate(&stream_));
    }
    void TearDown() override {
        if (!stream_) return;
        EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess)
            << "a kernel failed: " << cudaGetErrorString(cudaGetLastError());
        cudaStreamDestroy(stream_);
    }
    void sync() const { FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_)); }

    cudaStream_t stream_ = nullptr;
};

} // namespace fusedngp::test
