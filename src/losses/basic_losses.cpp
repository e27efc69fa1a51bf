#include "losses/basic_losses.h"

#include <stdexcept>

namespace fusedngp {

template <typename T>
HuberLoss<T>::HuberLoss(T delta) : delta_(delta) {
    if (!(delta > T(0))) throw std::invalid_argument("HuberLoss: delta must be positive");
}

template class L2Loss<float>;
template class L2Loss<double>;
template class L1Loss<float>;
template class L1Loss<double>;
template class HuberLoss<float>;
template class HuberLoss<double>;

} // namespace fusedngp
