// Shared loop of the losses that are a sum of per-element terms.
//
// Each loss (the Derived class, CRTP so the per-element code inlines) gives:
//   T value(T p, T t, T d) const      -- the per-element loss
//   T gradient(T p, T t, T d) const   -- d value / d p with d held constant
// where d is the "stop-gradient" quantity: whatever the loss's denominator
// depends on, taken from the prediction in evaluate and from the frozen
// prediction in evaluate_frozen. By default d is the element's own prediction;
// a loss may override
//   T frozen_input(const T* prediction_row, Eigen::Index j, Eigen::Index n_dims) const
// (RelativeL2Luminance uses the row's luminance). Losses without such a
// denominator simply ignore d.
//
// The loss is the mean over all batch * n_dims elements and the gradient is
// that of the mean, as loss.h specifies. The loop is serial: it is cheap next
// to the network, and a fixed summation order keeps the value bit-identical
// run to run. The sum is accumulated in double so that float losses over large
// batches do not drift.
#pragma once

#include "losses/loss.h"

#include <stdexcept>
#include <string>

namespace fusedngp {

template <typename T, typename Derived>
class ElementwiseLoss : public Loss<T> {
public:
    T evaluate(const Matrix<T>& prediction, const Matrix<T>& target, Matrix<T>* dpred) const override {
        return accumulate(prediction, prediction, target, dpred);
    }

    T evaluate_frozen(const Matrix<T>& prediction, const Matrix<T>& frozen_prediction,
                      const Matrix<T>& target) const override {
        if (frozen_prediction.rows() != prediction.rows() || frozen_prediction.cols() != prediction.cols()) {
            throw std::invalid_argument(this->otype() + " loss: frozen prediction shape differs from prediction");
        }
        return accumulate(prediction, frozen_prediction, target, nullptr);
    }

    // Default stop-gradient input: the element's own (frozen) prediction.
    T frozen_input(const T* prediction_row, Eigen::Index j, Eigen::Index /*n_dims*/) const {
        return prediction_row[j];
    }

private:
    T accumulate(const Matrix<T>& prediction, const Matrix<T>& frozen, const Matrix<T>& target,
                 Matrix<T>* dpred) const {
        if (prediction.rows() != target.rows() || prediction.cols() != target.cols()) {
            throw std::invalid_argument(this->otype() + " loss: prediction is " + shape(prediction) +
                                        " but target is " + shape(target));
        }
        const Eigen::Index rows = prediction.rows(), cols = prediction.cols();
        if (dpred) dpred->resize(rows, cols);
        const Eigen::Index n_elements = rows * cols;
        if (n_elements == 0) return T(0);

        const Derived& self = static_cast<const Derived&>(*this);
        const T inv_n = T(1) / T(n_elements);
        double sum = 0;
        for (Eigen::Index i = 0; i < rows; ++i) {
            const T* p_row = prediction.data() + i * cols;
            const T* f_row = frozen.data() + i * cols;
            const T* t_row = target.data() + i * cols;
            for (Eigen::Index j = 0; j < cols; ++j) {
                const T d = self.frozen_input(f_row, j, cols);
                sum += (double)self.value(p_row[j], t_row[j], d);
                if (dpred) (*dpred)(i, j) = self.gradient(p_row[j], t_row[j], d) * inv_n;
            }
        }
        return T(sum / (double)n_elements);
    }

    static std::string shape(const Matrix<T>& m) {
        return std::to_string(m.rows()) + "x" + std::to_string(m.cols());
    }
};

// sign(x) in {-1, 0, 1}: the subgradient we use for |x| (0 at the kink).
template <typename T>
inline T sign_of(T x) {
    return T((x > T(0)) - (x < T(0)));
}

} // namespace fusedngp
