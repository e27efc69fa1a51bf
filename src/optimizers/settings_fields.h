// Range-checked readers for optimizer settings, built on core/json_fields.h so
// every error names the field (e.g. "optimizer.nested.beta1") and its range.
#pragma once

#include "core/json_fields.h"

#include <memory>
#include <string>

namespace fusedngp {

// A number >= 0 (learning rates, regularisation strengths).
double get_nonnegative(const json& obj, const std::string& path, const std::string& key, double fallback);

// A number > 0 (Adam's epsilon: zero would divide 0 by 0 on a zero moment).
double get_positive(const json& obj, const std::string& path, const std::string& key, double fallback);

// A number in [0, 1) (Adam's betas, EMA decay: 1 would never move / divide by 0).
double get_fraction_below_one(const json& obj, const std::string& path, const std::string& key, double fallback);

// A number in [0, 1] (ExponentialDecay's decay_base: 1 means "no decay").
double get_fraction(const json& obj, const std::string& path, const std::string& key, double fallback);

// The wrapped optimizer's config: `config.nested` must exist and be an object.
const json& get_nested_config(const json& config, const std::string& path);

} // namespace fusedngp
