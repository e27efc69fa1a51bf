#include "losses/relative_losses.h"

namespace fusedngp {

template class RelativeL2Loss<float>;
template class RelativeL2Loss<double>;
template class RelativeL1Loss<float>;
template class RelativeL1Loss<double>;
template class RelativeL2LuminanceLoss<float>;
template class RelativeL2LuminanceLoss<double>;
template class MapeLoss<float>;
template class MapeLoss<double>;
template class SmapeLoss<float>;
template class SmapeLoss<double>;

} // namespace fusedngp
