// Training data of a given shape and no samples: what a backend that only
// runs inference (a model read from a file) is built with.
#pragma once

#include "backends/training_data.h"

#include <stdexcept>

namespace fusedngp {

class ShapeOnlyData : public TrainingData {
public:
    ShapeOnlyData(uint32_t n_in, uint32_t n_out) : n_in_(n_in), n_out_(n_out) {}
    uint32_t n_input_dims() const override { return n_in_; }
    uint32_t n_output_dims() const override { return n_out_; }
    void sample(uint32_t, Rng&, Matrix<float>&, Matrix<float>&) const override {
        throw std::logic_error("a model loaded for inference has no training data");
    }

private:
    uint32_t n_in_, n_out_;
};

} // namespace fusedngp
