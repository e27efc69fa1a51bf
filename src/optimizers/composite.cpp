#include "optimizers/composite.h"

#include "optimizers/factory.h"
#include "optimizers/param_groups.h"
#include "optimizers/settings_fields.h"

#include <algorithm>
#include <cstring>

namespace fusedngp {

namespace {

// The parts of `groups` that fall inside [begin, begin + size), rebased to begin.
std::vector<ParamGroup> groups_in_slice(const std::vector<ParamGroup>& groups, size_t begin, size_t size) {
    std::vector<ParamGroup> inside;
    for (const ParamGroup& g : groups) {
        const size_t lo = std::max(g.offset, begin);
        const size_t hi = std::min(g.offset + g.size, begin + size);
        if (lo >= hi) continue;
        ParamGroup clipped = g;
        clipped.offset = lo - begin;
        clipped.size = hi - lo;
        inside.push_back(clipped);
    }
    return inside;
}

std::vector<CompositeLayout> layout_by_name(const std::vector<ParamGroup>& groups,
                                            const std::vector<CompositeSlot>& slots, const std::string& config_path) {
    for (const ParamGroup& g : groups) {
        if (g.size == 0) continue;
        bool listed = std::any_of(slots.begin(), slots.end(), [&](const CompositeSlot& s) { return s.group_name == g.name; });
        if (listed) continue;
        std::string configured;
        for (const CompositeSlot& s : slots) configured += (configured.empty() ? "" : ", ") + s.group_name;
        throw ConfigError(join_path(config_path, "groups"),
                          "no optimizer for parameter group \"" + g.name + "\" (configured: " + configured + ")");
    }
    // A listed group the model does not have (e.g. an encoding without
    // parameters) gets an empty allocation and steps over nothing.
    std::vector<CompositeLayout> layout(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const ParamGroup& g) { return g.name == slots[i].group_name; });
        if (it == groups.end()) continue;
        layout[i].offset = it->offset;
        layout[i].size = it->size;
        ParamGroup rebased = *it;
        rebased.offset = 0;
        layout[i].groups.push_back(rebased);
    }
    return layout;
}

std::vector<CompositeLayout> layout_by_slice(const std::vector<ParamGroup>& groups,
                                             const std::vector<CompositeSlot>& slots, const std::string& config_path) {
    const std::string nested_path = join_path(config_path, "nested");
    const size_t extent = params_extent(groups);
    std::vector<CompositeLayout> layout(slots.size());
    size_t cursor = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
        const size_t size = slots[i].slice_size ? *slots[i].slice_size : extent - std::min(cursor, extent);
        if (cursor + size > extent) {
            throw ConfigError(nested_path, "the n_params_to_optimize add up to more than the model's " +
                                               std::to_string(extent) + " parameters");
        }
        layout[i].offset = cursor;
        layout[i].size = size;
        layout[i].groups = groups_in_slice(groups, cursor, size);
        cursor += size;
    }
    if (cursor != extent) {
        throw ConfigError(nested_path, "the n_params_to_optimize add up to " + std::to_string(cursor) +
                                           " but the model has " + std::to_string(extent) +
                                           " parameters (omit it on the last entry to take the rest)");
    }
    return layout;
}

} // namespace

std::vector<CompositeLayout> layout_composite(const std::vector<ParamGroup>& groups,
                                              const std::vector<CompositeSlot>& slots, bool by_slice,
                                              const std::string& config_path) {
    return by_slice ? layout_by_slice(groups, slots, config_path) : layout_by_name(groups, slots, config_path);
}

template <typename T>
CompositeOptimizer<T>::CompositeOptimizer(std::vector<CompositePart<T>> parts, bool by_slice,
                                          double learning_rate_scale, std::string config_path)
    : parts_(std::move(parts)), by_slice_(by_slice), learning_rate_scale_(learning_rate_scale),
      config_path_(std::move(config_path)) {
    for (const CompositePart<T>& part : parts_) base_learning_rates_.push_back(part.optimizer->learning_rate());
    set_learning_rate(learning_rate_scale);
}

template <typename T>
void CompositeOptimizer<T>::allocate(const std::vector<ParamGroup>& groups) {
    extent_ = params_extent(groups);
    step_ = 0;
    std::vector<CompositeSlot> slots;
    for (const CompositePart<T>& part : parts_) slots.push_back({part.group_name, part.slice_size});
    const std::vector<CompositeLayout> layout = layout_composite(groups, slots, by_slice_, config_path_);
    for (size_t i = 0; i < parts_.size(); ++i) {
        parts_[i].offset = layout[i].offset;
        parts_[i].size = layout[i].size;
        parts_[i].optimizer->allocate(layout[i].groups);
    }
}

template <typename T>
void CompositeOptimizer<T>::step(T* params, const T* grads) {
    ++step_;
    for (CompositePart<T>& part : parts_) part.optimizer->step(params + part.offset, grads + part.offset);
}

template <typename T>
void CompositeOptimizer<T>::set_step_count(uint64_t step) {
    step_ = step;
    for (CompositePart<T>& part : parts_) part.optimizer->set_step_count(step);
}

template <typename T>
void CompositeOptimizer<T>::set_learning_rate(double scale) {
    learning_rate_scale_ = scale;
    for (size_t i = 0; i < parts_.size(); ++i) parts_[i].optimizer->set_learning_rate(base_learning_rates_[i] * scale);
}

template <typename T>
const T* CompositeOptimizer<T>::inference_params(const T* params) const {
    bool any_own = false;
    for (const CompositePart<T>& part : parts_) {
        any_own |= part.optimizer->inference_params(params + part.offset) != params + part.offset;
    }
    if (!any_own) return params;
    inference_buffer_.assign(params, params + extent_);
    for (const CompositePart<T>& part : parts_) {
        const T* own = part.optimizer->inference_params(params + part.offset);
        if (part.size > 0) std::memcpy(inference_buffer_.data() + part.offset, own, part.size * sizeof(T));
    }
    return inference_buffer_.data();
}

template <typename T>
std::vector<StateBuffer<T>> CompositeOptimizer<T>::state() {
    std::vector<StateBuffer<T>> buffers;
    for (CompositePart<T>& part : parts_) {
        for (StateBuffer<T>& b : prefixed_state(part.label, part.optimizer->state())) buffers.push_back(b);
    }
    return buffers;
}

template <typename T>
nlohmann::json CompositeOptimizer<T>::describe() const {
    json d = {{"otype", otype()}, {"learning_rate_scale", learning_rate_scale_}};
    if (by_slice_) {
        json nested = json::array();
        for (const CompositePart<T>& part : parts_) {
            json entry = part.optimizer->describe();
            if (part.slice_size) entry["n_params_to_optimize"] = *part.slice_size;
            nested.push_back(entry);
        }
        d["nested"] = nested;
    } else {
        json by_name = json::object();
        for (const CompositePart<T>& part : parts_) by_name[part.group_name] = part.optimizer->describe();
        d["groups"] = by_name;
    }
    return d;
}

template <typename T>
std::unique_ptr<Optimizer<T>> create_composite_optimizer(const json& config, const std::string& path) {
    require_object(config, path);
    const bool has_groups = config.contains("groups"), has_nested = config.contains("nested");
    if (has_groups == has_nested) {
        throw ConfigError(path, "Composite needs exactly one of \"groups\" (an object: parameter group name -> "
                                "optimizer) or \"nested\" (an array of optimizers with \"n_params_to_optimize\")");
    }
    std::vector<CompositePart<T>> parts;
    if (has_groups) {
        const std::string groups_path = join_path(path, "groups");
        const json& groups = config["groups"];
        require_object(groups, groups_path);
        if (groups.empty()) throw ConfigError(groups_path, "must list at least one parameter group");
        for (auto it = groups.begin(); it != groups.end(); ++it) {
            CompositePart<T> part;
            part.label = "groups." + it.key();
            part.group_name = it.key();
            part.optimizer = create_optimizer<T>(it.value(), join_path(groups_path, it.key()));
            parts.push_back(std::move(part));
        }
    } else {
        const std::string nested_path = join_path(path, "nested");
        const json& nested = config["nested"];
        if (!nested.is_array() || nested.empty()) {
            throw ConfigError(nested_path, "must be a non-empty array of optimizers");
        }
        for (size_t i = 0; i < nested.size(); ++i) {
            const std::string entry_path = nested_path + "[" + std::to_string(i) + "]";
            require_object(nested[i], entry_path);
            CompositePart<T> part;
            part.label = "nested." + std::to_string(i);
            const bool is_last = i + 1 == nested.size();
            if (nested[i].contains("n_params_to_optimize")) {
                part.slice_size = (size_t)get_int(nested[i], entry_path, "n_params_to_optimize", 0, 0);
            } else if (!is_last) {
                throw ConfigError(join_path(entry_path, "n_params_to_optimize"),
                                  "missing (required on every entry but the last, which may take the rest)");
            }
            part.optimizer = create_optimizer<T>(nested[i], entry_path);
            parts.push_back(std::move(part));
        }
    }
    const double scale = get_nonnegative(config, path, "learning_rate_scale", 1.0);
    return std::make_unique<CompositeOptimizer<T>>(std::move(parts), has_nested, scale, path);
}

template class CompositeOptimizer<float>;
template class CompositeOptimizer<double>;
template std::unique_ptr<Optimizer<float>> create_composite_optimizer<float>(const json&, const std::string&);
template std::unique_ptr<Optimizer<double>> create_composite_optimizer<double>(const json&, const std::string&);

} // namespace fusedngp
