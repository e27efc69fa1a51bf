#include "render/camera_path.h"

#include "core/errors.h"
#include "core/json_fields.h"
#include "io/atomic_file.h"
#include "render/camera_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fusedngp {

namespace {

[[noreturn]] void bad_path(const std::string& file, const std::string& field, const std::string& why) {
    throw InputError(file + ": " + field + ": " + why);
}

struct Quat {
    double w = 1, x = 0, y = 0, z = 0;
};

// The rotation whose columns are right, up and -forward (a camera looks along its -z).
Quat quat_from_pose(const CameraPose& p) {
    const Vec3 back = p.forward * -1.f;
    const double m[3][3] = {{p.right.x, p.up.x, back.x}, {p.right.y, p.up.y, back.y}, {p.right.z, p.up.z, back.z}};
    const double trace = m[0][0] + m[1][1] + m[2][2];
    Quat q;
    if (trace > 0) {
        const double s = 2 * std::sqrt(trace + 1);
        q = {0.25 * s, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s};
    } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
        const double s = 2 * std::sqrt(1 + m[0][0] - m[1][1] - m[2][2]);
        q = {(m[2][1] - m[1][2]) / s, 0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s};
    } else if (m[1][1] > m[2][2]) {
        const double s = 2 * std::sqrt(1 + m[1][1] - m[0][0] - m[2][2]);
        q = {(m[0][2] - m[2][0]) / s, (m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s};
    } else {
        const double s = 2 * std::sqrt(1 + m[2][2] - m[0][0] - m[1][1]);
        q = {(m[1][0] - m[0][1]) / s, (m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s};
    }
    return q;
}

void pose_from_quat(const Quat& q, CameraPose& p) {
    const double w = q.w, x = q.x, y = q.y, z = q.z;
    p.right = Vec3{(float)(1 - 2 * (y * y + z * z)), (float)(2 * (x * y + w * z)), (float)(2 * (x * z - w * y))};
    p.up = Vec3{(float)(2 * (x * y - w * z)), (float)(1 - 2 * (x * x + z * z)), (float)(2 * (y * z + w * x))};
    const Vec3 back{(float)(2 * (x * z + w * y)), (float)(2 * (y * z - w * x)), (float)(1 - 2 * (x * x + y * y))};
    p.forward = back * -1.f;
}

Quat slerp(Quat a, Quat b, double u) {
    double d = a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z;
    if (d < 0) {  // the shortest arc: q and -q are the same rotation
        b = {-b.w, -b.x, -b.y, -b.z};
        d = -d;
    }
    double wa = 1 - u, wb = u;
    if (d < 0.9995) {  // nearly equal rotations: normalised lerp avoids dividing by sin ~ 0
        const double angle = std::acos(d), s = std::sin(angle);
        wa = std::sin((1 - u) * angle) / s;
        wb = std::sin(u * angle) / s;
    }
    Quat q{wa * a.w + wb * b.w, wa * a.x + wb * b.x, wa * a.y + wb * b.y, wa * a.z + wb * b.z};
    const double n = std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    return {q.w / n, q.x / n, q.y / n, q.z / n};
}

uint32_t size_field(const json& obj, const std::string& file, const char* key, uint32_t fallback) {
    if (!obj.contains(key)) return fallback;
    const json& v = obj.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65536)
        bad_path(file, key, "expected an integer in [1, 65536], got " + v.dump());
    return (uint32_t)v.get<int64_t>();
}

Camera keyframe_camera(const json& cam, const std::string& file, const std::string& field, uint32_t w, uint32_t h) {
    if (cam.is_string()) {
        std::filesystem::path p(cam.get<std::string>());
        if (p.is_relative()) p = std::filesystem::path(file).parent_path() / p;
        return load_camera_file(p.string(), w, h);
    }
    if (!cam.is_object()) bad_path(file, field, "expected a camera object or a camera file name, got " + cam.dump());
    return camera_from_json(cam, file + ": " + field, w, h);
}

CameraKeyframe read_keyframe(const json& k, const std::string& file, size_t i, uint32_t w, uint32_t h) {
    const std::string field = "keyframes[" + std::to_string(i) + "]";
    if (!k.is_object()) bad_path(file, field, "expected an object {\"time\": seconds, \"camera\": ...}");
    for (const auto& item : k.items()) {
        if (item.key() != "time" && item.key() != "camera") bad_path(file, field + "." + item.key(), "unknown field (time, camera)");
    }
    if (!k.contains("time") || !k.at("time").is_number() || !std::isfinite(k.at("time").get<double>()))
        bad_path(file, field + ".time", "missing or not a finite number");
    if (!k.contains("camera")) bad_path(file, field + ".camera", "missing");
    return {k.at("time").get<double>(), keyframe_camera(k.at("camera"), file, field + ".camera", w, h)};
}

} // namespace

CameraPath load_camera_path(const std::string& file, uint32_t default_width, uint32_t default_height) {
    const std::vector<uint8_t> bytes = read_file_bytes(file);
    json obj;
    try {
        obj = json::parse(bytes.begin(), bytes.end());
    } catch (const json::exception& e) {  // parse errors, and number overflow (1e999)
        throw InputError(file + ": camera path is not valid JSON: " + e.what());
    }
    if (!obj.is_object()) throw InputError(file + ": camera path must be a JSON object with \"keyframes\"");
    for (const auto& item : obj.items()) {
        if (item.key() != "width" && item.key() != "height" && item.key() != "keyframes")
            bad_path(file, item.key(), "unknown field (width, height, keyframes)");
    }
    CameraPath path;
    path.width = size_field(obj, file, "width", default_width);
    path.height = size_field(obj, file, "height", default_height);
    if (!obj.contains("keyframes") || !obj.at("keyframes").is_array() || obj.at("keyframes").empty())
        bad_path(file, "keyframes", "missing or not a non-empty array");
    const json& keys = obj.at("keyframes");
    for (size_t i = 0; i < keys.size(); ++i) {
        path.keyframes.push_back(read_keyframe(keys[i], file, i, path.width, path.height));
        if (i > 0 && !(path.keyframes[i].time > path.keyframes[i - 1].time))
            bad_path(file, "keyframes[" + std::to_string(i) + "].time", "must be greater than the previous keyframe's");
    }
    return path;
}

Camera camera_at(const CameraPath& path, double time) {
    const auto& keys = path.keyframes;
    // Keyframes a and b around `time` (the same one outside their span).
    size_t b = 0;
    while (b < keys.size() && keys[b].time < time) ++b;
    const size_t a = b == 0 ? 0 : b - 1;
    if (b == keys.size()) b = a;
    const double span = keys[b].time - keys[a].time;
    const double u = span > 0 ? std::clamp((time - keys[a].time) / span, 0.0, 1.0) : 0.0;
    const Camera& ca = keys[a].camera;
    const Camera& cb = keys[b].camera;
    const float fu = (float)u;
    Camera c;
    c.pose.position = ca.pose.position * (1 - fu) + cb.pose.position * fu;
    pose_from_quat(slerp(quat_from_pose(ca.pose), quat_from_pose(cb.pose), u), c.pose);
    const float fov = fov_y_degrees(ca.intrinsics) * (1 - fu) + fov_y_degrees(cb.intrinsics) * fu;
    c.intrinsics = intrinsics_from_fov(path.width, path.height, fov);
    return c;
}

std::vector<Camera> camera_path_frames(const CameraPath& path, double fps) {
    const double t0 = path.keyframes.front().time, duration = path.keyframes.back().time - t0;
    // The small allowance keeps the last keyframe a frame despite rounding of duration * fps.
    const size_t n = (size_t)std::floor(duration * fps + 1e-9) + 1;
    std::vector<Camera> frames;
    for (size_t i = 0; i < n; ++i) frames.push_back(camera_at(path, t0 + (double)i / fps));
    return frames;
}

} // namespace fusedngp
