#include "losses/cross_entropy.h"

namespace fusedngp {

template class CrossEntropyLoss<float>;
template class CrossEntropyLoss<double>;

} // namespace fusedngp
