// Analytic signed distance fields on the device (sphere, torus): known
// answers for the GPU renderer, marching cubes and metrics tests, and the
// device twins of tests/mesh_test_util.h's sphere_sdf / torus_sdf.
#pragma once

#include "geometry/vec3.h"
#include "gpu/geometry/device_sdf_fn.h"

namespace fusedngp::gpu {

DeviceSdfFn device_sphere_sdf(Vec3 center, float radius);
DeviceSdfFn device_torus_sdf(Vec3 center, float major_radius, float minor_radius);

} // namespace fusedngp::gpu
