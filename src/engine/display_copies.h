// DisplayCopies: a model's inference parameters copied into components of
// their own, so the app's view can render from another stream while training
// goes on, instead of pausing training for every frame it draws.
//
// Three copies, each an inference-only encoding + MLP of the model's layout.
// The thread that trains publishes into the oldest copy nobody reads,
// enqueued on the training stream between two steps and marked by an event;
// the UI thread leases the newest copy whose event has passed. The handoff is
// on the host (a mutex and a state per copy), so the training stream never
// waits for a render, and a render never waits for the steps queued ahead of
// it. The copies are built at the first publish, so a run without a view
// never pays for them.
#pragma once

#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/gpu_mlp.h"
#include "gpu/gpu_mlp_factory.h"
#include "model/model.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

namespace fusedngp {

class DisplayCopies {
public:
    // `host` gives the layout (kept by reference: the owner outlives this).
    // The copies run the fused MLP kernel where it can run the network, else cuBLAS.
    DisplayCopies(const Model<float>& host, const gpu::GpuEncodingOptions& encoding_options);
    ~DisplayCopies();
    DisplayCopies(const DisplayCopies&) = delete;
    DisplayCopies& operator=(const DisplayCopies&) = delete;

    // The trainer's thread: enqueues on `stream` a copy of `d_params` (the
    // model's flat fp32 layout, device memory) into the oldest copy that is
    // not leased. Allocates the copies the first time.
    void publish(const float* d_params, cudaStream_t stream);

    // One copy held by the UI thread; while held, publish() never writes it.
    class Lease {
    public:
        Lease() = default;
        Lease(Lease&& other) noexcept { *this = std::move(other); }
        Lease& operator=(Lease&& other) noexcept;
        ~Lease() { release(); }
        explicit operator bool() const { return owner_ != nullptr; }
        // Which publish this copy holds (1 = the first).
        uint64_t version() const { return version_; }
        // d_in [n][n_input_dims] -> d_out [n][n_output_dims] on `stream`
        // (any stream), in chunks through the copies' shared scratch.
        void inference(const float* d_in, uint32_t n, float* d_out, cudaStream_t stream) const;
        void release();

    private:
        friend class DisplayCopies;
        DisplayCopies* owner_ = nullptr;
        int index_ = -1;
        uint64_t version_ = 0;
    };

    // The UI thread: the newest copy the GPU has finished writing; an empty
    // lease before the first publish has run. One lease at a time (the
    // scratch is shared): std::logic_error on a second.
    Lease lease();
    // Publishes so far (whether or not the GPU has run them).
    uint64_t published() const;

private:
    enum class State { Empty, Written, Leased };
    struct Copy {
        std::unique_ptr<gpu::GpuEncoding> encoding;
        std::unique_ptr<gpu::GpuMlp> mlp;
        gpu::DeviceBuffer<float> params;  // fp32, the model's layout: the encoding may read it
        cudaEvent_t written = nullptr;
        uint64_t version = 0;
        State state = State::Empty;
    };
    static constexpr uint32_t kChunk = 1u << 16;

    void build();  // under mutex_
    void release(int index);

    const Model<float>& host_;
    uint32_t n_output_dims_ = 0;
    gpu::GpuEncodingOptions encoding_options_;
    mutable std::mutex mutex_;
    std::array<Copy, 3> copies_;
    bool built_ = false;
    bool leased_ = false;
    uint64_t versions_ = 0;
    gpu::DeviceBuffer<float> scratch_;  // the lease holder's encoded chunk
};

} // namespace fusedngp
