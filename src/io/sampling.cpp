#include "io/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fusedngp {
namespace {

// One axis of a bilinear lookup: the two pixel indices and the weight of the
// second. Continuous position p = u*size - 0.5 puts centres on integers.
template <typename T>
struct AxisLookup {
    int lo, hi;
    T weight_hi;
};

template <typename T>
AxisLookup<T> lookup_axis(T u, int size) {
    T p = u * (T)size - (T)0.5;
    if (std::isnan(p)) p = 0;  // a NaN coordinate must not become an out-of-range index
    const T floor_p = std::floor(p);
    const int i = (int)std::clamp(floor_p, (T)-1, (T)size);  // clamp first: no int overflow for huge |u|
    const T weight = std::clamp(p - floor_p, (T)0, (T)1);
    return {std::clamp(i, 0, size - 1), std::clamp(i + 1, 0, size - 1), weight};
}

template <typename T>
T uniform01(Rng& rng);
template <>
float uniform01<float>(Rng& rng) { return rng.next_float(); }
template <>
double uniform01<double>(Rng& rng) { return rng.next_double(); }

} // namespace

template <typename T>
void sample_bilinear(const Image& image, T u, T v, T* out) {
    const AxisLookup<T> x = lookup_axis(u, image.width);
    const AxisLookup<T> y = lookup_axis(v, image.height);
    const T wx1 = x.weight_hi, wx0 = (T)1 - wx1;
    const T wy1 = y.weight_hi, wy0 = (T)1 - wy1;
    for (int c = 0; c < image.channels; ++c) {
        const T top = wx0 * (T)image.at(x.lo, y.lo, c) + wx1 * (T)image.at(x.hi, y.lo, c);
        const T bottom = wx0 * (T)image.at(x.lo, y.hi, c) + wx1 * (T)image.at(x.hi, y.hi, c);
        out[c] = wy0 * top + wy1 * bottom;
    }
}

template <typename T>
void sample_batch(const Image& image, size_t n, Rng& rng, Matrix<T>& coords, Matrix<T>& targets,
                  const ImageSampling& sampling) {
    const Eigen::Index rows = (Eigen::Index)n;
    if (coords.rows() != rows || coords.cols() != 2) coords.resize(rows, 2);
    if (targets.rows() != rows || targets.cols() != image.channels) targets.resize(rows, image.channels);
    for (Eigen::Index i = 0; i < rows; ++i) {
        coords(i, 0) = uniform01<T>(rng);
        coords(i, 1) = uniform01<T>(rng);
    }
    if (sampling.positions == SamplePositions::Stratified && n <= UINT32_MAX) {
        const uint32_t side = strata_side((uint32_t)n);
        const StrataOrder order = make_strata_order(side, sampling.order);
        const Eigen::Index stratified = (Eigen::Index)side * side;
        for (Eigen::Index i = 0; i < stratified; ++i) {
            const uint32_t cell = stratum_at(order, (uint32_t)i);
            coords(i, 0) = jitter_in_cell<T>(coords(i, 0), cell % side, side);
            coords(i, 1) = jitter_in_cell<T>(coords(i, 1), cell / side, side);
        }
    }
    if (sampling.targets == SampleTargets::PixelCentres) {
#pragma omp parallel for schedule(static)
        for (Eigen::Index i = 0; i < rows; ++i) {
            const int px = pixel_of<T>(coords(i, 0), image.width), py = pixel_of<T>(coords(i, 1), image.height);
            coords(i, 0) = pixel_centre<T>(px, image.width);
            coords(i, 1) = pixel_centre<T>(py, image.height);
            for (int c = 0; c < image.channels; ++c) targets(i, c) = (T)image.at(px, py, c);
        }
        return;
    }
#pragma omp parallel for schedule(static)
    for (Eigen::Index i = 0; i < rows; ++i) {
        sample_bilinear<T>(image, coords(i, 0), coords(i, 1), targets.row(i).data());
    }
}

template <typename T>
Matrix<T> pixel_center_coords(int width, int height) {
    Matrix<T> coords((Eigen::Index)width * height, 2);
    for (int j = 0; j < height; ++j) {
        for (int i = 0; i < width; ++i) {
            const Eigen::Index row = (Eigen::Index)j * width + i;
            coords(row, 0) = ((T)i + (T)0.5) / (T)width;
            coords(row, 1) = ((T)j + (T)0.5) / (T)height;
        }
    }
    return coords;
}

template void sample_bilinear<float>(const Image&, float, float, float*);
template void sample_bilinear<double>(const Image&, double, double, double*);
template void sample_batch<float>(const Image&, size_t, Rng&, Matrix<float>&, Matrix<float>&, const ImageSampling&);
template void sample_batch<double>(const Image&, size_t, Rng&, Matrix<double>&, Matrix<double>&,
                                   const ImageSampling&);
template Matrix<float> pixel_center_coords<float>(int, int);
template Matrix<double> pixel_center_coords<double>(int, int);

} // namespace fusedngp
