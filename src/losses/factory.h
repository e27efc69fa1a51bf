#pragma once

#include "core/json_fields.h"
#include "losses/loss.h"

#include <memory>

namespace fusedngp {

template <typename T>
std::unique_ptr<Loss<T>> create_loss(const json& config, const std::string& path = "loss");

} // namespace fusedngp
