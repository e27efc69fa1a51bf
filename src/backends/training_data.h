// TrainingData: what a mode hands a backend to train on. The backend draws
// batches from it; a GPU backend may later sample on the device instead when
// the data offers a device path, without the mode's loop changing.
#pragma once

#include "core/common.h"
#include "core/rng.h"

namespace fusedngp {

class TrainingData {
public:
    virtual ~TrainingData() = default;
    virtual uint32_t n_input_dims() const = 0;
    virtual uint32_t n_output_dims() const = 0;
    // Draws `batch` (input, target) pairs. Deterministic in the rng's state.
    virtual void sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const = 0;
};

} // namespace fusedngp
