// Launchers of the SDF metric kernels (kernels/geometry/sdf_metrics.cu),
// private to them and to their host wrapper gpu/geometry/sdf_metrics_device.cpp.
// Plain types only, so the .cu needs neither Eigen nor JSON.
#pragma once

#include "geometry/sdf_sampling_math.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

// points[3 i ..] = sdf_cube_point(key, first + i), i < n.
void launch_iou_points(uint64_t key, uint64_t first, uint32_t n, float* points, cudaStream_t stream);

// points[3 i ..] = sdf_near_surface_point(surface, key, first + i, band), i < n.
void launch_band_points(const SurfaceSamplerView& surface, uint64_t key, uint64_t first, uint32_t n, float band,
                        float* points, cudaStream_t stream);

// counts[0] += #{i : model[i] < 0 and truth[i] < 0}, counts[1] += #{... or ...}.
void launch_count_inside(const float* model, const float* truth, uint32_t n, unsigned long long* counts,
                         cudaStream_t stream);

// Fixed-size grid and scratch for launch_add_abs_difference: kAbsDiffBlocks doubles.
constexpr uint32_t kAbsDiffBlocks = 256;

// *sum += sum_i |a[i] - b[i]| in double, in an order fixed by n alone (the
// result does not vary from run to run). partials: kAbsDiffBlocks doubles.
void launch_add_abs_difference(const float* a, const float* b, uint32_t n, double* partials, double* sum,
                               cudaStream_t stream);

} // namespace fusedngp::gpu
