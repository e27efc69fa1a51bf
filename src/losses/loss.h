// Loss: compares predictions with targets, both (batch x n_dims).
//
// Convention (as tiny-cuda-nn): the loss value is the mean over all
// batch * n_dims elements of the per-element loss, and `evaluate` writes
// dL/dprediction of that mean. Relative losses (RelativeL2, RelativeL1,
// RelativeL2Luminance, SMAPE) treat their prediction-dependent denominator as a
// constant (no gradient flows through it); see docs/CONFIG.md.
#pragma once

#include "core/common.h"

#include <memory>
#include <string>

namespace fusedngp {

template <typename T>
class Loss {
public:
    virtual ~Loss() = default;
    virtual std::string otype() const = 0;

    // Returns the mean loss; writes dL/dprediction into `dpred` (resized to
    // prediction's shape) when non-null.
    virtual T evaluate(const Matrix<T>& prediction, const Matrix<T>& target, Matrix<T>* dpred) const = 0;

    // The same mean loss with any stop-gradient denominators taken from
    // `frozen_prediction` instead of `prediction`. Its gradient with respect
    // to `prediction` (at prediction == frozen_prediction) is what evaluate
    // returns, which is what the finite-difference tests check. For losses
    // without such denominators this equals evaluate(prediction, target).
    virtual T evaluate_frozen(const Matrix<T>& prediction, const Matrix<T>& frozen_prediction,
                              const Matrix<T>& target) const {
        (void)frozen_prediction;
        return evaluate(prediction, target, nullptr);
    }
};

} // namespace fusedngp
