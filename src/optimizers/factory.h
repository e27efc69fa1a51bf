#pragma once

#include "core/json_fields.h"
#include "optimizers/optimizer.h"

#include <memory>

namespace fusedngp {

// Adam, SGD, and the wrappers EMA (also spelled "Ema"), ExponentialDecay and
// Composite, with tiny-cuda-nn's field names. Wrappers nest via "nested".
template <typename T>
std::unique_ptr<Optimizer<T>> create_optimizer(const json& config, const std::string& path = "optimizer");

} // namespace fusedngp
