// DeviceBvh: a TriangleBvh (geometry/bvh.h) in device memory and the
// ground-truth queries on it: signed distances for the SDF mode's training
// targets and the closest triangle for the metrics. The kernels
// (kernels/geometry/signed_distance.cu) call the same geometry/bvh_queries.h
// functions as GroundTruthSdf's host loops, their CPU twin. No nvcc needed
// to include this header.
#pragma once

#include "geometry/bvh.h"
#include "geometry/bvh_queries.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_sdf_fn.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

// The kernels behind DeviceBvh, on any BVH already in device memory (no
// argument checks: sign_rays above kMaxSignRays is clamped). n == 0 is a no-op.
void launch_signed_distances(const BvhView& bvh, const float* d_points, uint32_t n, float* d_values,
                             uint32_t sign_rays, SignMethod sign, cudaStream_t stream);
void launch_closest(const BvhView& bvh, const float* d_points, uint32_t n, float* d_distances, float* d_normals,
                    cudaStream_t stream);

class DeviceBvh {
public:
    // Synchronous upload (the pseudo-normals too, when the BVH has them).
    explicit DeviceBvh(const TriangleBvh& bvh);

    // Device pointers, for kernels of other units that query the BVH.
    BvhView view() const;
    uint32_t depth() const { return depth_; }

    // d_points [n][3] (row-major) -> d_values [n], negative inside by `sign`;
    // sign_rays odd in 1..kMaxSignRays (InputError otherwise). Enqueued on `stream`.
    void signed_distances(const float* d_points, uint32_t n, float* d_values, uint32_t sign_rays,
                          cudaStream_t stream, SignMethod sign = SignMethod::RayVote) const;

    // signed_distances as a DeviceSdfFn. It holds device pointers: this
    // DeviceBvh (or the one it was moved into) must outlive it.
    DeviceSdfFn field(uint32_t sign_rays, SignMethod sign = SignMethod::RayVote) const;

    // d_points [n][3] -> d_distances [n] (unsigned) and d_normals [n][3], the
    // unit normal of the closest triangle (as GroundTruthSdf::closest).
    void closest(const float* d_points, uint32_t n, float* d_distances, float* d_normals, cudaStream_t stream) const;

private:
    DeviceBuffer<BvhNode> nodes_;
    DeviceBuffer<BvhTriangle> triangles_;
    DeviceBuffer<BvhPseudoNormals> pseudo_normals_;  // empty when the BVH has none
    uint32_t depth_ = 0;
};

} // namespace fusedngp::gpu
