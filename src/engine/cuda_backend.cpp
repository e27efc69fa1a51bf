#include "engine/cuda_backend.h"

#include "core/env.h"
#include "core/errors.h"
#include "core/json_fields.h"
#include "engine/device_model.h"
#include "gpu/fused_mlp.h"
#include "modes/image_mode.h"
#include "networks/mlp.h"
#include "optimizers/state_matching.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace fusedngp {
namespace {

using gpu::const_rows;
using gpu::rows;

std::string mib(size_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
    return buf;
}

// Out of device memory is a user-facing condition (model or batch too large),
// not an internal error: report it as InputError with the size asked for.
[[noreturn]] void throw_out_of_memory(size_t bytes, const std::string& what) {
    throw InputError("out of GPU memory: an allocation of " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                     ") failed (" + what + "); use a smaller batch (--batch) or model, or --backend cpu");
}

template <typename F>
decltype(auto) translating_out_of_memory(F&& f) {
    try {
        return f();
    } catch (const gpu::DeviceAllocationError& e) {
        throw_out_of_memory(e.requested_bytes(), e.what());
    } catch (const gpu::GpuOutOfMemory& e) {
        throw_out_of_memory(e.requested_bytes(), e.what());
    }
}

constexpr uint32_t kInferenceChunk = 1u << 18;

// The fused training kernels' loss for a GpuLoss otype (false: none; then
// the unfused path). These losses have no parameters.
bool fused_loss_kind(const std::string& otype, gpu::LossKind* kind) {
    if (otype == "L2") *kind = gpu::LossKind::L2;
    else if (otype == "L1") *kind = gpu::LossKind::L1;
    else if (otype == "RelativeL2") *kind = gpu::LossKind::RelativeL2;
    else return false;
    return true;
}

// One line for a node of the update graph (update_graph_nodes).
std::string describe_graph_node(cudaGraphNode_t node) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) {
        (void)cudaGetLastError();
        return "unknown";
    }
    switch (type) {
    case cudaGraphNodeTypeKernel: {
        cudaKernelNodeParams p{};
        if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) {
            (void)cudaGetLastError();
            return "kernel";
        }
        // The (mangled) name where the runtime can tell it for a captured node.
        const char* name = nullptr;
        if (cudaFuncGetName(&name, p.func) != cudaSuccess || name == nullptr) {
            (void)cudaGetLastError();
            name = "(unnamed)";
        }
        return "kernel " + std::string(name) + " grid " + std::to_string(p.gridDim.x) + " x " +
               std::to_string(p.blockDim.x);
    }
    case cudaGraphNodeTypeMemcpy: return "memcpy";
    case cudaGraphNodeTypeMemset: return "memset";
    case cudaGraphNodeTypeConditional: return "conditional";
    default: return "node type " + std::to_string((int)type);
    }
}

// The graph's nodes in a topological order (Kahn's algorithm over its edges).
std::vector<cudaGraphNode_t> graph_nodes_in_order(cudaGraph_t graph) {
    size_t n = 0, n_edges = 0;
    FUSEDNGP_GPU_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
    std::vector<cudaGraphNode_t> nodes(n);
    if (n > 0) FUSEDNGP_GPU_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
    FUSEDNGP_GPU_CHECK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &n_edges));
    std::vector<cudaGraphNode_t> from(n_edges), to(n_edges);
    if (n_edges > 0) FUSEDNGP_GPU_CHECK(cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &n_edges));
    std::vector<cudaGraphNode_t> order;
    std::vector<bool> placed(n, false);
    while (order.size() < n) {
        const size_t before = order.size();
        for (size_t i = 0; i < n; ++i) {
            if (placed[i]) continue;
            bool ready = true;
            for (size_t e = 0; e < n_edges && ready; ++e) {
                if (to[e] != nodes[i]) continue;
                const auto it = std::find(nodes.begin(), nodes.end(), from[e]);
                ready = it == nodes.end() || placed[(size_t)(it - nodes.begin())];
            }
            if (ready) {
                placed[i] = true;
                order.push_back(nodes[i]);
            }
        }
        if (order.size() == before) break;  // not a DAG: cannot happen
    }
    return order;
}

// Image data in the tiled sample order: each warp's samples are an 8 x 4
// tile of strata, so the grid gradient's shared-memory levels sum a warp's
// contributions to one row before the atomic (measured on the H200: step
// 0.346 against 0.360 ms for the spread order with plain atomics; on spread
// inputs the aggregation costs more than it saves, so it follows the order).
// FUSEDNGP_GRID_KERNELS still overrides it.
gpu::GpuEncodingOptions encoding_options(const ImageTrainingData* image) {
    gpu::GpuEncodingOptions options;
    options.grid_kernels.gradient_warp_aggregate_shared = image && image->sampling().order == SampleOrder::Tiled;
    return options;
}

} // namespace

bool cuda_device_available() {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) (void)cudaGetLastError();
    return err == cudaSuccess && n > 0;
}

std::string cuda_device_description() {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        // Without an NVIDIA driver the runtime reports "driver version is
        // insufficient"; say what that means on a machine with no GPU.
        if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) return "no CUDA device or NVIDIA driver";
        return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
    }
    if (n == 0) return "no CUDA device";
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return "a CUDA device whose properties cannot be read";
    }
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    char buf[1024];  // prop.name is at most 256 characters
    std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %d SMs, %.1f GiB), driver %d.%d, runtime %d.%d%s", prop.name,
                  prop.major, prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / (1 << 30),
                  driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10,
                  n > 1 ? (", " + std::to_string(n) + " devices (using device 0)").c_str() : "");
    return buf;
}

CudaBackend::CudaBackend(const json& config, const TrainingData& data, uint64_t seed, const LossScaleSettings& scaling)
    : config_(config), seed_(seed),
      host_model_(data.n_input_dims(), data.n_output_dims(), config, seed), data_(data),
      image_data_(dynamic_cast<const ImageTrainingData*>(&data)), host_rng_(derive_seed(seed, 3)),
      display_(host_model_, encoding_options(image_data_)), loss_scale_(scaling),
      fused_step_enabled_(!env_flag_set("FUSEDNGP_UNFUSED_STEP")),
      fused_update_enabled_(!env_flag_set("FUSEDNGP_UNFUSED_UPDATE")) {
    if (!cuda_device_available()) {
        throw InputError("the cuda backend needs a CUDA device: " + cuda_device_description() + "; use --backend cpu");
    }
    check_network_supported();
    translating_out_of_memory([&] {
        FUSEDNGP_GPU_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        for (auto& e : timing_events_) FUSEDNGP_GPU_CHECK(cudaEventCreate(&e));
        for (auto& s : slots_) {
            FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
            FUSEDNGP_GPU_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.host), sizeof(StepReadback)));
            *s.host = {};
        }

        encoding_ = gpu::make_gpu_encoding(host_model_.encoding(), encoding_options(image_data_));
        const gpu::MlpKernel requested = requested_mlp_kernel(config_.at("network"), "network");
        const gpu::MlpKernel kernel = initial_kernel(requested);
        // Auto with both kernels possible: fused until the first training
        // batch, where both are timed at that batch size.
        auto_pending_ = requested == gpu::MlpKernel::Auto && kernel == gpu::MlpKernel::FullyFused;
        mlp_ = gpu::create_gpu_mlp(mlp_config(), kernel);
        loss_ = gpu::create_gpu_loss(config_.at("loss"));
        optimizer_ = gpu::create_gpu_optimizer(config_.at("optimizer"));

        params_.resize(n_params());
        grads_.resize(n_params());
        readback_.resize(1);
        params_.upload(host_model_.params());  // the CPU's seeded init: both backends start identical
        grads_.fill_bytes(0, stream_);
        readback_.fill_bytes(0, stream_);
        optimizer_->allocate(host_model_.param_groups(), stream_);
        refresh_component_params(params_.data());

        if (image_data_) {
            image_pixels_.resize(image_data_->image().pixels.size());
            image_pixels_.upload(image_data_->image().pixels);
        } else {
            device_sampler_ = make_device_sampler(data_);
        }
        FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&join_event_, cudaEventDisableTiming));
        set_loss_scale(scaling.initial);
        // The gradient starts at zero (above), as the sparse path needs.
        sparse_encoding_updates_ = request_sparse_encoding_updates(true);
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    });
    rebuild_update_graph();
}

CudaBackend::~CudaBackend() {
    if (stream_) cudaStreamSynchronize(stream_);
    destroy_update_graph();
    for (auto& s : slots_) {
        if (s.done) cudaEventDestroy(s.done);
        if (s.host) cudaFreeHost(s.host);
    }
    for (auto& e : timing_events_) {
        if (e) cudaEventDestroy(e);
    }
    if (join_event_) cudaEventDestroy(join_event_);
    if (display_stream_) {
        cudaStreamSynchronize(display_stream_);
        cudaStreamDestroy(display_stream_);
    }
    if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::check_network_supported() const {
    if (!dynamic_cast<const Mlp<float>*>(&host_model_.network())) {
        throw ConfigError("network.otype", "not an MLP; the cuda backend runs MLPs only (use --backend cpu)");
    }
}

gpu::GpuMlpConfig CudaBackend::mlp_config() const { return gpu_mlp_config_of(host_model_, "network"); }

gpu::MlpKernel CudaBackend::initial_kernel(gpu::MlpKernel requested) const {
    return choose_mlp_kernel(mlp_config(), requested, "network");
}

// Replaces the MLP by one of `kernel`, continuing from the same fp32 weights.
// The update graph captured the old object's weight conversion: rebuilt.
void CudaBackend::install_mlp(gpu::MlpKernel kernel) {
    synchronize();
    translating_out_of_memory([&] {
        std::unique_ptr<gpu::GpuMlp> mlp = gpu::create_gpu_mlp(mlp_config(), kernel, batch_capacity_);
        mlp->set_loss_scale(loss_scale_.scale());
        mlp->set_params_device(params_.data() + n_encoding_params(), stream_);
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
        mlp_ = std::move(mlp);
    });
    rebuild_update_graph();
}

void CudaBackend::set_mlp_kernel(gpu::MlpKernel kernel) {
    if (kernel == gpu::MlpKernel::Auto) {
        // Back to the fused kernel where it runs; the next step re-times.
        const gpu::MlpKernel start = initial_kernel(gpu::MlpKernel::Auto);
        if (mlp_->kernel_name() != std::string(gpu::mlp_kernel_name(start))) install_mlp(start);
        auto_pending_ = start == gpu::MlpKernel::FullyFused;
        return;
    }
    auto_pending_ = false;
    if (kernel == gpu::MlpKernel::FullyFused) initial_kernel(kernel);  // ConfigError where it cannot run
    if (mlp_->kernel_name() != std::string(gpu::mlp_kernel_name(kernel))) install_mlp(kernel);
}

// Auto: a few timed training steps of both kernels at the real batch size,
// once (see gpu::time_mlp_kernels); the faster one stays.
void CudaBackend::choose_kernel_by_timing(uint32_t batch) {
    auto_pending_ = false;
    synchronize();
    translating_out_of_memory([&] { auto_timing_ = gpu::time_mlp_kernels(mlp_config(), batch, stream_); });
    std::fprintf(stderr, "fusedngp: network.otype Auto: %s -> %s\n", auto_timing_.summary().c_str(),
                 gpu::mlp_kernel_name(auto_timing_.faster));
    if (mlp_->kernel_name() != std::string(gpu::mlp_kernel_name(auto_timing_.faster))) install_mlp(auto_timing_.faster);
}

// Builds the update graph again (after the MLP or the update path changed);
// without conditional graph nodes the step falls back to enqueue_update's
// plain launches, with a one-line notice.
void CudaBackend::rebuild_update_graph() {
    destroy_update_graph();
    configure_update_outputs();
    auto notice = [](const char* why) {
        std::fprintf(stderr, "fusedngp: cuda backend: no conditional CUDA graph (%s); an overflowing step updates "
                             "with zero gradients instead of being skipped\n", why);
    };
    // compute-sanitizer (CUDA 13.0) faults on graphs with a conditional node,
    // our code or not (bench/conditional_graph_probe.cu): under a sanitizer
    // the plain launches run the same kernels (scripts/gpu-check sets this).
    if (env_flag_set("FUSEDNGP_NO_CONDITIONAL_GRAPH")) {
        notice("FUSEDNGP_NO_CONDITIONAL_GRAPH=1");
        return;
    }
    // Capturing runs the optimizers' host code without running their steps;
    // the EMA's marks its average as valid there (a fresh backend's
    // inference then read the still empty average: zeros). Re-assert the
    // true step count afterwards, so host state matches what ran; each
    // replay of the graph then says so (enqueue_update: note_replayed_step).
    const uint64_t optimizer_steps = optimizer_->step_count(stream_);
    try {
        build_update_graph();
    } catch (const std::exception& e) {
        destroy_update_graph();
        notice(e.what());
    }
    optimizer_->set_step_count(optimizer_steps, stream_);
}

void CudaBackend::destroy_update_graph() {
    if (update_graph_exec_) cudaGraphExecDestroy(update_graph_exec_);
    if (update_graph_) cudaGraphDestroy(update_graph_);
    update_graph_exec_ = nullptr;
    update_graph_ = nullptr;
    update_body_ = nullptr;
}

// The update path (set_fused_update): the optimizer's launch shape, and
// whether it writes the FusedMlp's master and fp16 fragments itself. The
// MLP's buffers hold the current weights here (every path refreshes them
// after each step, and install_mlp / the constructor convert first), as
// set_fragment_outputs requires.
void CudaBackend::configure_update_outputs() {
    optimizer_->set_fused_update(fused_update_enabled_);
    optimizer_->set_fragment_outputs("network", nullptr);
    mlp_refresh_in_update_ = false;
    auto* fused = dynamic_cast<gpu::FusedMlp*>(mlp_.get());
    if (fused_update_enabled_ && fused != nullptr && n_network_params() > 0) {
        const gpu::MlpFragmentTargets targets = fused->fragment_targets();
        mlp_refresh_in_update_ = optimizer_->set_fragment_outputs("network", &targets);
    }
}

void CudaBackend::set_fused_update(bool on) {
    synchronize();
    fused_update_enabled_ = on;
    rebuild_update_graph();
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
}

std::vector<std::string> CudaBackend::update_graph_nodes() const {
    std::vector<std::string> lines;
    if (!update_graph_) return lines;
    for (cudaGraphNode_t node : graph_nodes_in_order(update_graph_)) {
        lines.push_back(describe_graph_node(node));
        if (lines.back() == "conditional" && update_body_) {
            for (cudaGraphNode_t b : graph_nodes_in_order(update_body_)) lines.push_back("  " + describe_graph_node(b));
        }
    }
    if (sparse_encoding_updates_) lines.push_back("after: kernel zero_if_flagged");
    return lines;
}

// Asks the optimizer for sparse encoding updates (`on`) or the dense path;
// returns whether sparse updates hold (they need an fp16 mirror and Adam).
bool CudaBackend::request_sparse_encoding_updates(bool on) {
    __half* mirror = n_encoding_params() > 0 ? encoding_->half_params_mirror() : nullptr;
    if (on && mirror && optimizer_->set_sparse_group("encoding", mirror)) return true;
    optimizer_->set_sparse_group("encoding", nullptr);
    return false;
}

bool CudaBackend::set_sparse_encoding_updates(bool on) {
    synchronize();
    on = request_sparse_encoding_updates(on);
    if (on == sparse_encoding_updates_) return on;
    // Dense steps leave the last gradient in place and the sparse path needs
    // zeros; the fp16 copy is current either way (both paths keep it so).
    FUSEDNGP_GPU_CHECK(cudaMemsetAsync(grads_.data(), 0, n_encoding_params() * sizeof(float), stream_));
    sparse_encoding_updates_ = on;
    rebuild_update_graph();
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    return on;
}

// After an optimizer step: the sparse path has refreshed the encoding's fp16
// rows itself, so only the network's copy is rebuilt.
void CudaBackend::refresh_after_update() {
    if (!sparse_encoding_updates_ && n_encoding_params() > 0) encoding_->set_params(params_.data(), stream_);
    // The fused update wrote the FusedMlp's master and fragments itself.
    if (!mlp_refresh_in_update_) mlp_->set_params_device(params_.data() + n_encoding_params(), stream_);
}

void CudaBackend::refresh_component_params(const float* d_params) {
    if (n_encoding_params() > 0) encoding_->set_params(d_params, stream_);
    mlp_->set_params_device(d_params + n_encoding_params(), stream_);
}

// The optimizer update plus the refresh of the fp16 copies, as a graph whose
// body runs only when the step's overflow flag is clear (an IF node set by a
// kernel inside the graph): the skip decision never reaches the host.
void CudaBackend::build_update_graph() {
    unsigned int* flag = &readback_.data()->overflow;
    cudaGraph_t graph = nullptr;
    FUSEDNGP_GPU_CHECK(cudaGraphCreate(&graph, 0));
    update_graph_ = graph;
    cudaGraphConditionalHandle handle;
    FUSEDNGP_GPU_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0));

    auto capture_into = [&](cudaGraph_t target, const std::function<void()>& enqueue) {
        FUSEDNGP_GPU_CHECK(cudaStreamBeginCaptureToGraph(stream_, target, nullptr, nullptr, 0,
                                                         cudaStreamCaptureModeThreadLocal));
        try {
            enqueue();
        } catch (...) {
            cudaGraph_t ignored = nullptr;
            cudaStreamEndCapture(stream_, &ignored);
            (void)cudaGetLastError();
            throw;
        }
        cudaGraph_t captured = nullptr;
        FUSEDNGP_GPU_CHECK(cudaStreamEndCapture(stream_, &captured));
    };

    capture_into(graph, [&] { gpu::launch_set_update_condition(handle, flag, stream_); });
    size_t n_nodes = 0;
    FUSEDNGP_GPU_CHECK(cudaGraphGetNodes(graph, nullptr, &n_nodes));
    std::vector<cudaGraphNode_t> nodes(n_nodes);
    FUSEDNGP_GPU_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n_nodes));

    cudaGraphNodeParams cond{};
    cond.type = cudaGraphNodeTypeConditional;
    cond.conditional.handle = handle;
    cond.conditional.type = cudaGraphCondTypeIf;
    cond.conditional.size = 1;
    cudaGraphNode_t cond_node;
    FUSEDNGP_GPU_CHECK(cudaGraphAddNode(&cond_node, graph, nodes.data(), nullptr, n_nodes, &cond));
    cudaGraph_t body = cond.conditional.phGraph_out[0];
    update_body_ = body;
    capture_into(body, [&] {
        optimizer_->step(params_.data(), grads_.data(), stream_);
        refresh_after_update();
    });

    cudaGraphExec_t exec = nullptr;
    FUSEDNGP_GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    update_graph_exec_ = exec;
}

void CudaBackend::allocate_batch(uint32_t batch) {
    if (auto_pending_) choose_kernel_by_timing(batch);
    if (batch <= batch_capacity_) return;
    synchronize();  // buffers in use by queued steps must not be freed under them
    translating_out_of_memory([&] {
        const size_t b = batch;
        const size_t n_enc_out = host_model_.encoding().n_output_dims();
        inputs_.resize(b * host_model_.n_input_dims());
        targets_.resize(b * host_model_.n_output_dims());
        encoded_.resize(b * n_enc_out);
        dencoded_.resize(b * n_enc_out);
        outputs_.resize(b * host_model_.n_output_dims());
        doutputs_.resize(b * host_model_.n_output_dims());
        mlp_->reserve(batch);
    });
    batch_capacity_ = batch;
}

float CudaBackend::train_step(uint32_t batch_size) {
    if (batch_size == 0) throw InputError("train_step: the batch size must be positive");
    allocate_batch(batch_size);
    if (image_data_) {
        const Image& image = image_data_->image();
        gpu::DeviceImage d_image{image_pixels_.data(), image.width, image.height, image.channels};
        gpu::launch_sample_image(d_image, image_data_->sampling(), seed_, step_, batch_size, inputs_.data(),
                                 targets_.data(), stream_);
    } else if (device_sampler_) {
        device_sampler_->sample(seed_, step_, batch_size, inputs_.data(), targets_.data(), stream_);
    } else {
        // Any other data: sample on the host like the CPU backend, then upload.
        Matrix<float> in, target;
        data_.sample(batch_size, host_rng_, in, target);
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(inputs_.data(), in.data(), in.size() * sizeof(float),
                                           cudaMemcpyHostToDevice, stream_));
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(targets_.data(), target.data(), target.size() * sizeof(float),
                                           cudaMemcpyHostToDevice, stream_));
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));  // the host matrices die here
    }
    run_step(batch_size);
    return last_loss_;
}

float CudaBackend::train_step_on(const Matrix<float>& inputs, const Matrix<float>& targets) {
    if (inputs.cols() != (Eigen::Index)host_model_.n_input_dims() ||
        targets.cols() != (Eigen::Index)host_model_.n_output_dims() || inputs.rows() != targets.rows() ||
        inputs.rows() == 0) {
        throw InputError("train_step_on: batch shape does not match the model");
    }
    const uint32_t batch = (uint32_t)inputs.rows();
    allocate_batch(batch);
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(inputs_.data(), inputs.data(), inputs.size() * sizeof(float),
                                       cudaMemcpyHostToDevice, stream_));
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(targets_.data(), targets.data(), targets.size() * sizeof(float),
                                       cudaMemcpyHostToDevice, stream_));
    run_step(batch);
    return synchronize();
}

void CudaBackend::run_step(uint32_t batch) {
    Slot& slot = slots_[step_ % kInFlight];
    if (slot.pending) retire_slot(slot);  // bounds the queue: the host runs at most kInFlight steps ahead

    const uint32_t n_in = host_model_.n_input_dims(), n_out = host_model_.n_output_dims();
    const uint32_t n_enc_out = host_model_.encoding().n_output_dims();
    const size_t n_enc = n_encoding_params(), n_net = n_network_params();
    float* grads_net = grads_.data() + n_enc;
    unsigned int* flag = &readback_.data()->overflow;

    FUSEDNGP_GPU_CHECK(cudaEventRecord(timing_events_[0], stream_));
    FUSEDNGP_GPU_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned int), stream_));
    encoding_->forward(const_rows(inputs_.data(), n_in), rows(encoded_.data(), n_enc_out), batch, stream_);
    gpu::LossKind fused_loss = gpu::LossKind::FromGradient;
    if (gpu::FusedMlp* fused = fused_step_mlp(&fused_loss)) {
        // One training kernel: forward, loss gradient and value, backward; it
        // flags a non-finite dL/dencoded itself. The outputs are not stored
        // (nothing reads them after a step). The split's "forward" is then
        // the encoding's alone.
        FUSEDNGP_GPU_CHECK(cudaEventRecord(timing_events_[1], stream_));
        fused->train_step(encoded_.data(), targets_.data(), fused_loss, nullptr, dencoded_.data(), grads_net, batch,
                          stream_, false, &readback_.data()->loss, flag);
        gpu::launch_flag_non_finite(grads_net, n_net, flag, stream_);
    } else {
        mlp_->forward(encoded_.data(), outputs_.data(), batch, stream_);
        FUSEDNGP_GPU_CHECK(cudaEventRecord(timing_events_[1], stream_));

        // Unscaled dL/dout: the fused MLP applies its loss scale before fp16 rounding
        // and divides it out of dL/dW and dL/dencoded in fp32.
        loss_->evaluate(outputs_.data(), targets_.data(), batch, n_out, 1.f, doutputs_.data(),
                        &readback_.data()->loss, stream_);
        mlp_->backward(encoded_.data(), doutputs_.data(), dencoded_.data(), grads_net, batch, stream_);
        // fp16 overflow shows up as inf/NaN in dL/dW and dL/dencoded; the
        // encoding's gradient is a weighted sum of the latter, so these two suffice.
        gpu::launch_flag_non_finite(grads_net, n_net, flag, stream_);
        gpu::launch_flag_non_finite(dencoded_.data(), (size_t)batch * n_enc_out, flag, stream_);
    }
    // Sparse updates keep the encoding's gradient zero between steps: add into it.
    encoding_->backward(const_rows(inputs_.data(), n_in), const_rows(dencoded_.data(), n_enc_out), grads_.data(),
                        gpu::DeviceRows{}, batch, stream_, sparse_encoding_updates_);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(timing_events_[2], stream_));

    enqueue_update();
    FUSEDNGP_GPU_CHECK(cudaEventRecord(timing_events_[3], stream_));

    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(slot.host, readback_.data(), sizeof(StepReadback), cudaMemcpyDeviceToHost,
                                       stream_));
    FUSEDNGP_GPU_CHECK(cudaEventRecord(slot.done, stream_));
    slot.scale = loss_scale_.scale();
    slot.pending = true;
    ++step_;

    if (step_ <= synchronous_until_step_) {
        retire_slot(slot);  // the first steps (after a start or a load) report their own loss
        return;
    }
    // Read whatever finished meanwhile, oldest first, without waiting.
    for (int k = 0; k < kInFlight; ++k) {
        Slot& s = slots_[(step_ + k) % kInFlight];
        if (!s.pending || cudaEventQuery(s.done) != cudaSuccess) break;
        retire_slot(s);
    }
}

void CudaBackend::enqueue_update() {
    const unsigned int* flag = &readback_.data()->overflow;
    if (update_graph_exec_) {
        FUSEDNGP_GPU_CHECK(cudaGraphLaunch(update_graph_exec_, stream_));
        optimizer_->note_replayed_step();
        // A skipped step did not consume the encoding's gradient: clear it
        // (reads only the flag when the step ran).
        if (sparse_encoding_updates_) gpu::launch_zero_if_flagged(grads_.data(), n_encoding_params(), flag, stream_);
        return;
    }
    gpu::launch_zero_if_flagged(grads_.data(), grads_.size(), flag, stream_);
    optimizer_->step(params_.data(), grads_.data(), stream_);
    refresh_after_update();
}

void CudaBackend::retire_slot(Slot& slot) {
    FUSEDNGP_GPU_CHECK(cudaEventSynchronize(slot.done));
    slot.pending = false;
    last_loss_ = slot.host->loss;
    if (slot.host->overflow) ++skipped_steps_;
    if (loss_scale_.on_step(slot.scale, slot.host->overflow != 0)) mlp_->set_loss_scale(loss_scale_.scale());
}

float CudaBackend::synchronize() {
    for (int k = 0; k < kInFlight; ++k) {
        Slot& s = slots_[(step_ + k) % kInFlight];
        if (s.pending) retire_slot(s);
    }
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    return last_loss_;
}

void CudaBackend::set_loss_scale(float scale) {
    mlp_->set_loss_scale(scale);
    loss_scale_.set(scale);
}

json CudaBackend::diagnostics() {
    synchronize();
    return {{"loss_scale", loss_scale_.scale()}, {"skipped_steps", skipped_steps_}};
}

uint64_t CudaBackend::skipped_steps() {
    synchronize();
    return skipped_steps_;
}

void CudaBackend::inference(const Matrix<float>& inputs, Matrix<float>& outputs) {
    if (inputs.cols() != (Eigen::Index)host_model_.n_input_dims()) {
        throw InputError("inference: inputs have " + std::to_string(inputs.cols()) + " columns, the model takes " +
                         std::to_string(host_model_.n_input_dims()));
    }
    const uint32_t n_in = host_model_.n_input_dims(), n_out = host_model_.n_output_dims();
    const uint32_t n_enc_out = host_model_.encoding().n_output_dims();
    const size_t n_rows = (size_t)inputs.rows();
    outputs.resize(inputs.rows(), n_out);
    if (n_rows == 0) return;
    const uint32_t chunk = (uint32_t)std::min<size_t>(n_rows, kInferenceChunk);
    synchronize();
    translating_out_of_memory([&] {
        mlp_->reserve(chunk);
        gpu::DeviceBuffer<float> in((size_t)chunk * n_in), encoded((size_t)chunk * n_enc_out), out((size_t)chunk * n_out);
        const float* weights = optimizer_->inference_params(params_.data());
        if (weights != params_.data()) refresh_component_params(weights);
        for (size_t first = 0; first < n_rows; first += chunk) {
            const uint32_t n = (uint32_t)std::min<size_t>(chunk, n_rows - first);
            FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(in.data(), inputs.data() + first * n_in, (size_t)n * n_in * sizeof(float),
                                               cudaMemcpyHostToDevice, stream_));
            encoding_->forward(const_rows(in.data(), n_in), rows(encoded.data(), n_enc_out), n, stream_);
            mlp_->inference(encoded.data(), out.data(), n, stream_);
            FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(outputs.data() + first * n_out, out.data(),
                                               (size_t)n * n_out * sizeof(float), cudaMemcpyDeviceToHost, stream_));
            FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));  // `in` is reused and the host rows are read now
        }
        if (weights != params_.data()) refresh_component_params(params_.data());
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    });
}

void CudaBackend::publish_display() {
    translating_out_of_memory([&] { display_.publish(optimizer_->inference_params(params_.data()), stream_); });
}

cudaStream_t CudaBackend::display_stream() {
    if (!display_stream_) {
        int least = 0, greatest = 0;
        FUSEDNGP_GPU_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        FUSEDNGP_GPU_CHECK(cudaStreamCreateWithPriority(&display_stream_, cudaStreamNonBlocking, greatest));
    }
    return display_stream_;
}

bool CudaBackend::render_rgba_beside_training(float* d_rgba, uint32_t width, uint32_t height) {
    const uint32_t n_in = host_model_.n_input_dims(), n_out = host_model_.n_output_dims();
    if (n_in != 2) throw InputError("the image view: the model takes " + std::to_string(n_in) + " inputs, not 2 (image mode)");
    const size_t n_pixels = (size_t)width * height;
    DisplayCopies::Lease model = display_.lease();
    if (!model) return false;
    const cudaStream_t stream = display_stream();
    const uint32_t chunk = (uint32_t)std::min<size_t>(n_pixels, kInferenceChunk);
    translating_out_of_memory([&] {
        // The UI thread's own buffers: the worker never touches them.
        render_in_.resize((size_t)kInferenceChunk * n_in);
        render_out_.resize((size_t)kInferenceChunk * n_out);
        for (size_t first = 0; first < n_pixels; first += chunk) {
            const uint32_t n = (uint32_t)std::min<size_t>(chunk, n_pixels - first);
            gpu::launch_pixel_centres(width, height, first, n, render_in_.data(), stream);
            model.inference(render_in_.data(), n, render_out_.data(), stream);
            gpu::launch_to_rgba(render_out_.data(), n_out, n, d_rgba + first * 4, stream);
        }
        FUSEDNGP_GPU_CHECK(cudaGetLastError());
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    });
    return true;
}

void CudaBackend::begin_device_inference() {
    if (in_device_inference_) return;
    synchronize();
    const float* weights = optimizer_->inference_params(params_.data());
    if (weights != params_.data()) refresh_component_params(weights);
    in_device_inference_ = true;
}

void CudaBackend::end_device_inference() {
    if (!in_device_inference_) return;
    const float* weights = optimizer_->inference_params(params_.data());
    if (weights != params_.data()) refresh_component_params(params_.data());
    in_device_inference_ = false;
}

void CudaBackend::inference_device(const float* d_in, uint32_t n, float* d_out, cudaStream_t stream) {
    if (n == 0) return;
    const bool bracketed = in_device_inference_;
    if (!bracketed) begin_device_inference();
    const uint32_t n_in = host_model_.n_input_dims(), n_out = host_model_.n_output_dims();
    const uint32_t n_enc_out = host_model_.encoding().n_output_dims();
    if (stream != stream_) {
        FUSEDNGP_GPU_CHECK(cudaEventRecord(join_event_, stream));
        FUSEDNGP_GPU_CHECK(cudaStreamWaitEvent(stream_, join_event_, 0));
    }
    translating_out_of_memory([&] {
        const uint32_t chunk = std::min(n, kInferenceChunk);
        if (device_inference_encoded_.size() < (size_t)chunk * n_enc_out) {
            FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));  // the old scratch may still be read
            device_inference_encoded_.resize((size_t)kInferenceChunk * n_enc_out);
        }
        mlp_->reserve(chunk);
        for (uint32_t first = 0; first < n; first += chunk) {
            const uint32_t m = std::min(chunk, n - first);
            encoding_->forward(const_rows(d_in + (size_t)first * n_in, n_in),
                               rows(device_inference_encoded_.data(), n_enc_out), m, stream_);
            mlp_->inference(device_inference_encoded_.data(), d_out + (size_t)first * n_out, m, stream_);
        }
    });
    if (stream != stream_) {
        FUSEDNGP_GPU_CHECK(cudaEventRecord(join_event_, stream_));
        FUSEDNGP_GPU_CHECK(cudaStreamWaitEvent(stream, join_event_, 0));
    }
    if (!bracketed) {
        end_device_inference();
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    }
}

std::vector<float> CudaBackend::params() const {
    const_cast<CudaBackend*>(this)->synchronize();
    return params_.download();
}

std::vector<float> CudaBackend::gradients() const {
    const_cast<CudaBackend*>(this)->synchronize();
    return grads_.download();
}

std::vector<float> CudaBackend::inference_params() const {
    const_cast<CudaBackend*>(this)->synchronize();
    std::vector<float> host(n_params());
    const float* weights = optimizer_->inference_params(params_.data());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(host.data(), weights, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
}

TrainingState CudaBackend::save_state() const {
    const_cast<CudaBackend*>(this)->synchronize();
    TrainingState s;
    s.step = step_;
    // Image batches are keyed by (seed, step) on the device; the host RNG only
    // feeds the fallback path for other data.
    s.rng_state = host_rng_.state();
    s.params = params_.download();
    for (const gpu::GpuStateBuffer& b : optimizer_->state()) {
        std::vector<float> host(b.size);
        FUSEDNGP_GPU_CHECK(cudaMemcpy(host.data(), b.data, b.size * sizeof(float), cudaMemcpyDeviceToHost));
        s.optimizer_buffers.emplace_back(b.name, std::move(host));
    }
    return s;
}

void CudaBackend::load_state(const TrainingState& s) {
    if (s.params.size() != n_params()) {
        throw InputError("snapshot has " + std::to_string(s.params.size()) + " parameters, the model has " +
                         std::to_string(n_params()));
    }
    const std::vector<gpu::GpuStateBuffer> buffers = optimizer_->state();
    std::vector<StateBufferShape> shapes;
    for (const auto& b : buffers) shapes.push_back({b.name, b.size});
    const auto saved = match_state_buffers(shapes, s.optimizer_buffers, "snapshot");
    synchronize();
    params_.upload(s.params);
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (buffers[i].size == 0) continue;
        if (saved[i]) {
            FUSEDNGP_GPU_CHECK(cudaMemcpy(buffers[i].data, saved[i]->data(), buffers[i].size * sizeof(float),
                                          cudaMemcpyHostToDevice));
        } else {
            FUSEDNGP_GPU_CHECK(cudaMemset(buffers[i].data, 0, buffers[i].size * sizeof(float)));
        }
    }
    optimizer_->set_step_count(s.step, stream_);
    refresh_component_params(params_.data());
    step_ = s.step;
    synchronous_until_step_ = step_ + kInFlight;  // no loss of this model has been read back yet
    host_rng_.set_state(s.rng_state);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::set_params(const std::vector<float>& params) {
    if (params.size() != n_params()) {
        throw InputError("set_params: got " + std::to_string(params.size()) + " parameters, the model has " +
                         std::to_string(n_params()));
    }
    synchronize();
    params_.upload(params);
    refresh_component_params(params_.data());
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::set_learning_rate(double lr) { optimizer_->set_learning_rate(lr, stream_); }

StepTimings CudaBackend::last_timings() const {
    // Read lazily: only once the last step's events have completed, so asking
    // never stalls the pipeline (the previous reading is returned meanwhile).
    if (step_ > 0 && cudaEventQuery(timing_events_[3]) == cudaSuccess) {
        float f = 0, b = 0, o = 0;
        if (cudaEventElapsedTime(&f, timing_events_[0], timing_events_[1]) == cudaSuccess &&
            cudaEventElapsedTime(&b, timing_events_[1], timing_events_[2]) == cudaSuccess &&
            cudaEventElapsedTime(&o, timing_events_[2], timing_events_[3]) == cudaSuccess) {
            timings_ = {f, b, o};
        }
    }
    (void)cudaGetLastError();
    return timings_;
}

// The FusedMlp that runs the fused training step and its loss, or null when
// steps take the unfused path (switched off, a CublasMlp, or another loss).
gpu::FusedMlp* CudaBackend::fused_step_mlp(gpu::LossKind* kind) const {
    if (!fused_step_enabled_ || !fused_loss_kind(loss_->otype(), kind)) return nullptr;
    return dynamic_cast<gpu::FusedMlp*>(mlp_.get());
}

bool CudaBackend::fused_step_active() const {
    gpu::LossKind kind = gpu::LossKind::FromGradient;
    return fused_step_mlp(&kind) != nullptr;
}

std::string CudaBackend::describe() const {
    return "cuda: " + encoding_->describe() + " -> " + mlp_->describe() +
           (fused_step_active() ? ", fused training step (loss in the MLP kernel)" : "") +
           (auto_timing_.batch > 0 ? " (Auto: " + auto_timing_.summary() + ")" : "") +
           (exact_skip() ? ", overflow skip by conditional graph" : ", overflow guard by zeroed gradients");
}

} // namespace fusedngp
