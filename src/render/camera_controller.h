// CameraController: the interactive camera of the 3-D views (the desktop
// app's SDF view now, NeRF's next). Pure logic, no GL or window: input comes
// in as plain numbers (pixels dragged, wheel steps, keys held, seconds), so
// it is unit-testable and any front end can drive it.
//
// The camera orbits a target point: yaw (degrees about +y; 0 = looking along
// -z from the +z side), pitch (degrees, positive = above the target, kept
// inside +-89 so "up" stays defined) and distance. Panning and flying move
// the target with the camera. Units are the model's unit cube.
#pragma once

#include "render/camera.h"

#include <cstdint>

namespace fusedngp {

// Keys held this frame for fly(): W/S forward/back, A/D left/right, E/Q up/down.
struct FlyKeys {
    bool forward = false, back = false, left = false, right = false, up = false, down = false;
    bool fast = false;  // shift: kFastFlyFactor times the speed
};

class CameraController {
public:
    static constexpr float kDefaultYaw = 30.f, kDefaultPitch = 20.f, kDefaultFov = 45.f;
    static constexpr float kMinFov = 10.f, kMaxFov = 120.f;
    static constexpr float kMaxPitch = 89.f;
    static constexpr float kOrbitDegreesPerPixel = 0.3f;
    static constexpr float kZoomPerWheelStep = 0.85f;  // distance factor per wheel notch towards the target
    static constexpr float kFlySpeed = 0.5f;           // scene diameters per second
    static constexpr float kFastFlyFactor = 4.f;
    static constexpr float kFitMargin = 1.1f;          // fit leaves this much room around the bounding sphere

    // Starts at reset(): the 3/4 view of `scene`, fitted.
    explicit CameraController(Box3 scene = Box3{{0, 0, 0}, {1, 1, 1}});

    // Left drag: the scene turns with the cursor (dragging right turns it
    // right, i.e. the camera moves left around the target).
    void orbit(float dx_pixels, float dy_pixels);
    // Right or middle drag: the point at the target's depth under the cursor
    // stays under it. `view_height_pixels` is the view's height on screen.
    void pan(float dx_pixels, float dy_pixels, float view_height_pixels);
    // Wheel: positive steps move towards the target (distance shrinks geometrically).
    void zoom(float wheel_steps);
    // WASD/QE held for `dt_seconds`: camera and target move together along
    // the view's forward/right/up at kFlySpeed scene diameters per second.
    void fly(const FlyKeys& keys, float dt_seconds);
    void set_fov(float fov_y_degrees);  // clamped to [kMinFov, kMaxFov]
    // An explicit view (scripted runs, a saved camera): pitch clamped as in orbit().
    void set_view(float yaw_degrees, float pitch_degrees, float distance, Vec3 target);
    // Looks from `pose` (a NeRF training view): same position and viewing
    // direction, the target where the direction passes closest to the scene
    // box's centre. The orbit keeps "right" horizontal, so a rolled pose
    // loses its roll; pitch is clamped as in orbit().
    void look_from(const CameraPose& pose, float fov_y_degrees);

    // The default view of the scene box given at construction.
    void reset();
    // Keeps the direction; aims at the box's centre from the distance at
    // which its bounding sphere fits the narrower of the two fields of view.
    void fit(const Box3& box, float aspect = 1.f);

    CameraPose pose() const;
    // Pinhole with the vertical fov, principal point at the image centre.
    Camera camera(uint32_t width, uint32_t height) const;

    float yaw() const { return yaw_; }
    float pitch() const { return pitch_; }
    float distance() const { return distance_; }
    float fov() const { return fov_; }
    Vec3 target() const { return target_; }
    // Bumped on every change, so a view knows when its picture is stale.
    uint64_t version() const { return version_; }

private:
    void changed() { ++version_; }
    float scene_diameter() const;

    Box3 scene_;
    float yaw_ = kDefaultYaw, pitch_ = kDefaultPitch, distance_ = 2.f, fov_ = kDefaultFov;
    Vec3 target_{0.5f, 0.5f, 0.5f};
    uint64_t version_ = 0;
};

} // namespace fusedngp
