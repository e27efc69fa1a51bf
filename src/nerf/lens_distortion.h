// OpenCV's radial + tangential lens distortion (k1 k2 p1 p2), the model of
// instant-ngp's transforms.json, on normalised camera coordinates. Host and
// device (ray generation on either side uses the same functions).
//
// (x, y) are the (dx, dy) of render/camera.h's camera_ray:
// ((px - cx) / fx, (py - cy) / fy), y growing downward as in OpenCV.
// With r2 = x^2 + y^2 and radial = 1 + k1 r2 + k2 r2^2:
//     x' = x radial + 2 p1 x y + p2 (r2 + 2 x^2)
//     y' = y radial + p1 (r2 + 2 y^2) + 2 p2 x y
// A pixel of a distorted image sits at (x', y'); its ray goes through the
// undistorted (x, y), which undistort() finds by Newton's method.
#pragma once

#include "geometry/vec3.h"

namespace fusedngp {

struct LensDistortion {
    float k1 = 0, k2 = 0, p1 = 0, p2 = 0;
    FUSEDNGP_HD bool any() const { return k1 != 0 || k2 != 0 || p1 != 0 || p2 != 0; }
};

FUSEDNGP_HD void distort(const LensDistortion& d, float x, float y, float& out_x, float& out_y) {
    float r2 = x * x + y * y;
    float radial = 1.f + r2 * (d.k1 + r2 * d.k2);
    out_x = x * radial + 2.f * d.p1 * x * y + d.p2 * (r2 + 2.f * x * x);
    out_y = y * radial + d.p1 * (r2 + 2.f * y * y) + 2.f * d.p2 * x * y;
}

// Inverts distort(): the (x, y) that distorts to (dist_x, dist_y). Newton's
// method from the distorted point with the analytic 2x2 Jacobian; stops when
// a step is below 1e-7 or after 16 steps (realistic lenses take 3 to 5).
FUSEDNGP_HD void undistort(const LensDistortion& d, float dist_x, float dist_y, float& out_x, float& out_y) {
    float x = dist_x, y = dist_y;
    for (int step = 0; step < 16; ++step) {
        float fx, fy;
        distort(d, x, y, fx, fy);
        float ex = fx - dist_x, ey = fy - dist_y;
        float r2 = x * x + y * y;
        float radial = 1.f + r2 * (d.k1 + r2 * d.k2);
        float radial_slope = 2.f * (d.k1 + 2.f * d.k2 * r2);  // d radial / d(x or y), divided by x or y
        float j00 = radial + radial_slope * x * x + 2.f * d.p1 * y + 6.f * d.p2 * x;
        float j01 = radial_slope * x * y + 2.f * d.p1 * x + 2.f * d.p2 * y;
        float j10 = radial_slope * x * y + 2.f * d.p1 * x + 2.f * d.p2 * y;
        float j11 = radial + radial_slope * y * y + 6.f * d.p1 * y + 2.f * d.p2 * x;
        float det = j00 * j11 - j01 * j10;
        if (fabsf(det) < 1e-12f) break;
        float step_x = (j11 * ex - j01 * ey) / det;
        float step_y = (j00 * ey - j10 * ex) / det;
        x -= step_x;
        y -= step_y;
        if (fabsf(step_x) + fabsf(step_y) < 1e-7f) break;
    }
    out_x = x;
    out_y = y;
}

} // namespace fusedngp
