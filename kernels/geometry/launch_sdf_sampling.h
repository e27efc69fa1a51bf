// Launchers of the SDF sampling kernels (kernels/geometry/sdf_sampling.cu),
// private to them and to their host wrapper gpu/geometry/sdf_sampling_device.cpp.
// Plain types only, so the .cu needs neither Eigen nor JSON.
#pragma once

#include "geometry/sdf_sampling_math.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

// points[3 i .. 3 i + 2] = sdf_training_point(surface, layout, key, i) for
// i < layout.batch(); `surface` points at device memory.
void launch_sdf_training_points(const SurfaceSamplerView& surface, const SdfSampleLayout& layout, uint64_t key,
                                float* points, cudaStream_t stream);

} // namespace fusedngp::gpu
