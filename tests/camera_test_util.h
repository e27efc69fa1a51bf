// Checks the camera tests share: vectors within a tolerance, and a pose
// frame that is orthonormal with the convention of render/camera.h.
#pragma once

#include "render/camera.h"

#include <gtest/gtest.h>

namespace fusedngp::test {

inline void expect_vec_near(Vec3 a, Vec3 b, float tol, const char* what = "") {
    EXPECT_NEAR(a.x, b.x, tol) << what;
    EXPECT_NEAR(a.y, b.y, tol) << what;
    EXPECT_NEAR(a.z, b.z, tol) << what;
}

// Unit axes at right angles, right-handed: the camera looks along -z, so
// right x up = -forward.
inline void expect_orthonormal_right_handed(const CameraPose& p) {
    EXPECT_NEAR(length(p.right), 1.f, 1e-5f);
    EXPECT_NEAR(length(p.up), 1.f, 1e-5f);
    EXPECT_NEAR(length(p.forward), 1.f, 1e-5f);
    EXPECT_NEAR(dot(p.right, p.up), 0.f, 1e-5f);
    EXPECT_NEAR(dot(p.right, p.forward), 0.f, 1e-5f);
    EXPECT_NEAR(dot(p.up, p.forward), 0.f, 1e-5f);
    expect_vec_near(cross(p.right, p.up), -p.forward, 1e-5f, "right x up = -forward (camera looks along -z)");
}

} // namespace fusedngp::test
