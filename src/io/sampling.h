// Continuous image lookups and training batches for the image-fitting mode.
//
// Coordinates: u (x, left to right) and v (y, top to bottom) in [0,1]^2 cover
// the whole image; pixel (i, j) has its centre at ((i+0.5)/W, (j+0.5)/H).
// Bilinear interpolation between the four nearest centres; outside the
// outermost centres the edge pixels are repeated (clamp to edge), so every
// (u, v), even outside [0,1], has a value.
//
// Templated on the scalar T (float and double are instantiated): coordinates
// and interpolation weights are computed in T from the float pixels, so the
// fp64 tests see no float rounding in the interpolation.
#pragma once

#include "core/common.h"
#include "core/rng.h"
#include "io/image.h"
#include "io/sample_positions.h"

#include <cstddef>

namespace fusedngp {

// Writes image.channels values to `out`.
template <typename T>
void sample_bilinear(const Image& image, T u, T v, T* out);

// Draws n coordinates in [0,1)^2 and their targets.
// coords becomes n x 2 (u, v), targets n x image.channels; both are resized
// only if their shape differs (no allocation when reused). Per sample, u is
// drawn before v: float uses rng.next_float(), double rng.next_double(), so a
// seed gives the same batch every run (the lookups run in parallel, the draws
// do not).
//
// `sampling` (io/sample_positions.h) shapes the draws: stratified positions
// replace the first side^2 samples' draws by jittered grid cells; pixel-centre
// targets snap each coordinate to its pixel's centre and take that pixel's
// value. The defaults are instant-ngp's (stratified, pixel centres).
template <typename T>
void sample_batch(const Image& image, size_t n, Rng& rng, Matrix<T>& coords, Matrix<T>& targets,
                  const ImageSampling& sampling = ImageSampling{});

// All pixel centres, (W*H) x 2, row by row from the top (row j*W + i holds
// pixel (i, j)), i.e. the same order as Image::pixels.
template <typename T>
Matrix<T> pixel_center_coords(int width, int height);

} // namespace fusedngp
