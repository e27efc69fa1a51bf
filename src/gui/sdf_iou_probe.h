// The live IoU readout of the SDF view: intersection over union of the
// model's inside (value < 0) and the ground truth's inside, over one fixed
// set of points, uniform in the unit cube (seeded), with the truth's signs
// computed once. Cheap enough to run every second, and the same points every
// time, so the curve is comparable; not the final metric (a denser,
// surface-weighted one belongs to the mode's evaluation).
#pragma once

#include "geometry/sdf_field.h"

#include <cstdint>
#include <vector>

namespace fusedngp {

class SdfIouProbe {
public:
    static constexpr uint32_t kDefaultPoints = 1u << 14;

    SdfIouProbe(const SdfBatchFn& truth, uint32_t n_points = kDefaultPoints, uint64_t seed = 0x10u);
    // 1 = the same inside; 0 = disjoint. 1 when both insides are empty.
    double measure(const SdfBatchFn& model);
    const Matrix<float>& points() const { return points_; }
    uint32_t truth_inside() const { return truth_inside_; }

private:
    Matrix<float> points_, values_;
    std::vector<uint8_t> inside_;
    uint32_t truth_inside_ = 0;
};

} // namespace fusedngp
