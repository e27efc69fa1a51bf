// Optimizer: updates a flat parameter array from its gradient.
//
// The model describes its parameter array as groups (encoding, network), each
// with a row size: the Adam option that skips rows whose gradient is all zero
// needs to know that a hash-grid row is n_features_per_level elements long.
#pragma once

#include "core/common.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// A contiguous range of the flat parameter array.
struct ParamGroup {
    std::string name;     // "encoding" or "network"
    size_t offset = 0;
    size_t size = 0;
    size_t row_size = 1;  // consecutive elements that form one row
};

// A piece of optimizer state, saved in snapshots so that training resumes
// bit-identically.
template <typename T>
struct StateBuffer {
    std::string name;
    std::vector<T>* data;
};

template <typename T>
class Optimizer {
public:
    virtual ~Optimizer() = default;
    virtual std::string otype() const = 0;

    // Called once before the first step, and again when the model changes.
    virtual void allocate(const std::vector<ParamGroup>& groups) = 0;

    // One update of params[0..n) from grads[0..n).
    virtual void step(T* params, const T* grads) = 0;

    // Number of completed steps.
    virtual uint64_t step_count() const = 0;
    virtual void set_step_count(uint64_t step) = 0;

    virtual double learning_rate() const = 0;
    virtual void set_learning_rate(double lr) = 0;

    // Parameters to use for inference: EMA returns its running average,
    // everything else returns `params` itself.
    virtual const T* inference_params(const T* params) const { return params; }

    // All state needed to resume (moments, averages), for snapshots.
    virtual std::vector<StateBuffer<T>> state() = 0;

    virtual nlohmann::json describe() const = 0;
};

} // namespace fusedngp
