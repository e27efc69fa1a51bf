// GpuOptimizer: the GPU twin of Optimizer<float> (src/optimizers/optimizer.h)
// for a flat fp32 device parameter array described by ParamGroups.
//
// step() is asynchronous, never synchronises the host and never allocates;
// the step counter, learning rate and per-step scalars live in device memory
// (optimizer_state.h) and are advanced by kernels, so a training step can be
// captured once in a CUDA graph and replayed any number of times.
#pragma once

#include "core/json_fields.h"
#include "gpu/components/optimizer_state.h"
#include "gpu/mlp_fragment_slots.h"
#include "optimizers/optimizer.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp::gpu {

// A piece of optimizer state in device memory (for snapshots and tests), named
// as the CPU optimizer's StateBuffer ("first_moment", "nested.average", ...).
struct GpuStateBuffer {
    std::string name;
    float* data = nullptr;
    size_t size = 0;
};

class GpuOptimizer {
public:
    virtual ~GpuOptimizer() = default;
    virtual std::string otype() const = 0;

    // Sizes all device state for the groups (zeros) and resets the step count
    // to 0, ordered on `stream`. Allocates: call before capturing a graph.
    virtual void allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) = 0;

    // One update of d_params from d_grads (device, the groups' extent).
    virtual void step(float* d_params, const float* d_grads, cudaStream_t stream) = 0;

    // Completed steps: reads the device counter and synchronises `stream`
    // (not for the hot loop).
    virtual uint64_t step_count(cudaStream_t stream) const = 0;
    // Stream-ordered; for resuming from a snapshot.
    virtual void set_step_count(uint64_t step, cudaStream_t stream) = 0;

    // The base learning rate (ExponentialDecay: lr0 of its schedule), as on the CPU.
    virtual double learning_rate() const = 0;
    // Stream-ordered write of the device copy: captured graphs see the new value.
    virtual void set_learning_rate(double lr, cudaStream_t stream) = 0;

    // Parameters for inference: the EMA average once a step was taken, else d_params.
    virtual const float* inference_params(const float* d_params) const { return d_params; }

    virtual std::vector<GpuStateBuffer> state() = 0;

    // Sparse updates for a group whose all-zero-gradient rows are skipped (a
    // hash grid, where a step touches a few rows of millions). Once set, step()
    // (1) zeroes every gradient row it updates, so the caller keeps the group's
    // gradient all zero between steps instead of clearing it (and must zero it
    // itself after a step it skips), and (2) writes each updated row's fp16
    // copy (__float2half_rn, as a full conversion would) into `half_mirror`,
    // indexed from the group's offset, so no full conversion is needed; rows
    // it skips are already current. Untouched rows then cost one gradient
    // read instead of a clear, a read and a conversion. `half_mirror` null
    // turns it off. Returns false, changing nothing, where the optimizer
    // cannot (no such group, a group that does not skip rows, SGD): the caller
    // keeps the dense path. Wrappers pass it to the optimizer they wrap.
    virtual bool set_sparse_group(const std::string& group, __half* half_mirror) {
        (void)group;
        (void)half_mirror;
        return false;
    }

    // The update's launch shape (docs/GPU_COMPONENTS.md, "Fused Adam update"):
    // on, Adam updates all its groups in one launch with the begin-step work
    // folded in (bit-identical results); off, the per-group launches before
    // it (A/B). On by default; CudaBackend sets it from
    // FUSEDNGP_UNFUSED_UPDATE=1. Wrappers pass it down; SGD ignores it.
    // Turning it off also drops set_fragment_outputs.
    virtual void set_fused_update(bool on) { (void)on; }

    // A step() captured in a CUDA graph ran again (a replay): sets the host
    // state that step() itself would have set, which a replay does not run
    // (the EMA's "holds an average"). Wrappers pass it down.
    virtual void note_replayed_step() {}

    // A group holding a FusedMlp's weights (caller layout, the group's
    // offset = the MLP's parameter 0): with the fused update on, every
    // weight the step writes is also written to targets->master and, as fp16,
    // to its two fragment slots, so the caller needs no
    // set_params_device after the step. Returns false, changing nothing,
    // where the optimizer cannot (fused update off, no such group, a size
    // that is not the MLP's, SGD); null `targets` turns it off (true).
    // The targets must hold the current weights when it is turned on (rows a
    // step skips are not rewritten). Wrappers pass it down.
    virtual bool set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) {
        (void)group;
        return targets == nullptr;
    }

    // Plumbing for the wrappers. ExponentialDecay hands its schedule down to
    // the optimizer that owns the learning rate; EMA reads the step counter
    // of the optimizer it wraps.
    virtual void set_schedule(const LearningRateSchedule& schedule) = 0;
    virtual const OptimizerCounters* device_counters() const = 0;
};

// Adam, SGD, EMA ("Ema") and ExponentialDecay with tiny-cuda-nn's fields.
// The whole config is first validated by the CPU create_optimizer<float>, so
// bad values raise the CPU's ConfigErrors. Composite, and ExponentialDecay
// nested inside another ExponentialDecay, are not implemented on the GPU:
// ConfigError naming `<path>.otype`.
std::unique_ptr<GpuOptimizer> create_gpu_optimizer(const json& config, const std::string& path = "optimizer");

} // namespace fusedngp::gpu
