#include "render/camera_io.h"

#include "geometry/vec3_json.h"
#include "io/atomic_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

namespace fusedngp {
namespace {

// ---- command-line specs ----

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
    throw InputError("camera spec \"" + spec + "\": " + why + " (expected orbit:YAW,PITCH,DISTANCE, e.g. orbit:30,20,2.5)");
}

// One finite number filling all of `text` except surrounding spaces.
bool parse_float(const std::string& text, float& out) {
    const char* begin = text.c_str();
    char* end = nullptr;
    errno = 0;
    const float v = std::strtof(begin, &end);
    if (end == begin || errno == ERANGE || !std::isfinite(v)) return false;
    while (*end == ' ') ++end;
    if (*end != '\0') return false;
    out = v;
    return true;
}

// ---- camera files ----

[[noreturn]] void bad_field(const std::string& path, const std::string& field, const std::string& why) {
    throw InputError("camera file '" + path + "': field \"" + field + "\": " + why);
}

float read_number(const json& obj, const std::string& path, const std::string& key) {
    const json& v = obj.at(key);
    if (!v.is_number()) bad_field(path, key, "expected a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 3.0e38) bad_field(path, key, "must be a finite float, got " + v.dump());
    return (float)d;
}

Vec3 read_vec3(const json& obj, const std::string& path, const std::string& key) {
    const json& v = obj.at(key);
    if (!v.is_array() || v.size() != 3) bad_field(path, key, "expected an array of 3 numbers, got " + v.dump());
    Vec3 out;
    for (int i = 0; i < 3; ++i) {
        if (!v[i].is_number() || !std::isfinite(v[i].get<double>())) {
            bad_field(path, key, "expected an array of 3 finite numbers, got " + v.dump());
        }
        out[i] = (float)v[i].get<double>();
    }
    return out;
}

uint32_t read_size(const json& obj, const std::string& path, const std::string& key, uint32_t fallback) {
    if (!obj.contains(key)) return fallback;
    const json& v = obj.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65536) {
        bad_field(path, key, "expected an integer in [1, 65536], got " + v.dump());
    }
    return (uint32_t)v.get<int64_t>();
}

void reject_unknown_fields(const json& obj, const std::string& path) {
    static const std::set<std::string> known = {"position", "look_at", "up", "orbit", "forward", "right",
                                                "fov_y_degrees", "fx", "fy", "cx", "cy", "width", "height"};
    for (const auto& item : obj.items()) {
        if (!known.count(item.key())) {
            bad_field(path, item.key(), "unknown (known: position, look_at, up, orbit, forward, right, "
                                        "fov_y_degrees, fx, fy, cx, cy, width, height)");
        }
    }
}

CameraPose read_orbit(const json& obj, const std::string& path) {
    const json& v = obj.at("orbit");
    if (!v.is_array() || v.size() != 3) bad_field(path, "orbit", "expected [yaw, pitch, distance], got " + v.dump());
    const Vec3 angles = read_vec3(obj, path, "orbit");
    if (!(angles.z > 0)) bad_field(path, "orbit", "distance must be > 0, got " + v.dump());
    for (const char* other : {"position", "forward", "right", "up"}) {
        if (obj.contains(other)) bad_field(path, other, "not allowed with \"orbit\"");
    }
    const Vec3 target = obj.contains("look_at") ? read_vec3(obj, path, "look_at") : Vec3{0.5f, 0.5f, 0.5f};
    return orbit_pose(angles.x, angles.y, angles.z, target);
}

CameraPose read_look_at(const json& obj, const std::string& path) {
    const Vec3 position = read_vec3(obj, path, "position");
    const Vec3 target = read_vec3(obj, path, "look_at");
    const Vec3 up = obj.contains("up") ? read_vec3(obj, path, "up") : Vec3{0, 1, 0};
    if (length(target - position) < 1e-6f) bad_field(path, "look_at", "equals \"position\": no viewing direction");
    if (length(up) < 1e-6f) bad_field(path, "up", "must not be zero");
    return look_at(position, target, up);
}

CameraPose read_frame(const json& obj, const std::string& path) {
    CameraPose pose;
    pose.position = read_vec3(obj, path, "position");
    for (const char* key : {"right", "up"}) {
        if (!obj.contains(key)) bad_field(path, key, "missing (an explicit frame needs forward, right and up)");
    }
    pose.forward = read_vec3(obj, path, "forward");
    pose.right = read_vec3(obj, path, "right");
    pose.up = read_vec3(obj, path, "up");
    const Vec3 axes[3] = {pose.forward, pose.right, pose.up};
    const char* names[3] = {"forward", "right", "up"};
    for (int i = 0; i < 3; ++i) {
        if (std::fabs(length(axes[i]) - 1.f) > 1e-3f) bad_field(path, names[i], "must have unit length");
        for (int j = i + 1; j < 3; ++j) {
            if (std::fabs(dot(axes[i], axes[j])) > 1e-3f) {
                bad_field(path, names[j], std::string("must be perpendicular to \"") + names[i] + "\"");
            }
        }
    }
    return pose;
}

CameraPose read_pose(const json& obj, const std::string& path) {
    if (obj.contains("orbit")) return read_orbit(obj, path);
    if (!obj.contains("position")) bad_field(path, "position", "missing (give \"orbit\" or \"position\")");
    if (obj.contains("forward") && obj.contains("look_at")) bad_field(path, "forward", "not allowed with \"look_at\"");
    if (obj.contains("forward")) return read_frame(obj, path);
    if (!obj.contains("look_at")) bad_field(path, "look_at", "missing (give \"look_at\" or an explicit frame)");
    return read_look_at(obj, path);
}

CameraIntrinsics read_intrinsics(const json& obj, const std::string& path, uint32_t width, uint32_t height) {
    const char* pinhole[4] = {"fx", "fy", "cx", "cy"};
    int n_pinhole = 0;
    for (const char* key : pinhole) n_pinhole += obj.contains(key) ? 1 : 0;
    if (n_pinhole == 0) {
        const float fov = obj.contains("fov_y_degrees") ? read_number(obj, path, "fov_y_degrees") : kDefaultFovYDegrees;
        if (!(fov > 0 && fov < 180)) bad_field(path, "fov_y_degrees", "must be in (0, 180)");
        return intrinsics_from_fov(width, height, fov);
    }
    if (obj.contains("fov_y_degrees")) bad_field(path, "fov_y_degrees", "not allowed with fx, fy, cx, cy");
    for (const char* key : pinhole) {
        if (!obj.contains(key)) bad_field(path, key, "missing (fx, fy, cx, cy go together)");
    }
    CameraIntrinsics k;
    k.width = width;
    k.height = height;
    k.fx = read_number(obj, path, "fx");
    k.fy = read_number(obj, path, "fy");
    k.cx = read_number(obj, path, "cx");
    k.cy = read_number(obj, path, "cy");
    if (!(k.fx > 0)) bad_field(path, "fx", "must be > 0");
    if (!(k.fy > 0)) bad_field(path, "fy", "must be > 0");
    return k;
}

} // namespace

CameraPose parse_camera_spec(const std::string& spec) {
    const std::string prefix = "orbit:";
    if (spec.compare(0, prefix.size(), prefix) != 0) bad_spec(spec, "unknown kind");
    std::vector<std::string> parts;
    std::stringstream rest(spec.substr(prefix.size()));
    for (std::string part; std::getline(rest, part, ',');) parts.push_back(part);
    if (parts.size() != 3 || spec.back() == ',') bad_spec(spec, "needs exactly three numbers");
    float v[3];
    for (int i = 0; i < 3; ++i) {
        if (!parse_float(parts[i], v[i])) bad_spec(spec, "\"" + parts[i] + "\" is not a number");
    }
    if (!(v[2] > 0)) bad_spec(spec, "the distance must be > 0");
    return orbit_pose(v[0], v[1], v[2]);
}

Camera load_camera_file(const std::string& path, uint32_t default_width, uint32_t default_height) {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    json obj;
    try {
        obj = json::parse(bytes.begin(), bytes.end());
    } catch (const json::exception& e) {  // parse errors, and number overflow (1e999)
        throw InputError("camera file '" + path + "': not valid JSON: " + e.what());
    }
    return camera_from_json(obj, path, default_width, default_height);
}

Camera camera_from_json(const json& obj, const std::string& path, uint32_t default_width, uint32_t default_height) {
    if (!obj.is_object()) throw InputError("camera file '" + path + "': expected a JSON object, got " + obj.type_name());
    reject_unknown_fields(obj, path);
    Camera camera;
    camera.pose = read_pose(obj, path);
    const uint32_t width = read_size(obj, path, "width", default_width);
    const uint32_t height = read_size(obj, path, "height", default_height);
    camera.intrinsics = read_intrinsics(obj, path, width, height);
    return camera;
}

json camera_to_json(const Camera& c) {
    const CameraIntrinsics& k = c.intrinsics;
    return json{{"position", vec3_json(c.pose.position)},
                {"forward", vec3_json(c.pose.forward)},
                {"right", vec3_json(c.pose.right)},
                {"up", vec3_json(c.pose.up)},
                {"fx", k.fx}, {"fy", k.fy}, {"cx", k.cx}, {"cy", k.cy},
                {"width", k.width}, {"height", k.height}};
}

void save_camera_file(const Camera& c, const std::string& path) {
    const std::string text = camera_to_json(c).dump(2) + "\n";
    write_file_atomically(path, text.data(), text.size());
}

} // namespace fusedngp
