#include "engine/display_copies.h"

#include "engine/device_model.h"
#include "gpu/cuda_check.h"

#include <algorithm>
#include <stdexcept>

namespace fusedngp {

DisplayCopies::DisplayCopies(const Model<float>& host, const gpu::GpuEncodingOptions& encoding_options)
    : host_(host), encoding_options_(encoding_options) {}

DisplayCopies::~DisplayCopies() {
    for (Copy& c : copies_) {
        if (!c.written) continue;
        cudaEventSynchronize(c.written);  // a publish may still be writing
        cudaEventDestroy(c.written);
    }
}

void DisplayCopies::build() {
    const gpu::GpuMlpConfig mlp_config = gpu_mlp_config_of(host_, "network");
    const gpu::MlpKernel kernel =
        gpu::fused_unsupported_reason(mlp_config).empty() ? gpu::MlpKernel::FullyFused : gpu::MlpKernel::Cublas;
    n_output_dims_ = mlp_config.n_output_dims;
    for (Copy& c : copies_) {
        c.encoding = gpu::make_gpu_encoding(host_.encoding(), encoding_options_);
        c.mlp = gpu::create_gpu_mlp(mlp_config, kernel, kChunk);
        c.params.resize(host_.n_params());
        FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&c.written, cudaEventDisableTiming));
    }
    scratch_.resize((size_t)kChunk * host_.encoding().n_output_dims());
    built_ = true;
}

void DisplayCopies::publish(const float* d_params, cudaStream_t stream) {
    Copy* target = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!built_) build();
        // The oldest copy not leased; with three there is always one that is
        // neither leased nor the newest, so the UI keeps a finished copy to read.
        for (Copy& c : copies_) {
            if (c.state == State::Leased) continue;
            if (!target || c.version < target->version) target = &c;
        }
        target->state = State::Empty;  // not leasable while it is being written
    }
    // The encoding keeps a pointer to its fp32 parameters: each copy has its own.
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(target->params.data(), d_params, host_.n_params() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream));
    const size_t n_encoding = host_.n_encoding_params();
    if (n_encoding > 0) target->encoding->set_params(target->params.data(), stream);
    target->mlp->set_params_device(target->params.data() + n_encoding, stream);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(target->written, stream));
    std::lock_guard<std::mutex> lock(mutex_);
    target->version = ++versions_;
    target->state = State::Written;
}

uint64_t DisplayCopies::published() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return versions_;
}

DisplayCopies::Lease DisplayCopies::lease() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (leased_) throw std::logic_error("DisplayCopies::lease: a lease is already held");
    Copy* newest = nullptr;
    for (Copy& c : copies_) {
        if (c.state != State::Written || (newest && c.version < newest->version)) continue;
        const cudaError_t done = cudaEventQuery(c.written);
        if (done == cudaErrorNotReady) continue;  // the training stream has not reached it yet
        FUSEDNGP_GPU_CHECK(done);
        newest = &c;
    }
    Lease lease;
    if (!newest) return lease;
    newest->state = State::Leased;
    leased_ = true;
    lease.owner_ = this;
    lease.index_ = (int)(newest - copies_.data());
    lease.version_ = newest->version;
    return lease;
}

void DisplayCopies::release(int index) {
    std::lock_guard<std::mutex> lock(mutex_);
    copies_[(size_t)index].state = State::Written;
    leased_ = false;
}

DisplayCopies::Lease& DisplayCopies::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        owner_ = other.owner_;
        index_ = other.index_;
        version_ = other.version_;
        other.owner_ = nullptr;
        other.index_ = -1;
    }
    return *this;
}

void DisplayCopies::Lease::release() {
    if (!owner_) return;
    owner_->release(index_);
    owner_ = nullptr;
    index_ = -1;
}

void DisplayCopies::Lease::inference(const float* d_in, uint32_t n, float* d_out, cudaStream_t stream) const {
    if (!owner_) throw std::logic_error("DisplayCopies::Lease::inference on an empty lease");
    const Copy& copy = owner_->copies_[(size_t)index_];
    const uint32_t n_in = copy.encoding->n_input_dims(), n_enc = copy.encoding->n_output_dims();
    const uint32_t n_out = owner_->n_output_dims_;
    float* scratch = owner_->scratch_.data();
    for (uint32_t first = 0; first < n; first += kChunk) {
        const uint32_t m = std::min(kChunk, n - first);
        copy.encoding->forward(gpu::const_rows(d_in + (size_t)first * n_in, n_in), gpu::rows(scratch, n_enc), m, stream);
        copy.mlp->inference(scratch, d_out + (size_t)first * n_out, m, stream);
    }
}

} // namespace fusedngp
