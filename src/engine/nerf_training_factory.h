// The NeRF trainer registry, beside create_backend: "cpu" is the reference
// (CpuNerfTraining), "cuda" the GPU trainer (when built with CUDA and a
// device exists). Lives in fusedngp_engine so the core never depends on CUDA.
#pragma once

#include "nerf/nerf_training.h"

#include <memory>
#include <string>

namespace fusedngp {

// Throws ConfigError for an unknown backend name, InputError when CUDA was
// asked for but is unavailable, and the trainers' own errors.
std::unique_ptr<nerf::NerfTraining> create_nerf_training(const std::string& backend, const NerfDataset& dataset,
                                                         const json& config,
                                                         const nerf::NerfTrainerSettings& settings);

} // namespace fusedngp
