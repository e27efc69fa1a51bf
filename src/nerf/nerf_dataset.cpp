// transforms.json parsing and validation, and the multi-threaded image load.
// Conventions and the world -> model transform: nerf_dataset.h.
#include "nerf/nerf_dataset.h"

#include "core/errors.h"
#include "core/math_constants.h"
#include "io/image.h"

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace fusedngp {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double kOrthonormalTolerance = 1e-3;

std::string format_number(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", v);
    return buffer;
}

// Errors name the file and the field: "scene/t.json: frames[3].fl_x: ...".
[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& problem) {
    throw InputError(file + ": " + (field.empty() ? "" : field + ": ") + problem);
}

const char* json_type_name(const json& v) { return v.type_name(); }

json read_json_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "", "cannot open the file");
    std::stringstream text;
    text << in.rdbuf();
    try {
        return json::parse(text.str());
    } catch (const json::exception& e) {  // parse errors, and number overflow (1e999)
        fail(path, "", std::string("invalid JSON (") + e.what() + ")");
    }
}

// An optional finite number; absent or null -> nullopt.
std::optional<double> optional_number(const json& obj, const std::string& key, const std::string& file,
                                      const std::string& prefix) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) fail(file, prefix + key, std::string("expected a number, got ") + json_type_name(*it));
    double v = it->get<double>();
    if (!std::isfinite(v)) fail(file, prefix + key, "not a finite number");
    return v;
}

double positive(std::optional<double> v, const std::string& file, const std::string& field) {
    if (*v <= 0) fail(file, field, format_number(*v) + " must be positive");
    return *v;
}

// The fields that may sit at the top level and be overridden per frame.
struct IntrinsicFields {
    std::optional<double> fl_x, fl_y, angle_x, angle_y, cx, cy, w, h, k1, k2, p1, p2;
};

void read_intrinsics(const json& obj, const std::string& file, const std::string& prefix, IntrinsicFields& f) {
    auto take = [&](std::optional<double>& slot, const char* key) {
        if (auto v = optional_number(obj, key, file, prefix)) slot = v;
    };
    take(f.fl_x, "fl_x");
    take(f.fl_y, "fl_y");
    take(f.angle_x, "camera_angle_x");
    take(f.angle_y, "camera_angle_y");
    take(f.cx, "cx");
    take(f.cy, "cy");
    take(f.w, "w");
    take(f.h, "h");
    take(f.k1, "k1");
    take(f.k2, "k2");
    take(f.p1, "p1");
    take(f.p2, "p2");
}

void check_angle(std::optional<double> angle, const std::string& file, const std::string& field) {
    if (angle && !(*angle > 0 && *angle < kPi)) fail(file, field, format_number(*angle) + " must be in (0, pi) radians");
}

uint32_t image_extent(std::optional<double> v, const std::string& file, const std::string& field) {
    if (*v < 1 || *v > 65536 || *v != std::floor(*v)) fail(file, field, format_number(*v) + " must be a whole number of pixels in [1, 65536]");
    return (uint32_t)*v;
}

// The checks that need no image: ranges, and (for a frame) a focal length
// from the frame or the top level.
void validate_intrinsics(const IntrinsicFields& f, const std::string& file, const std::string& prefix,
                         bool require_focal) {
    if (f.w) image_extent(f.w, file, prefix + "w");
    if (f.h) image_extent(f.h, file, prefix + "h");
    check_angle(f.angle_x, file, prefix + "camera_angle_x");
    check_angle(f.angle_y, file, prefix + "camera_angle_y");
    if (f.fl_x) positive(f.fl_x, file, prefix + "fl_x");
    if (f.fl_y) positive(f.fl_y, file, prefix + "fl_y");
    if (require_focal && !f.fl_x && !f.fl_y && !f.angle_x && !f.angle_y)
        fail(file, "camera_angle_x", "missing (no camera_angle_x, fl_x, camera_angle_y or fl_y at the top level or in " +
                                         prefix.substr(0, prefix.size() - 1) + ")");
}

// Intrinsics once the image size is known (fields validated already).
CameraIntrinsics finish_intrinsics(const IntrinsicFields& f, uint32_t image_w, uint32_t image_h,
                                   const std::string& file, const std::string& prefix) {
    CameraIntrinsics k;
    k.width = f.w ? (uint32_t)*f.w : image_w;
    k.height = f.h ? (uint32_t)*f.h : image_h;
    if (k.width != image_w || k.height != image_h)
        fail(file, prefix + "w/h", std::to_string(k.width) + "x" + std::to_string(k.height) + " but the image is " +
                                       std::to_string(image_w) + "x" + std::to_string(image_h));
    std::optional<double> fx, fy;
    if (f.fl_x) fx = f.fl_x;
    else if (f.angle_x) fx = 0.5 * k.width / std::tan(0.5 * *f.angle_x);
    if (f.fl_y) fy = f.fl_y;
    else if (f.angle_y) fy = 0.5 * k.height / std::tan(0.5 * *f.angle_y);
    k.fx = (float)(fx ? *fx : *fy);
    k.fy = (float)(fy ? *fy : *fx);
    k.cx = (float)(f.cx ? *f.cx : 0.5 * k.width);
    k.cy = (float)(f.cy ? *f.cy : 0.5 * k.height);
    return k;
}

LensDistortion distortion_of(const IntrinsicFields& f) {
    auto value = [](std::optional<double> v) { return v ? (float)*v : 0.f; };
    return LensDistortion{value(f.k1), value(f.k2), value(f.p1), value(f.p2)};
}

// transform_matrix: 3 or 4 rows of 4 numbers; a rigid camera-to-world pose.
void read_transform(const json& frame, const std::string& file, const std::string& prefix, float out[3][4]) {
    const std::string field = prefix + "transform_matrix";
    auto it = frame.find("transform_matrix");
    if (it == frame.end()) fail(file, field, "missing");
    const json& m = *it;
    if (!m.is_array() || (m.size() != 3 && m.size() != 4)) fail(file, field, "expected 3 or 4 rows of 4 numbers");
    double rows[4][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1}};
    for (size_t r = 0; r < m.size(); ++r) {
        if (!m[r].is_array() || m[r].size() != 4) fail(file, field, "row " + std::to_string(r) + " is not 4 numbers");
        for (size_t c = 0; c < 4; ++c) {
            if (!m[r][c].is_number()) fail(file, field, "row " + std::to_string(r) + " holds a " + json_type_name(m[r][c]));
            rows[r][c] = m[r][c].get<double>();
            if (!std::isfinite(rows[r][c]))
                fail(file, field, "not finite (row " + std::to_string(r) + ", column " + std::to_string(c) + ")");
        }
    }
    const double last[4] = {0, 0, 0, 1};
    for (int c = 0; c < 4; ++c)
        if (std::fabs(rows[3][c] - last[c]) > kOrthonormalTolerance) fail(file, field, "row 3 is not (0, 0, 0, 1)");
    for (int r = 0; r < 3; ++r) {
        double len = std::sqrt(rows[r][0] * rows[r][0] + rows[r][1] * rows[r][1] + rows[r][2] * rows[r][2]);
        if (std::fabs(len - 1) > kOrthonormalTolerance)
            fail(file, field, "not orthonormal (row " + std::to_string(r) + " has length " + format_number(len) + ")");
    }
    for (int a = 0; a < 3; ++a)
        for (int b = a + 1; b < 3; ++b) {
            double d = rows[a][0] * rows[b][0] + rows[a][1] * rows[b][1] + rows[a][2] * rows[b][2];
            if (std::fabs(d) > kOrthonormalTolerance)
                fail(file, field, "not orthonormal (rows " + std::to_string(a) + " and " + std::to_string(b) +
                                      " have dot product " + format_number(d) + ")");
        }
    double det = rows[0][0] * (rows[1][1] * rows[2][2] - rows[1][2] * rows[2][1]) -
                 rows[0][1] * (rows[1][0] * rows[2][2] - rows[1][2] * rows[2][0]) +
                 rows[0][2] * (rows[1][0] * rows[2][1] - rows[1][1] * rows[2][0]);
    if (det < 0) fail(file, field, "a reflection (determinant -1), not a rotation");
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) out[r][c] = (float)rows[r][c];
}

CameraPose pose_to_unit(const float m[3][4], float scale, Vec3 offset) {
    auto column = [&](int c) { return Vec3{m[0][c], m[1][c], m[2][c]}; };
    CameraPose pose;
    pose.position = nerf_world_to_unit(column(3), scale, offset);
    pose.right = nerf_direction_to_unit(column(0));
    pose.up = nerf_direction_to_unit(column(1));
    pose.forward = nerf_direction_to_unit(-column(2));
    return pose;
}

float read_aabb_scale(const json& root, const std::string& file) {
    auto v = optional_number(root, "aabb_scale", file, "");
    if (!v) return 1;
    bool power_of_two = false;
    for (int p = 1; p <= 128; p *= 2) power_of_two |= (*v == p);
    if (!power_of_two) fail(file, "aabb_scale", format_number(*v) + " is not a power of two in [1, 128]");
    return (float)*v;
}

float read_scale(const json& root, const std::string& file) {
    auto v = optional_number(root, "scale", file, "");
    if (!v) return 0.33f;
    return (float)positive(v, file, "scale");
}

Vec3 read_offset(const json& root, const std::string& file) {
    auto it = root.find("offset");
    if (it == root.end() || it->is_null()) return {0.5f, 0.5f, 0.5f};
    if (!it->is_array() || it->size() != 3) fail(file, "offset", "expected an array of 3 numbers");
    Vec3 o;
    for (int i = 0; i < 3; ++i) {
        const json& v = (*it)[(size_t)i];
        if (!v.is_number() || !std::isfinite(v.get<double>())) fail(file, "offset", "expected an array of 3 finite numbers");
        o[i] = v.get<float>();
    }
    return o;
}

// The image a file_path names, relative to the json's folder. Blender's
// paths have no extension: when the path as written is missing, the usual
// extensions are appended in turn. Empty when none exists.
std::string find_image(const fs::path& base, const std::string& file_path) {
    fs::path p = fs::path(file_path);
    if (p.is_relative()) p = base / p;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
    for (const char* ext : {".png", ".jpg", ".jpeg", ".exr"}) {
        fs::path candidate = p;
        candidate += ext;
        if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    return "";
}

bool is_float_image(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char magic[4] = {};
    in.read(reinterpret_cast<char*>(magic), 4);
    bool exr = magic[0] == 0x76 && magic[1] == 0x2f && magic[2] == 0x31 && magic[3] == 0x01;
    return exr || stbi_is_hdr(path.c_str());
}

// Lens models we do not apply (fisheye, higher radial terms): named once.
void note_unsupported(const json& obj, std::vector<std::string>& found) {
    for (const char* key : {"k3", "k4"}) {
        auto it = obj.find(key);
        if (it != obj.end() && it->is_number() && it->get<double>() != 0) found.push_back(key);
    }
    auto fisheye = obj.find("is_fisheye");
    if (fisheye != obj.end() && fisheye->is_boolean() && fisheye->get<bool>()) found.push_back("is_fisheye");
}

struct DecodedImage {
    uint32_t width = 0, height = 0;
    std::vector<uint8_t> rgba;
    bool from_float = false;
};

// Linear float sources (EXR, HDR) through io/image's loaders, sRGB-encoded.
DecodedImage decode_float_image(const std::string& path) {
    Image image = convert_color_space(load_image(path), ColorSpace::Srgb);
    DecodedImage out{(uint32_t)image.width, (uint32_t)image.height, {}, true};
    out.rgba.resize(image.pixel_count() * 4);
    auto quantize = [](float v) { return (uint8_t)std::lround(std::clamp(v, 0.f, 1.f) * 255.f); };
    for (size_t i = 0; i < image.pixel_count(); ++i) {
        const float* px = image.pixels.data() + i * (size_t)image.channels;
        bool gray = image.channels <= 2;
        float r = px[0], g = gray ? px[0] : px[1], b = gray ? px[0] : px[2];
        float a = image.has_alpha() ? px[image.channels - 1] : 1.f;
        uint8_t* o = out.rgba.data() + i * 4;
        o[0] = quantize(r), o[1] = quantize(g), o[2] = quantize(b), o[3] = quantize(a);
    }
    return out;
}

struct StbPixelsFree {
    void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

DecodedImage decode_rgba8(const std::string& path) {
    if (is_float_image(path)) return decode_float_image(path);
    int w = 0, h = 0, channels = 0;
    // stb expands 1-3 channels to RGBA (alpha 255) and 16-bit PNG to 8 bits.
    std::unique_ptr<stbi_uc, StbPixelsFree> pixels(stbi_load(path.c_str(), &w, &h, &channels, 4));
    if (!pixels) {
        const char* reason = stbi_failure_reason();
        throw InputError(path + ": cannot decode the image (" + (reason ? reason : "unknown reason") + ")");
    }
    DecodedImage out{(uint32_t)w, (uint32_t)h, {}, false};
    out.rgba.assign(pixels.get(), pixels.get() + (size_t)w * h * 4);
    return out;
}

// Decodes paths[1..] into `images` on worker threads (paths[0] is decoded by
// the caller, which sized `images`). The error of the lowest frame wins, so
// the message does not depend on the thread count.
void decode_remaining(const std::vector<std::string>& paths, NerfImages& images, const NerfLoadOptions& options,
                      const std::string& json_path, std::atomic<size_t>& float_sources) {
    const size_t total = paths.size();
    std::atomic<size_t> next{1};
    std::atomic<bool> failed{false};
    std::mutex mutex;  // guards done, the progress callback and the errors
    size_t done = 1;
    size_t error_frame = SIZE_MAX;
    std::exception_ptr error;

    auto worker = [&]() {
        for (size_t i = next++; i < total && !failed; i = next++) {
            try {
                DecodedImage image = decode_rgba8(paths[i]);
                if (image.width != images.width || image.height != images.height)
                    fail(json_path, "frames", "images of mixed sizes: " + paths[0] + " is " + std::to_string(images.width) +
                                                  "x" + std::to_string(images.height) + ", " + paths[i] + " is " +
                                                  std::to_string(image.width) + "x" + std::to_string(image.height));
                if (image.from_float) ++float_sources;
                std::copy(image.rgba.begin(), image.rgba.end(), images.rgba.begin() + (std::ptrdiff_t)(i * images.frame_bytes()));
                std::lock_guard<std::mutex> lock(mutex);
                ++done;
                if (options.progress) options.progress(done, total);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex);
                if (i < error_frame) error_frame = i, error = std::current_exception();
                failed = true;
            }
        }
    };
    unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = (unsigned)std::min<size_t>(threads, std::max<size_t>(total - 1, 1));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

struct ParsedFrame {
    std::string image_path;
    IntrinsicFields intrinsics;
    std::string prefix;  // "frames[3]."
    float transform[3][4];
};

} // namespace

Vec3 nerf_world_to_unit(Vec3 p_world, float scale, Vec3 offset) {
    Vec3 q = p_world * scale + offset;
    return {q.y, q.z, q.x};
}

Vec3 nerf_direction_to_unit(Vec3 d_world) { return {d_world.y, d_world.z, d_world.x}; }

Vec3 nerf_unit_to_world(Vec3 p_unit, float scale, Vec3 offset) {
    return (nerf_direction_to_world(p_unit) - offset) / scale;
}

Vec3 nerf_direction_to_world(Vec3 d_unit) { return {d_unit.z, d_unit.x, d_unit.y}; }

Box3 nerf_scene_box(const NerfDataset& dataset) {
    Vec3 half{0.5f * dataset.aabb_scale, 0.5f * dataset.aabb_scale, 0.5f * dataset.aabb_scale};
    Vec3 centre{0.5f, 0.5f, 0.5f};
    return Box3{centre - half, centre + half};
}

NerfSplitPaths resolve_nerf_paths(const std::string& path) {
    std::error_code ec;
    fs::path p(path);
    auto sibling = [&](const fs::path& dir, const char* name) {
        fs::path s = dir / name;
        return fs::is_regular_file(s, ec) ? s.string() : std::string();
    };
    NerfSplitPaths out;
    if (fs::is_directory(p, ec)) {
        out.train = sibling(p, "transforms_train.json");
        if (out.train.empty()) {
            out.train = sibling(p, "transforms.json");
            if (out.train.empty()) throw InputError(path + ": folder has no transforms.json or transforms_train.json");
            return out;
        }
        out.test = sibling(p, "transforms_test.json");
        out.val = sibling(p, "transforms_val.json");
        return out;
    }
    if (!fs::exists(p, ec)) throw InputError(path + ": no such file or folder");
    if (p.extension() != ".json") throw InputError(path + ": neither a folder nor a .json transforms file");
    out.train = path;
    if (p.filename() == "transforms_train.json") {
        out.test = sibling(p.parent_path(), "transforms_test.json");
        out.val = sibling(p.parent_path(), "transforms_val.json");
    }
    return out;
}

NerfDataset load_nerf_dataset(const std::string& json_path, const NerfLoadOptions& options,
                              std::vector<std::string>* warnings) {
    auto warn = [&](const std::string& text) {
        if (warnings) warnings->push_back(text);
    };
    const std::string& file = json_path;
    json root = read_json_file(file);
    if (!root.is_object()) fail(file, "", std::string("expected a JSON object, got ") + json_type_name(root));

    NerfDataset dataset;
    dataset.source = file;
    dataset.aabb_scale = read_aabb_scale(root, file);
    dataset.scale = read_scale(root, file);
    dataset.offset = read_offset(root, file);
    IntrinsicFields shared;
    read_intrinsics(root, file, "", shared);
    validate_intrinsics(shared, file, "", false);  // so a bad top-level value is named as such
    std::vector<std::string> unsupported;
    note_unsupported(root, unsupported);

    auto frames_it = root.find("frames");
    if (frames_it == root.end()) fail(file, "frames", "missing");
    if (!frames_it->is_array()) fail(file, "frames", std::string("expected an array, got ") + json_type_name(*frames_it));
    if (frames_it->empty()) fail(file, "frames", "no frames");

    const fs::path base = fs::path(file).parent_path();
    std::vector<ParsedFrame> parsed;
    std::string first_missing;
    for (size_t i = 0; i < frames_it->size(); ++i) {
        const json& frame = (*frames_it)[i];
        ParsedFrame p;
        p.prefix = "frames[" + std::to_string(i) + "].";
        if (!frame.is_object()) fail(file, "frames[" + std::to_string(i) + "]", "expected an object");
        auto path_it = frame.find("file_path");
        if (path_it == frame.end()) fail(file, p.prefix + "file_path", "missing");
        if (!path_it->is_string()) fail(file, p.prefix + "file_path", std::string("expected a string, got ") + json_type_name(*path_it));
        read_transform(frame, file, p.prefix, p.transform);
        p.intrinsics = shared;
        read_intrinsics(frame, file, p.prefix, p.intrinsics);
        validate_intrinsics(p.intrinsics, file, p.prefix, true);
        note_unsupported(frame, unsupported);
        p.image_path = find_image(base, path_it->get<std::string>());
        if (p.image_path.empty()) {
            if (dataset.skipped_missing++ == 0) first_missing = (base / path_it->get<std::string>()).string();
            continue;
        }
        parsed.push_back(std::move(p));
    }
    if (!unsupported.empty()) {
        std::sort(unsupported.begin(), unsupported.end());
        unsupported.erase(std::unique(unsupported.begin(), unsupported.end()), unsupported.end());
        std::string names;
        for (const auto& n : unsupported) names += (names.empty() ? "" : ", ") + n;
        warn(file + ": ignored lens fields " + names + " (only k1 k2 p1 p2 distortion is applied)");
    }
    if (parsed.empty())
        fail(file, "frames", "none of the " + std::to_string(frames_it->size()) + " images exist (first: " + first_missing + ")");
    if (dataset.skipped_missing)
        warn(file + ": skipped " + std::to_string(dataset.skipped_missing) + " of " + std::to_string(frames_it->size()) +
             " frames whose image is missing (first: " + first_missing + ")");

    // Frame 0 here sizes the buffer; the workers decode the rest.
    std::vector<std::string> paths;
    for (const auto& p : parsed) paths.push_back(p.image_path);
    DecodedImage first = decode_rgba8(paths[0]);
    std::atomic<size_t> float_sources{first.from_float ? 1u : 0u};
    dataset.images.width = first.width;
    dataset.images.height = first.height;
    dataset.images.rgba.resize(dataset.images.frame_bytes() * paths.size());
    std::copy(first.rgba.begin(), first.rgba.end(), dataset.images.rgba.begin());
    first.rgba = {};
    if (options.progress) options.progress(1, paths.size());
    decode_remaining(paths, dataset.images, options, file, float_sources);
    if (float_sources)
        warn(file + ": " + std::to_string(float_sources.load()) + " linear (EXR/HDR) images stored as 8-bit sRGB");

    for (const auto& p : parsed) {
        NerfFrame frame;
        frame.image_path = p.image_path;
        frame.camera.intrinsics = finish_intrinsics(p.intrinsics, dataset.images.width, dataset.images.height, file, p.prefix);
        frame.camera.pose = pose_to_unit(p.transform, dataset.scale, dataset.offset);
        frame.distortion = distortion_of(p.intrinsics);
        std::copy(&p.transform[0][0], &p.transform[0][0] + 12, &frame.transform_matrix[0][0]);
        dataset.frames.push_back(std::move(frame));
    }
    return dataset;
}

} // namespace fusedngp
