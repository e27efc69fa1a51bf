#include "gui/sdf_iou_probe.h"

#include "core/rng.h"

namespace fusedngp {

SdfIouProbe::SdfIouProbe(const SdfBatchFn& truth, uint32_t n_points, uint64_t seed) {
    Rng rng(seed);
    points_.resize(n_points, 3);
    for (uint32_t i = 0; i < n_points; ++i)
        for (int d = 0; d < 3; ++d) points_(i, d) = rng.next_float();
    truth(points_, values_);
    inside_.resize(n_points);
    for (uint32_t i = 0; i < n_points; ++i) {
        inside_[i] = values_(i, 0) < 0;
        truth_inside_ += inside_[i];
    }
}

double SdfIouProbe::measure(const SdfBatchFn& model) {
    model(points_, values_);
    uint32_t both = 0, either = 0;
    for (Eigen::Index i = 0; i < points_.rows(); ++i) {
        const bool predicted = values_(i, 0) < 0;
        both += predicted && inside_[i];
        either += predicted || inside_[i];
    }
    return either ? (double)both / (double)either : 1.0;
}

} // namespace fusedngp
