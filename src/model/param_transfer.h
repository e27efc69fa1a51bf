// Carrying learned weights from one model to a reshaped one, so that changing
// the network's width or depth while training keeps what was learned.
//
// Rules (by tensor name, see Model::named_tensors):
//  * MLP layer k of the old network goes into layer k of the new one for
//    hidden layers; the old output layer goes into the new output layer.
//    Each weight {fan_out, fan_in} copies its top-left overlap.
//  * Entries outside the overlap keep the new model's fresh init, except with
//    NewInputs::Zero, where weights that READ a new neuron (columns beyond the
//    old fan_in of a carried layer) are zeroed. Then a wider network computes
//    exactly the old function at the moment of the switch, and the new
//    neurons still learn (their outgoing gradient is activation * dL/dout).
//  * New hidden layers that have no old counterpart keep their fresh init.
//  * The encoding block is copied only when the encoding config is unchanged
//    (same otype and parameters), since its layout depends on all of them.
#pragma once

#include "core/json_fields.h"
#include "model/model.h"

#include <vector>

namespace fusedngp {

enum class NewInputs { FreshInit, Zero };

struct ParamSource {
    const json& encoding_config;
    const std::vector<NamedTensor>& tensors;
    const std::vector<float>& params;
};

struct TransferReport {
    size_t copied = 0;            // parameters taken from the old model
    bool encoding_copied = false;
    size_t layers_copied = 0;     // network layers with a counterpart
};

// Writes the carried-over values into `new_params` (which holds the new
// model's fresh init and layout `new_tensors`).
TransferReport transfer_params(const ParamSource& old_model, const json& new_encoding_config,
                               const std::vector<NamedTensor>& new_tensors, std::vector<float>& new_params,
                               NewInputs new_inputs = NewInputs::FreshInit);

} // namespace fusedngp
