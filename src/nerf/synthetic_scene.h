// A synthetic NeRF scene for tests and CI: a few opaque coloured spheres and
// axis-aligned boxes, an exact reference renderer, and a writer that saves
// views of it as a Blender/NeRF-synthetic dataset (transforms_*.json + RGBA
// PNGs). Real scenes cannot ship with the repository (licences), so the NeRF
// mode trains on this one and is checked against a stated PSNR.
//
// Coordinates. The scene and the Camera passed to the renderer live in our
// unit cube ([0,1]^3, y up, centre (0.5, 0.5, 0.5)), like every 3-D mode.
// The dataset files use the Blender world frame (right-handed, z up, scene
// centred at the origin):
//
//     world = kSyntheticWorldPerUnit * P(unit - 0.5),   P(x, y, z) = (z, x, y)
//     unit  = P^-1(world) / kSyntheticWorldPerUnit + 0.5,   P^-1(x, y, z) = (y, z, x)
//
// with kSyntheticWorldPerUnit = 1 / 0.33. P is a cyclic permutation (a
// rotation, so handedness is kept) that sends our up axis (unit y) to
// Blender's up axis (world z). The numbers are chosen so that instant-ngp's
// loader convention, unit = (world.y, world.z, world.x) * 0.33 + 0.5, gives
// back exactly our unit cube: a loader that follows it sees the primitives
// where SyntheticScene says they are. Directions map by P alone.
//
// Cameras in the files follow Blender: a camera looks along -z of its own
// frame, +y is up in the image, +x right. "transform_matrix" is the 4x4
// camera-to-world matrix whose columns are the camera's x (right), y (up),
// z (= -viewing direction) axes and its position, all in world coordinates;
// the last row is (0, 0, 0, 1). "camera_angle_x" is the horizontal field of
// view in radians; pixels are square and the principal point is the image
// centre, so fx = fy = 0.5 * width / tan(camera_angle_x / 2).
//
// Images: 8-bit RGBA PNG, straight (not premultiplied) alpha, values stored
// as rendered (no colour-space conversion). Alpha is the covered fraction of
// the pixel's k x k subsamples; RGB is the mean shaded colour of the covered
// subsamples (0 where nothing is hit), so compositing over a background b is
// rgb * alpha + b * (1 - alpha).
#pragma once

#include "io/image.h"
#include "render/camera.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

enum class PrimitiveKind { Sphere, Box };

// One opaque primitive in unit-cube coordinates.
struct Primitive {
    PrimitiveKind kind = PrimitiveKind::Sphere;
    Vec3 center{0.5f, 0.5f, 0.5f};
    float radius = 0.25f;              // spheres
    Vec3 half_extent{0.25f, 0.25f, 0.25f};  // boxes (axis-aligned)
    Vec3 color{1, 1, 1};               // RGB albedo in [0, 1]

    static Primitive sphere(Vec3 center, float radius, Vec3 color);
    static Primitive box(Vec3 center, Vec3 half_extent, Vec3 color);
    Box3 bounds() const;
};

struct SyntheticScene {
    std::vector<Primitive> primitives;
};

// Two spheres and two boxes of distinct colours (red, blue, green, yellow),
// all inside [0.1, 0.9]^3, overlapping a little so views show occlusion.
// The cube's centre lies inside the red sphere, so every camera looking at
// the centre sees the scene at its image centre.
SyntheticScene default_synthetic_scene();

// ---- the reference renderer ----

// The nearest hit along a ray (t > 0), with the outward unit normal there.
struct SceneHit {
    bool hit = false;
    float t = 0;
    Vec3 normal;
    Vec3 color;  // the primitive's albedo
};
SceneHit intersect_scene(const SyntheticScene& scene, const Ray& ray);

// Fixed directional light (unit length, unit-cube frame, pointing towards
// the light: up, right and towards +z), so faces and views differ in shade.
Vec3 synthetic_light_direction();
constexpr float kSyntheticAmbient = 0.3f;
constexpr float kSyntheticDiffuse = 0.7f;
// albedo * (0.3 + 0.7 max(0, n . l)); black on a miss.
Vec3 shade_hit(const SceneHit& hit);

// An RGBA image (ColorSpace::Srgb tag, values as rendered) of the scene seen
// by `camera`, with supersampling x supersampling subsamples per pixel on a
// regular grid (supersampling = 1: one ray through the pixel centre, alpha
// exactly 0 or 1). Throws InputError unless supersampling >= 1.
Image render_synthetic_view(const SyntheticScene& scene, const Camera& camera, int supersampling);

// ---- unit cube <-> Blender world (see the top of this file) ----

constexpr float kSyntheticWorldPerUnit = 1.0f / 0.33f;
Vec3 synthetic_world_from_unit(Vec3 unit_point);
Vec3 synthetic_unit_from_world(Vec3 world_point);
Vec3 synthetic_world_direction(Vec3 unit_direction);
Vec3 synthetic_unit_direction(Vec3 world_direction);

// Row-major 4x4, m[row][col].
using Matrix4 = std::array<std::array<double, 4>, 4>;
// The Blender camera-to-world matrix of a unit-cube pose, and back.
Matrix4 blender_transform_from_pose(const CameraPose& pose);
CameraPose pose_from_blender_transform(const Matrix4& m);

// ---- the dataset writer ----

struct SyntheticRig {
    float camera_distance_world = 4.0f;  // from the origin (Blender's scenes use ~4.03)
    float fov_x_degrees = 40.0f;         // horizontal; the scene fills about 2/3 of the frame
    float test_elevation_degrees = 30.0f;
    int supersampling = 4;
};

// Square pixels, principal point at the centre, the given horizontal fov.
CameraIntrinsics synthetic_intrinsics(uint32_t width, uint32_t height, float fov_x_degrees);

// Train cameras: a Fibonacci sphere of n points (the whole sphere, none at
// a pole) turned about the up axis by an angle drawn from `seed`. Test
// cameras: n evenly spaced on a ring at the rig's elevation, phase from
// `seed`. All at the rig's distance, looking at the scene centre with unit
// +y (world +z) as the up hint. Poses are in unit-cube coordinates.
std::vector<CameraPose> synthetic_train_poses(int n, uint32_t seed, const SyntheticRig& rig = {});
std::vector<CameraPose> synthetic_test_poses(int n, uint32_t seed, const SyntheticRig& rig = {});

// Writes dir/transforms_train.json, dir/transforms_test.json and
// dir/train/r_<i>.png, dir/test/r_<i>.png (directories created; every file
// written atomically). JSON: {"camera_angle_x": rad, "frames": [{"file_path":
// "./train/r_0", "transform_matrix": [[4 numbers] x 4 rows]}, ...]}, plus
// "w" and "h" (pixels) and instant-ngp's "scale": 0.33, "offset": [0.5, 0.5,
// 0.5] for readers that use them. The same arguments give identical bytes.
// Throws InputError (naming dir) unless n_train >= 1, n_test >= 0,
// width, height >= 1 and rig.supersampling >= 1, or when a file cannot be
// written.
void write_synthetic_dataset(const std::string& dir, const SyntheticScene& scene, int n_train, int n_test,
                             uint32_t width, uint32_t height, uint32_t seed, const SyntheticRig& rig = {});

} // namespace fusedngp
