// Moving a NeRF's training onto a changed model while it trains: the app's
// live width, depth, kernel and backend changes. A new NerfTraining for the
// new config and backend starts from the old one's state, so what was
// learned stays (model/param_transfer.h's rules, per network).
#pragma once

#include "model/param_transfer.h"
#include "nerf/nerf_training.h"

#include <memory>
#include <string>

namespace fusedngp {

struct NerfTrainingChange {
    std::unique_ptr<nerf::NerfTraining> training;
    TransferReport density, colour;  // what each model carried
};

// `from` trains with `from_config`; the result trains `config` on `backend`
// with the old:
//  * networks' weights by param_transfer.h's rules with NewInputs::Zero (a
//    wider or deeper network computes the old function at the switch), and
//    the EMA average, the weights the views render, the same way;
//  * hash grid (the encoding config is unchanged), occupancy grid, step (the
//    schedules go on) and ray draws' state;
//  * optimizer moments: all of a model whose layout is unchanged (a kernel or
//    backend switch), else the encoding's, fresh for the reshaped network.
// Throws the new trainer's ConfigError / InputError; `from` is untouched.
NerfTrainingChange change_nerf_training(nerf::NerfTraining& from, const json& from_config, const std::string& backend,
                                        const NerfDataset& dataset, const json& config,
                                        const nerf::NerfTrainerSettings& settings);

} // namespace fusedngp
