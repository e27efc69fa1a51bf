// Builds a network from its JSON config (tiny-cuda-nn schema).
#pragma once

#include "core/json_fields.h"
#include "networks/network.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// The MLP otypes a config may name (the app's kernel choices among them).
const std::vector<std::string>& mlp_otypes();

// The CPU reference builds its Mlp for every MLP otype (FullyFusedMLP,
// CutlassMLP, CublasMLP, CPU, Auto, MLP): they are the same function with the same
// parameter layout; otype only picks a GPU kernel.

template <typename T>
std::unique_ptr<Network<T>> create_network(uint32_t n_input_dims, uint32_t n_output_dims,
                                           const json& config, const std::string& path = "network");

} // namespace fusedngp
