// CudaBackend: image-mode (and any TrainingData) training on one CUDA device,
// behind the same Backend interface as the CPU reference. See
// docs/CUDA_BACKEND.md for the data flow, when the host synchronises, loss
// scaling and the fallbacks.
#pragma once

#include "backends/backend.h"
#include "engine/cuda_backend_kernels.h"
#include "engine/device_sampler.h"
#include "engine/display_copies.h"
#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/components/gpu_loss.h"
#include "gpu/components/gpu_optimizer.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_mlp.h"
#include "gpu/gpu_mlp_factory.h"
#include "optimizers/dynamic_loss_scale.h"

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <memory>

namespace fusedngp {

class ImageTrainingData;
namespace gpu {
class FusedMlp;
enum class LossKind : uint32_t;  // kernels/fused_mlp_args.h
} // namespace gpu

class CudaBackend : public Backend {
public:
    // Throws InputError without a device or when GPU memory runs out (naming
    // the size), ConfigError for a network the GPU cannot run (not an MLP, or
    // network.otype FullyFusedMLP with a shape the fused kernel lacks).
    // network.otype: FullyFusedMLP, CublasMLP (alias CutlassMLP) or Auto (also
    // MLP, CPU); see docs/CUDA_BACKEND.md.
    CudaBackend(const json& config, const TrainingData& data, uint64_t seed, const LossScaleSettings& scaling = {});
    ~CudaBackend() override;

    std::string name() const override { return "cuda"; }
    const json& config() const override { return config_; }

    // Enqueues one step and returns without waiting for it: the loss returned
    // is that of the newest step already finished (kInFlight steps behind at
    // most; the first kInFlight steps wait, so step 1 returns its own loss).
    float train_step(uint32_t batch_size) override;
    uint64_t step() const override { return step_; }
    void inference(const Matrix<float>& inputs, Matrix<float>& outputs) override;

    size_t n_params() const override { return host_model_.n_params(); }
    size_t n_encoding_params() const override { return host_model_.n_encoding_params(); }
    size_t n_network_params() const override { return host_model_.n_network_params(); }
    std::vector<NamedTensor> named_tensors() const override { return host_model_.named_tensors(); }
    std::vector<float> inference_params() const override;

    TrainingState save_state() const override;
    void load_state(const TrainingState& state) override;
    void set_params(const std::vector<float>& params) override;

    StepTimings last_timings() const override;
    double learning_rate() const override { return optimizer_->learning_rate(); }
    void set_learning_rate(double lr) override;

    // ---- beyond the interface (tests, benchmarks) ----
    // One step on a host batch (uploaded synchronously) instead of sampling.
    float train_step_on(const Matrix<float>& inputs, const Matrix<float>& targets);
    // Waits for all queued work; returns the loss of the last step.
    float synchronize();
    std::vector<float> params() const;
    // dL/dparams of the last step (zero after an overflow). With sparse
    // encoding updates (the default where possible) the optimizer has already
    // consumed the encoding's block: it reads zero; switch them off first.
    std::vector<float> gradients() const;
    // Sparse encoding updates (GpuOptimizer::set_sparse_group): Adam updates
    // only the grid rows a step touched, clears their gradient and refreshes
    // their fp16 copy, so untouched rows of a large table cost one gradient
    // read per step instead of a clear, a read and a conversion. On by
    // default when the optimizer and encoding allow it; returns whether on.
    bool set_sparse_encoding_updates(bool on);
    bool sparse_encoding_updates() const { return sparse_encoding_updates_; }
    float loss_scale() const { return loss_scale_.scale(); }
    void set_loss_scale(float scale);
    uint64_t skipped_steps();              // overflowing steps so far (synchronises)
    json diagnostics() override;           // loss_scale, skipped_steps (synchronises)
    // True when an overflowing step leaves the optimizer untouched (a CUDA
    // graph with a conditional node); false: the fallback, whose update runs
    // with zeroed gradients (weights stay finite, moments decay once).
    bool exact_skip() const { return update_graph_exec_ != nullptr; }
    std::string describe() const;
    // The MLP kernel running now ("FullyFusedMLP" or "CublasMLP").
    std::string mlp_kernel() const { return mlp_->kernel_name(); }
    // Hot swap (GUI): the same fp32 weights continue on the other kernel.
    // FullyFused throws ConfigError where the fused kernel cannot run; Auto
    // re-times on the next step. Synchronizes.
    void set_mlp_kernel(gpu::MlpKernel kernel);
    // The fused training step (FusedMlp::train_step: MLP forward, loss, loss
    // value and backward in one kernel, the dL/dencoded overflow check in
    // it too) where the network is a FusedMlp and the loss is L2, L1 or
    // RelativeL2; every other case runs forward, GpuLoss and backward. On by
    // default unless the environment sets FUSEDNGP_UNFUSED_STEP=1; off forces
    // the unfused path (A/B tests). fused_step_active(): whether steps use
    // it now.
    void set_fused_step(bool on) { fused_step_enabled_ = on; }
    bool fused_step_active() const;
    // The update's launches (docs/CUDA_BACKEND.md, "Update graph"): on (the
    // default unless the environment sets FUSEDNGP_UNFUSED_UPDATE=1), Adam
    // updates every group in one launch and, with a FusedMlp, writes the
    // network's fp32 master and fp16 fragments itself
    // (GpuOptimizer::set_fragment_outputs); off, the launches before it
    // (begin-step kernel, one update per group, then the MLP's copy and
    // conversion), for A/B. Same results bit for bit. Rebuilds the update
    // graph; synchronizes.
    void set_fused_update(bool on);
    bool fused_update() const { return fused_update_enabled_; }
    // Whether the update writes the MLP's fp16 weights itself now.
    bool mlp_refresh_in_update() const { return mlp_refresh_in_update_; }
    // The update graph's nodes, one line each ("kernel <name>", "memcpy",
    // "conditional", body nodes indented by two spaces), in topological
    // order; then the launches enqueue_update adds after the graph
    // ("after: kernel zero_if_flagged"). Empty without a graph.
    std::vector<std::string> update_graph_nodes() const;
    // The MLP (tests: its fragment buffers).
    gpu::GpuMlp& mlp() { return *mlp_; }
    // Auto's measurement, once made (batch 0 before).
    const gpu::KernelTiming& auto_timing() const { return auto_timing_; }
    // Device-side inference for the 3-D modes (sphere tracing, marching
    // cubes, IoU on the GPU): d_in [n][n_input_dims] -> d_out
    // [n][n_output_dims], both device memory. Runs on the backend's stream,
    // ordered after `stream`'s work so far, and `stream` waits for it.
    // Between begin_device_inference() and end_device_inference() the
    // components hold the inference parameters (the EMA average), so a
    // renderer's many small calls pay for that switch once; call no
    // train_step in between. inference_device outside a bracket opens and
    // closes one itself.
    void begin_device_inference();
    void inference_device(const float* d_in, uint32_t n, float* d_out, cudaStream_t stream);
    void end_device_inference();
    cudaStream_t stream() const { return stream_; }

    // The app's view beside training (display_copies.h). publish_display():
    // from the thread that steps, between steps: enqueues a copy of the
    // inference parameters (the EMA average) on the training stream.
    // display_lease(): from the UI thread, concurrently with training: the
    // newest finished copy, for a renderer on its own stream; empty before
    // the first publish has run on the GPU.
    // display_stream(): a high-priority stream for such renders (created at
    // the first call), so a frame's launches go ahead of queued training work.
    void publish_display();
    DisplayCopies::Lease display_lease() { return display_.lease(); }
    cudaStream_t display_stream();
    // The image view: the model at every pixel centre of a width x height
    // image, RGBA float4 per pixel, row 0 = top, into device memory (a mapped
    // GL PBO), from the newest display copy on
    // display_stream(), synchronised before return. False (nothing written)
    // before the first copy is ready.
    bool render_rgba_beside_training(float* d_rgba, uint32_t width, uint32_t height);

private:
    static constexpr int kInFlight = 4;  // steps the host may run ahead of the GPU

    // What one step leaves in pinned memory for the host to read later.
    struct StepReadback {
        float loss = 0;
        unsigned int overflow = 0;
    };
    struct Slot {
        cudaEvent_t done = nullptr;
        StepReadback* host = nullptr;  // pinned
        float scale = 0;               // loss scale the step ran with
        bool pending = false;
    };

    void check_network_supported() const;
    gpu::GpuMlpConfig mlp_config() const;
    // FullyFused where it can run and was asked for (or Auto), else Cublas;
    // prints the fallback notice for Auto.
    gpu::MlpKernel initial_kernel(gpu::MlpKernel requested) const;
    void install_mlp(gpu::MlpKernel kernel);
    void choose_kernel_by_timing(uint32_t batch);
    void destroy_update_graph();
    void allocate_batch(uint32_t batch);
    void run_step(uint32_t batch);
    void enqueue_update();
    void build_update_graph();
    void rebuild_update_graph();
    bool request_sparse_encoding_updates(bool on);
    gpu::FusedMlp* fused_step_mlp(gpu::LossKind* kind) const;
    void refresh_component_params(const float* d_params);
    void refresh_after_update();
    void configure_update_outputs();
    void retire_slot(Slot& slot);
    float read_back(int slot_index);

    json config_;
    uint64_t seed_;
    Model<float> host_model_;  // seeded init, names, groups (never trained)
    const TrainingData& data_;
    const ImageTrainingData* image_data_;  // data_ when it is an image, else null
    Rng host_rng_;             // host sampling fallback for non-image data

    cudaStream_t stream_ = nullptr;
    std::unique_ptr<gpu::GpuEncoding> encoding_;
    std::unique_ptr<gpu::GpuMlp> mlp_;
    bool auto_pending_ = false;     // Auto: time both kernels at the first training batch
    gpu::KernelTiming auto_timing_;
    std::unique_ptr<gpu::GpuLoss> loss_;
    std::unique_ptr<gpu::GpuOptimizer> optimizer_;

    gpu::DeviceBuffer<float> params_, grads_;
    gpu::DeviceBuffer<float> image_pixels_;
    gpu::DeviceBuffer<float> inputs_, targets_, encoded_, outputs_, doutputs_, dencoded_;
    gpu::DeviceBuffer<StepReadback> readback_;  // this step's loss and overflow flag
    uint32_t batch_capacity_ = 0;
    gpu::DeviceBuffer<float> render_in_, render_out_;  // render_rgba_beside_training's chunk scratch (UI thread)
    gpu::DeviceBuffer<float> device_inference_encoded_;                 // inference_device's chunk scratch
    bool in_device_inference_ = false;
    cudaEvent_t join_event_ = nullptr;  // orders inference_device against the caller's stream
    std::unique_ptr<DeviceSampler> device_sampler_;  // device-side batches (SDF), null: host or image sampling
    DisplayCopies display_;                          // after host_model_, whose layout it reads
    cudaStream_t display_stream_ = nullptr;

    // Skips the optimizer update on overflow (see exact_skip()).
    cudaGraph_t update_graph_ = nullptr;
    cudaGraphExec_t update_graph_exec_ = nullptr;
    cudaGraph_t update_body_ = nullptr;  // the IF node's body (owned by update_graph_)

    std::array<Slot, kInFlight> slots_{};
    uint64_t step_ = 0;
    uint64_t synchronous_until_step_ = kInFlight;  // steps up to here wait for their own loss
    float last_loss_ = 0;
    DynamicLossScale loss_scale_;
    bool sparse_encoding_updates_ = false;
    bool fused_step_enabled_ = true;
    bool fused_update_enabled_ = true;
    bool mlp_refresh_in_update_ = false;  // the optimizer writes the MLP's fp16 weights (set_fused_update)
    uint64_t skipped_steps_ = 0;

    std::array<cudaEvent_t, 4> timing_events_{};  // start, forward done, backward done, update done
    mutable StepTimings timings_;
};

// True when the CUDA runtime sees at least one device.
bool cuda_device_available();
// "NVIDIA H200 (sm_90, 139.8 GiB), driver 13.0" or why there is none.
std::string cuda_device_description();

} // namespace fusedngp
