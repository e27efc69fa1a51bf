// Image quality metrics, computed on the stored values with peak 1 (see the
// colour convention in io/image.h). Sums run sequentially in double, so
// results are bit-identical run to run. Both images must have the same width,
// height and channel count (InputError naming both files otherwise).
#pragma once

#include "io/image.h"

namespace fusedngp {

// Mean squared error over all pixels and channels (alpha included).
double mse(const Image& a, const Image& b);

// Peak signal-to-noise ratio with peak 1: 10 * log10(1 / mse).
// Identical images give +infinity (std::numeric_limits<double>::infinity()).
double psnr(const Image& a, const Image& b);

// Converts an MSE to PSNR (peak 1); +infinity for mse == 0.
double psnr_from_mse(double mse_value);

// Mean SSIM (Wang et al. 2004): 11x11 Gaussian window, sigma 1.5, data range
// 1, C1 = 0.01^2, C2 = 0.03^2; computed over every window position fully inside
// the image ("valid"), per channel, then averaged over positions and channels.
// Needs at least 11x11 pixels (InputError otherwise).
double ssim(const Image& a, const Image& b);

} // namespace fusedngp
