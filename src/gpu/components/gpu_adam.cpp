#include "gpu/components/gpu_adam.h"

#include "launch_optimizers.h"
#include "optimizers/adam_bias.h"
#include "optimizers/param_groups.h"

namespace fusedngp::gpu {

namespace {

// The CPU's per-step float constants: each rounded once from double.
AdamConstants adam_constants(const AdamSettings& s) {
    AdamConstants k;
    k.beta1_d = s.beta1;
    k.beta2_d = s.beta2;
    k.beta1 = (float)s.beta1;
    k.one_minus_beta1 = (float)(1.0 - s.beta1);
    k.beta2 = (float)s.beta2;
    k.one_minus_beta2 = (float)(1.0 - s.beta2);
    k.epsilon = (float)s.epsilon;
    k.l2_reg = (float)s.l2_reg;
    return k;
}

// With the device bias-correction table where rows count their own updates.
AdamConstants adam_constants(const AdamSettings& s, const DeviceBuffer<double>& bias_corrections,
                             bool has_row_steps) {
    AdamConstants k = adam_constants(s);
    if (has_row_steps) {
        k.bias_corrections = bias_corrections.data();
        k.n_bias_corrections = (unsigned int)bias_corrections.size();
    }
    return k;
}

} // namespace

GpuAdam::GpuAdam(const AdamSettings& settings) : GpuLeafOptimizer(settings.learning_rate), settings_(settings) {}

void GpuAdam::allocate(const std::vector<ParamGroup>& groups, cudaStream_t stream) {
    groups_ = groups;
    const size_t extent = params_extent(groups);
    first_moment_.resize(extent);
    second_moment_.resize(extent);
    first_moment_.fill_bytes(0, stream);
    second_moment_.fill_bytes(0, stream);
    size_t rows = 0;
    row_steps_offset_.assign(groups.size(), kNoRowSteps);
    for (size_t g = 0; g < groups.size(); ++g) {
        if (!settings_.per_row_bias_correction || !skips_rows_of(groups[g])) continue;
        row_steps_offset_[g] = rows;
        rows += rows_of(groups[g]);
    }
    row_steps_.resize(rows);
    row_steps_.fill_bytes(0, stream);
    if (rows > 0) {
        const std::vector<double> table = adam_bias_corrections(settings_.beta1, settings_.beta2);
        bias_corrections_.resize(table.size());
        bias_corrections_.upload(table);
    }
    set_step_count(0, stream);
    resident_blocks_ = adam_fused_resident_blocks();  // a device query: not while capturing
}

bool GpuAdam::skips_rows_of(const ParamGroup& group) const {
    switch (settings_.skip_zero_gradient_rows) {
        case ZeroGradientRowSkip::Always: return true;
        case ZeroGradientRowSkip::Never: return false;
        case ZeroGradientRowSkip::Auto: break;
    }
    return group.row_size > 1;
}

float* GpuAdam::row_steps_of(size_t group) {
    return row_steps_offset_[group] != kNoRowSteps ? row_steps_.data() + row_steps_offset_[group] : nullptr;
}

// The fused kernel's table holds kMaxFusedAdamGroups groups; more (never
// from Model::param_groups, which makes two) take the per-group launches.
bool GpuAdam::fused_applies() const {
    size_t n_groups = 0;
    for (const ParamGroup& group : groups_) n_groups += group.size > 0;
    return fused_ && n_groups <= (size_t)kMaxFusedAdamGroups;
}

void GpuAdam::step(float* d_params, const float* d_grads, cudaStream_t stream) {
    if (fused_applies()) {
        step_fused(d_params, d_grads, stream);
    } else {
        step_per_group(d_params, d_grads, stream);
    }
}

void GpuAdam::step_fused(float* d_params, const float* d_grads, cudaStream_t stream) {
    AdamGroupTable table;
    table.max_grid = resident_blocks_;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const ParamGroup& group = groups_[gi];
        if (group.size == 0) continue;
        AdamGroupEntry& e = table.groups[table.n_groups++];
        e.row_steps = row_steps_of(gi);
        e.offset = group.offset;
        e.size = group.size;
        e.row_size = group.row_size > 0 ? group.row_size : 1;
        e.first_block = table.n_blocks;
        e.l2_reg = takes_l2_reg(group) ? (float)settings_.l2_reg : 0.f;
        e.skip_zero_rows = skips_rows_of(group);
        const bool sparse = half_mirror_ && group.name == sparse_group_;
        e.outputs = {sparse ? const_cast<float*>(d_grads) : nullptr, sparse ? half_mirror_ : nullptr};
        if (fragments_.master && group.name == fragment_group_) e.fragments = fragments_;
        table.n_blocks += adam_fused_blocks_for_rows((e.size + e.row_size - 1) / e.row_size);
    }
    launch_adam_fused_update(counters(), adam_constants(settings_, bias_corrections_, row_steps_.size() > 0), schedule(), table, d_params, d_grads,
                             first_moment_.data(), second_moment_.data(), stream);
}

void GpuAdam::step_per_group(float* d_params, const float* d_grads, cudaStream_t stream) {
    const AdamConstants k = adam_constants(settings_, bias_corrections_, row_steps_.size() > 0);
    launch_adam_begin_step(counters(), k, schedule(), stream);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const ParamGroup& group = groups_[gi];
        AdamConstants group_k = k;
        if (!takes_l2_reg(group)) group_k.l2_reg = 0.f;
        // The sparse contract (set_sparse_group) lets this group's gradient be written.
        const bool sparse = half_mirror_ && group.name == sparse_group_;
        const SparseRowOutputs outputs{sparse ? const_cast<float*>(d_grads) : nullptr, sparse ? half_mirror_ : nullptr};
        launch_adam_update(device_counters(), group_k, d_params, d_grads, first_moment_.data(), second_moment_.data(),
                           group.offset, group.size, group.row_size, skips_rows_of(group), row_steps_of(gi), outputs,
                           stream);
    }
}

bool GpuAdam::set_sparse_group(const std::string& group, __half* half_mirror) {
    if (!half_mirror) {
        if (sparse_group_ == group) {
            sparse_group_.clear();
            half_mirror_ = nullptr;
        }
        return true;
    }
    for (const ParamGroup& g : groups_) {
        if (g.name != group || !skips_rows_of(g) || g.size == 0) continue;
        sparse_group_ = group;
        half_mirror_ = half_mirror;
        return true;
    }
    return false;
}

void GpuAdam::set_fused_update(bool on) {
    fused_ = on;
    if (!on) set_fragment_outputs(fragment_group_, nullptr);
}

bool GpuAdam::set_fragment_outputs(const std::string& group, const MlpFragmentTargets* targets) {
    if (!targets) {
        if (fragment_group_ == group) {
            fragment_group_.clear();
            fragments_ = {};
        }
        return true;
    }
    if (!fused_applies() || !targets->master || !targets->w_fwd || !targets->w_bwd) return false;
    for (const ParamGroup& g : groups_) {
        if (g.name != group || g.size == 0 || g.size != gpu::n_params(targets->shape)) continue;
        fragment_group_ = group;
        fragments_ = *targets;
        return true;
    }
    return false;
}

std::vector<GpuStateBuffer> GpuAdam::state() {
    std::vector<GpuStateBuffer> buffers{{"first_moment", first_moment_.data(), first_moment_.size()},
                                        {"second_moment", second_moment_.data(), second_moment_.size()}};
    if (row_steps_.size() > 0) buffers.push_back({"row_steps", row_steps_.data(), row_steps_.size()});
    return buffers;
}

} // namespace fusedngp::gpu
