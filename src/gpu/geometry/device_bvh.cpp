#include "gpu/geometry/device_bvh.h"

#include "geometry/signed_distance.h"

namespace fusedngp::gpu {

DeviceBvh::DeviceBvh(const TriangleBvh& bvh)
    : nodes_(bvh.nodes.size()), triangles_(bvh.triangles.size()), pseudo_normals_(bvh.pseudo_normals.size()),
      depth_(bvh.depth) {
    nodes_.upload(bvh.nodes);
    triangles_.upload(bvh.triangles);
    if (!bvh.pseudo_normals.empty()) pseudo_normals_.upload(bvh.pseudo_normals);
}

BvhView DeviceBvh::view() const {
    return BvhView{nodes_.data(), triangles_.data(), (uint32_t)nodes_.size(), (uint32_t)triangles_.size(),
                   pseudo_normals_.size() ? pseudo_normals_.data() : nullptr};
}

DeviceSdfFn DeviceBvh::field(uint32_t sign_rays, SignMethod sign) const {
    check_sign_rays(sign_rays, "DeviceBvh::field");
    const BvhView bvh = view();
    return [bvh, sign_rays, sign](const float* d_points, uint32_t n, float* d_values, cudaStream_t stream) {
        launch_signed_distances(bvh, d_points, n, d_values, sign_rays, sign, stream);
    };
}

void DeviceBvh::signed_distances(const float* d_points, uint32_t n, float* d_values, uint32_t sign_rays,
                                 cudaStream_t stream, SignMethod sign) const {
    check_sign_rays(sign_rays, "DeviceBvh::signed_distances");
    launch_signed_distances(view(), d_points, n, d_values, sign_rays, sign, stream);
}

void DeviceBvh::closest(const float* d_points, uint32_t n, float* d_distances, float* d_normals, cudaStream_t stream) const {
    launch_closest(view(), d_points, n, d_distances, d_normals, stream);
}

} // namespace fusedngp::gpu
