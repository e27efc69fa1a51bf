// The GPU twins of geometry/sdf_metrics.h's field metrics: the same points
// (same counters, so the same seed gives the same points as the CPU), the
// fields evaluated on the device in chunks of kDeviceSdfMetricChunk points
// (bounded memory: 20 bytes a point, 40 MiB), the counts and sums reduced on
// the device, one synchronisation at the end. Definitions: sdf_metrics.h.
#pragma once

#include "geometry/sdf_metrics.h"
#include "gpu/geometry/device_sdf_fn.h"
#include "gpu/geometry/sdf_sampling_device.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

constexpr uint32_t kDeviceSdfMetricChunk = 1u << 21;

// sdf_iou on the device. The SDF mode uses n_points >= 2^24.
IouResult device_sdf_iou(const DeviceSdfFn& model, const DeviceSdfFn& truth, uint64_t n_points, uint64_t seed,
                         cudaStream_t stream);

// sdf_band_error on the device. Throws InputError when `surface` is empty.
BandErrorResult device_sdf_band_error(const DeviceSdfSampler& surface, const DeviceSdfFn& model,
                                      const DeviceSdfFn& truth, uint64_t n_points, uint64_t seed,
                                      cudaStream_t stream, float band = kDefaultSdfBand);

} // namespace fusedngp::gpu
