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
//  * New hidden layers (a deeper network) sit just before the output layer.
//    With ReLU, None or LeakyReLU hidden activations they start as the
//    identity over the full new width: row r reads neuron r alone. Rows past
//    the layer's fan_in (only a first hidden layer reading a narrower
//    encoding has them) keep their fresh init. After a ReLU the layer's input
//    is >= 0, so relu(I h) = h and the function is exact; with None it is
//    exact too. LeakyReLU keeps positives but shrinks negatives once more
//    (0.01 z -> 1e-4 z): close, not exact. Other activations (Softplus,
//    Sigmoid, Tanh, Sine, ...) are not idempotent, f(f(z)) != f(z), so an
//    identity layer would not keep the function either; those layers keep
//    their fresh init.
//    The identity covers the new neurons of a wider layer too (rather than
//    zero rows): zero rows would meet the zeroed output columns and leave
//    those neurons with zero weights in and out, hence zero gradients for
//    good; passed through, they feed the zeroed columns a non-zero
//    activation, so those columns learn from the first step.
//  * The encoding block is copied only when the encoding config is unchanged
//    (same otype and parameters), since its layout depends on all of them.
#pragma once

#include "core/json_fields.h"
#include "model/model.h"

#include <string>
#include <vector>

namespace fusedngp {

enum class NewInputs { FreshInit, Zero };

struct ParamSource {
    const json& config;  // the model config: "encoding" and "network" sections
    const std::vector<NamedTensor>& tensors;
    const std::vector<float>& params;
};

struct TransferReport {
    size_t copied = 0;            // parameters taken from the old model
    bool encoding_copied = false;
    size_t layers_copied = 0;     // network layers with a counterpart
    size_t layers_inserted = 0;   // new hidden layers that start as the identity
    // The new model computes exactly the old function at the switch (up to
    // rounding); when not, `why_not` says why in a short phrase
    // ("fewer hidden layers", "encoding changed", ...).
    bool function_preserved = false;
    std::string why_not;
};

// Writes the carried-over values into `new_params` (which holds the new
// model's fresh init and layout `new_tensors`). `new_config` is the new
// model's config ("encoding" and "network" sections).
TransferReport transfer_params(const ParamSource& old_model, const json& new_config,
                               const std::vector<NamedTensor>& new_tensors, std::vector<float>& new_params,
                               NewInputs new_inputs = NewInputs::FreshInit);

} // namespace fusedngp
