#include "nerf/synthetic_scene.h"

#include "core/errors.h"
#include "core/math_constants.h"
#include "io/atomic_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <system_error>

namespace fusedngp {
namespace {

const Vec3 kSceneCenter{0.5f, 0.5f, 0.5f};

// Nearest t > 0 where the ray meets the sphere, or -1.
float intersect_sphere(const Primitive& s, const Ray& ray) {
    const Vec3 oc = ray.origin - s.center;
    const float b = dot(oc, ray.direction);
    const float c = dot(oc, oc) - s.radius * s.radius;
    const float discriminant = b * b - c;
    if (discriminant < 0) return -1;
    const float root = std::sqrt(discriminant);
    if (-b - root > 0) return -b - root;
    return -b + root > 0 ? -b + root : -1;  // origin inside: the exit point
}

// Slab test. Returns the nearest t > 0 (or -1) and the axis of the face hit.
float intersect_box(const Primitive& box, const Ray& ray, int* face_axis) {
    const Vec3 lo = box.center - box.half_extent, hi = box.center + box.half_extent;
    float t_enter = -1e30f, t_exit = 1e30f;
    int enter_axis = 0, exit_axis = 0;
    for (int a = 0; a < 3; ++a) {
        const float o = ray.origin[a], d = ray.direction[a];
        // Parallel to the slab: 1/d would be inf and 0*inf NaN on its planes.
        if (std::fabs(d) < 1e-12f) {
            if (o < lo[a] || o > hi[a]) return -1;
            continue;
        }
        float t0 = (lo[a] - o) / d, t1 = (hi[a] - o) / d;
        if (t0 > t1) std::swap(t0, t1);
        if (t0 > t_enter) { t_enter = t0; enter_axis = a; }
        if (t1 < t_exit) { t_exit = t1; exit_axis = a; }
    }
    if (t_enter > t_exit) return -1;
    if (t_enter > 0) { *face_axis = enter_axis; return t_enter; }
    if (t_exit > 0) { *face_axis = exit_axis; return t_exit; }
    return -1;
}

Vec3 box_normal(const Primitive& box, Vec3 point, int axis) {
    Vec3 n{0, 0, 0};
    n[axis] = point[axis] > box.center[axis] ? 1.f : -1.f;
    return n;
}

// A uniform angle in [0, 2 pi) from raw mt19937 bits: the engine's output is
// fixed by the standard, the library's distributions are not.
double uniform_angle(std::mt19937& rng) {
    return 2.0 * kPi * (double)(rng() >> 8) * (1.0 / 16777216.0);
}

float unit_camera_distance(const SyntheticRig& rig) { return rig.camera_distance_world / kSyntheticWorldPerUnit; }

CameraPose looking_at_center(Vec3 outward, const SyntheticRig& rig) {
    return look_at(kSceneCenter + outward * unit_camera_distance(rig), kSceneCenter, Vec3{0, 1, 0});
}

[[noreturn]] void fail_dataset(const std::string& dir, const std::string& problem) {
    throw InputError("cannot write synthetic dataset '" + dir + "': " + problem);
}

void check_dataset_arguments(const std::string& dir, int n_train, int n_test, uint32_t width, uint32_t height,
                             const SyntheticRig& rig) {
    if (n_train < 1) fail_dataset(dir, "n_train must be >= 1 (got " + std::to_string(n_train) + ")");
    if (n_test < 0) fail_dataset(dir, "n_test must be >= 0 (got " + std::to_string(n_test) + ")");
    if (width < 1 || height < 1) fail_dataset(dir, "width and height must be >= 1");
    if (rig.supersampling < 1) fail_dataset(dir, "supersampling must be >= 1");
}

void make_directory(const std::string& dir, const std::string& path) {
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error) fail_dataset(dir, "cannot create '" + path + "': " + error.message());
}

nlohmann::json matrix_json(const Matrix4& m) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : m) rows.push_back(nlohmann::json(std::vector<double>(row.begin(), row.end())));
    return rows;
}

// Renders and saves one split; returns its transforms JSON.
nlohmann::json write_split(const std::string& dir, const std::string& split, const std::vector<CameraPose>& poses,
                           const SyntheticScene& scene, const CameraIntrinsics& intrinsics, const SyntheticRig& rig) {
    make_directory(dir, dir + "/" + split);
    nlohmann::json frames = nlohmann::json::array();
    for (size_t i = 0; i < poses.size(); ++i) {
        const std::string stem = split + "/r_" + std::to_string(i);
        save_png(render_synthetic_view(scene, Camera{poses[i], intrinsics}, rig.supersampling), dir + "/" + stem + ".png");
        frames.push_back({{"file_path", "./" + stem}, {"transform_matrix", matrix_json(blender_transform_from_pose(poses[i]))}});
    }
    nlohmann::json transforms;
    transforms["camera_angle_x"] = (double)rig.fov_x_degrees * kPi / 180.0;
    transforms["w"] = intrinsics.width;
    transforms["h"] = intrinsics.height;
    transforms["scale"] = 0.33;
    transforms["offset"] = {0.5, 0.5, 0.5};
    transforms["frames"] = frames;
    return transforms;
}

void write_json(const std::string& path, const nlohmann::json& j) {
    const std::string text = j.dump(2) + "\n";
    write_file_atomically(path, text.data(), text.size());
}

} // namespace

Primitive Primitive::sphere(Vec3 center, float radius, Vec3 color) {
    Primitive p;
    p.kind = PrimitiveKind::Sphere;
    p.center = center;
    p.radius = radius;
    p.half_extent = Vec3{radius, radius, radius};
    p.color = color;
    return p;
}

Primitive Primitive::box(Vec3 center, Vec3 half_extent, Vec3 color) {
    Primitive p;
    p.kind = PrimitiveKind::Box;
    p.center = center;
    p.half_extent = half_extent;
    p.color = color;
    return p;
}

Box3 Primitive::bounds() const {
    const Vec3 h = kind == PrimitiveKind::Sphere ? Vec3{radius, radius, radius} : half_extent;
    Box3 b;
    b.extend(center - h);
    b.extend(center + h);
    return b;
}

SyntheticScene default_synthetic_scene() {
    SyntheticScene scene;
    scene.primitives = {
        Primitive::sphere({0.38f, 0.50f, 0.47f}, 0.15f, {0.90f, 0.15f, 0.10f}),                 // red
        Primitive::sphere({0.66f, 0.58f, 0.40f}, 0.11f, {0.15f, 0.30f, 0.90f}),                 // blue
        Primitive::box({0.55f, 0.30f, 0.60f}, {0.17f, 0.07f, 0.13f}, {0.20f, 0.80f, 0.25f}),    // green slab
        Primitive::box({0.52f, 0.66f, 0.66f}, {0.07f, 0.09f, 0.07f}, {0.95f, 0.85f, 0.20f}),    // yellow block
    };
    return scene;
}

SceneHit intersect_scene(const SyntheticScene& scene, const Ray& ray) {
    SceneHit nearest;
    for (const Primitive& p : scene.primitives) {
        int face_axis = 0;
        const float t = p.kind == PrimitiveKind::Sphere ? intersect_sphere(p, ray) : intersect_box(p, ray, &face_axis);
        if (t <= 0 || (nearest.hit && t >= nearest.t)) continue;
        const Vec3 point = ray.origin + ray.direction * t;
        nearest.hit = true;
        nearest.t = t;
        nearest.normal = p.kind == PrimitiveKind::Sphere ? normalize(point - p.center) : box_normal(p, point, face_axis);
        nearest.color = p.color;
    }
    return nearest;
}

Vec3 synthetic_light_direction() { return normalize(Vec3{0.4f, 0.8f, 0.45f}); }

Vec3 shade_hit(const SceneHit& hit) {
    if (!hit.hit) return Vec3{0, 0, 0};
    const float lambert = std::max(0.f, dot(hit.normal, synthetic_light_direction()));
    return hit.color * (kSyntheticAmbient + kSyntheticDiffuse * lambert);
}

Image render_synthetic_view(const SyntheticScene& scene, const Camera& camera, int supersampling) {
    if (supersampling < 1) throw InputError("render_synthetic_view: supersampling must be >= 1");
    const int w = (int)camera.intrinsics.width, h = (int)camera.intrinsics.height;
    Image image = make_image(w, h, 4, ColorSpace::Srgb);
    const int k = supersampling;
    const float samples = (float)(k * k);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            Vec3 color_sum{0, 0, 0};
            int hits = 0;
            for (int sy = 0; sy < k; ++sy) {
                for (int sx = 0; sx < k; ++sx) {
                    const float px = (float)x + ((float)sx + 0.5f) / (float)k;
                    const float py = (float)y + ((float)sy + 0.5f) / (float)k;
                    const SceneHit hit = intersect_scene(scene, camera_ray(camera, px, py));
                    if (!hit.hit) continue;
                    color_sum += shade_hit(hit);
                    ++hits;
                }
            }
            // Straight alpha: the colour of what covers the pixel, not darkened by the misses.
            const Vec3 rgb = hits > 0 ? color_sum / (float)hits : Vec3{0, 0, 0};
            for (int c = 0; c < 3; ++c) image.at(x, y, c) = rgb[c];
            image.at(x, y, 3) = (float)hits / samples;
        }
    }
    return image;
}

Vec3 synthetic_world_direction(Vec3 d) { return Vec3{d.z, d.x, d.y}; }
Vec3 synthetic_unit_direction(Vec3 d) { return Vec3{d.y, d.z, d.x}; }

Vec3 synthetic_world_from_unit(Vec3 p) { return synthetic_world_direction(p - kSceneCenter) * kSyntheticWorldPerUnit; }
Vec3 synthetic_unit_from_world(Vec3 p) { return synthetic_unit_direction(p) / kSyntheticWorldPerUnit + kSceneCenter; }

Matrix4 blender_transform_from_pose(const CameraPose& pose) {
    // Blender's camera looks down its -z, so the third column is -forward.
    const Vec3 columns[4] = {synthetic_world_direction(pose.right), synthetic_world_direction(pose.up),
                             synthetic_world_direction(-pose.forward), synthetic_world_from_unit(pose.position)};
    Matrix4 m{};
    for (int col = 0; col < 4; ++col) {
        for (int row = 0; row < 3; ++row) m[row][col] = (double)columns[col][row] + 0.0;  // + 0.0: no "-0.0" in the JSON
    }
    m[3] = {0.0, 0.0, 0.0, 1.0};
    return m;
}

CameraPose pose_from_blender_transform(const Matrix4& m) {
    auto column = [&](int col) { return Vec3{(float)m[0][col], (float)m[1][col], (float)m[2][col]}; };
    CameraPose pose;
    pose.right = synthetic_unit_direction(column(0));
    pose.up = synthetic_unit_direction(column(1));
    pose.forward = -synthetic_unit_direction(column(2));
    pose.position = synthetic_unit_from_world(column(3));
    return pose;
}

CameraIntrinsics synthetic_intrinsics(uint32_t width, uint32_t height, float fov_x_degrees) {
    CameraIntrinsics k;
    k.width = width;
    k.height = height;
    k.fx = k.fy = (float)(0.5 * width / std::tan(0.5 * fov_x_degrees * kPi / 180.0));
    k.cx = 0.5f * (float)width;
    k.cy = 0.5f * (float)height;
    return k;
}

std::vector<CameraPose> synthetic_train_poses(int n, uint32_t seed, const SyntheticRig& rig) {
    std::mt19937 rng(seed);
    const double turn = uniform_angle(rng);
    const double golden_angle = kPi * (3.0 - std::sqrt(5.0));
    std::vector<CameraPose> poses;
    for (int i = 0; i < n; ++i) {
        // Equal-area bands in height, so the points cover the sphere evenly.
        const double height = 1.0 - (2.0 * i + 1.0) / n;
        const double ring = std::sqrt(std::max(0.0, 1.0 - height * height));
        const double phi = turn + golden_angle * i;
        const Vec3 outward{(float)(ring * std::sin(phi)), (float)height, (float)(ring * std::cos(phi))};
        poses.push_back(looking_at_center(outward, rig));
    }
    return poses;
}

std::vector<CameraPose> synthetic_test_poses(int n, uint32_t seed, const SyntheticRig& rig) {
    std::mt19937 rng(seed);
    uniform_angle(rng);  // the train turn: the test phase is the second draw
    const double phase = uniform_angle(rng);
    const double elevation = rig.test_elevation_degrees * kPi / 180.0;
    std::vector<CameraPose> poses;
    for (int i = 0; i < n; ++i) {
        const double yaw = phase + 2.0 * kPi * i / n;
        const Vec3 outward{(float)(std::cos(elevation) * std::sin(yaw)), (float)std::sin(elevation),
                           (float)(std::cos(elevation) * std::cos(yaw))};
        poses.push_back(looking_at_center(outward, rig));
    }
    return poses;
}

void write_synthetic_dataset(const std::string& dir, const SyntheticScene& scene, int n_train, int n_test,
                             uint32_t width, uint32_t height, uint32_t seed, const SyntheticRig& rig) {
    check_dataset_arguments(dir, n_train, n_test, width, height, rig);
    make_directory(dir, dir);
    const CameraIntrinsics intrinsics = synthetic_intrinsics(width, height, rig.fov_x_degrees);
    write_json(dir + "/transforms_train.json",
               write_split(dir, "train", synthetic_train_poses(n_train, seed, rig), scene, intrinsics, rig));
    write_json(dir + "/transforms_test.json",
               write_split(dir, "test", synthetic_test_poses(n_test, seed, rig), scene, intrinsics, rig));
}

} // namespace fusedngp
