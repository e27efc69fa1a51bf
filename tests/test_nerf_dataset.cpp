// NeRF transforms.json loading: both dialects, validation messages, missing
// images, folder resolution, the world -> unit transform, threaded decoding.
#include "nerf/nerf_dataset.h"

#include "io/image.h"
#include "io_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stb_image_write.h>

#include <cmath>
#include <filesystem>
#include <functional>

using namespace fusedngp;
using fusedngp::test::ScratchDir;
using fusedngp::test::write_text;

namespace {

constexpr int kSide = 8;

// Frame f's pixel (x, y): distinct bytes per frame, pixel and channel.
uint8_t pixel_byte(int f, int x, int y, int c) { return (uint8_t)(f * 37 + x * 3 + y * 11 + c * 50); }

std::vector<uint8_t> frame_pixels(int f, int w = kSide, int h = kSide) {
    std::vector<uint8_t> px((size_t)w * h * 4);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 4; ++c) px[((size_t)y * w + x) * 4 + c] = pixel_byte(f, x, y, c);
    return px;
}

void write_png(const std::string& path, int f, int w = kSide, int h = kSide) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::vector<uint8_t> px = frame_pixels(f, w, h);
    ASSERT_TRUE(stbi_write_png(path.c_str(), w, h, 4, px.data(), w * 4)) << path;
}

// A rigid camera-to-world matrix: rotation about world z by `angle`, then a
// translation.
json rotation_z(double angle, double tx, double ty, double tz) {
    double c = std::cos(angle), s = std::sin(angle);
    return json::array({json::array({c, -s, 0.0, tx}), json::array({s, c, 0.0, ty}),
                        json::array({0.0, 0.0, 1.0, tz}), json::array({0.0, 0.0, 0.0, 1.0})});
}

// A Blender-dialect scene: frames train/r_i.png, paths without extension.
json blender_scene(int frames) {
    json root;
    root["camera_angle_x"] = 0.7;
    root["frames"] = json::array();
    for (int i = 0; i < frames; ++i)
        root["frames"].push_back({{"file_path", "./train/r_" + std::to_string(i)}, {"rotation", 0.01},
                                  {"transform_matrix", rotation_z(0.3 * i, 1.0 * i, 2.0, 3.0)}});
    return root;
}

struct DatasetFiles {
    ScratchDir dir;
    std::string json_path;
    DatasetFiles(const json& root, int images, const std::string& name = "transforms.json") {
        json_path = dir.file(name);
        write_text(json_path, root.dump(2));
        for (int i = 0; i < images; ++i) write_png(dir.file("train/r_" + std::to_string(i) + ".png"), i);
    }
};

void expect_one_line_input_error(const std::function<void()>& call, const std::vector<std::string>& parts) {
    try {
        call();
        ADD_FAILURE() << "no InputError; expected one naming " << parts.front();
    } catch (const InputError& e) {
        std::string message = e.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    }
}

// Loads `root` (3 images on disk) and expects an InputError naming the file and `field`.
void expect_bad_scene(const json& root, const std::string& field, const std::string& problem = "") {
    DatasetFiles scene(root, 3);
    std::vector<std::string> parts{scene.json_path, field};
    if (!problem.empty()) parts.push_back(problem);
    expect_one_line_input_error([&] { load_nerf_dataset(scene.json_path); }, parts);
}

} // namespace

TEST(NerfDataset, BlenderDialectIntrinsicsPosesAndPixels) {
    DatasetFiles scene(blender_scene(3), 3);
    std::vector<std::string> warnings;
    NerfDataset d = load_nerf_dataset(scene.json_path, {}, &warnings);
    EXPECT_TRUE(warnings.empty());
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.skipped_missing, 0u);
    EXPECT_EQ(d.aabb_scale, 1.f);
    EXPECT_FLOAT_EQ(d.scale, 0.33f);
    EXPECT_EQ(d.images.width, 8u);
    EXPECT_EQ(d.images.height, 8u);
    const float fx = (float)(0.5 * 8 / std::tan(0.35));
    for (int i = 0; i < 3; ++i) {
        const NerfFrame& f = d.frames[(size_t)i];
        EXPECT_NEAR(f.camera.intrinsics.fx, fx, 1e-5);
        EXPECT_NEAR(f.camera.intrinsics.fy, fx, 1e-5);
        EXPECT_EQ(f.camera.intrinsics.cx, 4.f);
        EXPECT_EQ(f.camera.intrinsics.cy, 4.f);
        EXPECT_EQ(f.camera.intrinsics.width, 8u);
        EXPECT_FALSE(f.distortion.any());
        EXPECT_NE(f.image_path.find("r_" + std::to_string(i) + ".png"), std::string::npos);
        EXPECT_FLOAT_EQ(f.transform_matrix[0][3], 1.f * i);
        Vec3 p = f.camera.pose.position;
        EXPECT_NEAR(p.x, 0.33f * 2 + 0.5f, 1e-6);  // P(x, y, z) = (y, z, x)
        EXPECT_NEAR(p.y, 0.33f * 3 + 0.5f, 1e-6);
        EXPECT_NEAR(p.z, 0.33f * i + 0.5f, 1e-6);
        std::vector<uint8_t> expected = frame_pixels(i);
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), d.images.frame((size_t)i))) << "frame " << i;
    }
    EXPECT_EQ(d.images.rgba.size(), 3u * 8 * 8 * 4);
}

TEST(NerfDataset, InstantNgpDialectWithPerFrameOverrides) {
    json root = blender_scene(3);
    root.erase("camera_angle_x");
    root.update({{"fl_x", 10.0}, {"fl_y", 11.0}, {"cx", 3.5}, {"cy", 4.25}, {"w", 8}, {"h", 8}, {"k1", 0.1},
                 {"k2", -0.02}, {"p1", 0.003}, {"p2", -0.004}, {"aabb_scale", 16}, {"scale", 0.5},
                 {"offset", {0.1, 0.2, 0.3}}});
    root["frames"][0]["file_path"] = "train/r_0.png";  // with an extension
    root["frames"][1].update({{"fl_x", 12.0}, {"k1", 0.5}, {"cx", 4.0}});
    root["frames"][2].update({{"camera_angle_x", 0.7}});  // but fl_x still wins
    DatasetFiles scene(root, 3);
    NerfDataset d = load_nerf_dataset(scene.json_path);
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.aabb_scale, 16.f);
    EXPECT_EQ(d.scale, 0.5f);
    const CameraIntrinsics& k0 = d.frames[0].camera.intrinsics;
    EXPECT_EQ(k0.fx, 10.f);
    EXPECT_EQ(k0.fy, 11.f);
    EXPECT_EQ(k0.cx, 3.5f);
    EXPECT_EQ(k0.cy, 4.25f);
    EXPECT_FLOAT_EQ(d.frames[0].distortion.k1, 0.1f);
    EXPECT_FLOAT_EQ(d.frames[0].distortion.k2, -0.02f);
    EXPECT_FLOAT_EQ(d.frames[0].distortion.p1, 0.003f);
    EXPECT_FLOAT_EQ(d.frames[0].distortion.p2, -0.004f);
    const NerfFrame& f1 = d.frames[1];
    EXPECT_EQ(f1.camera.intrinsics.fx, 12.f);
    EXPECT_EQ(f1.camera.intrinsics.fy, 11.f);
    EXPECT_EQ(f1.camera.intrinsics.cx, 4.f);
    EXPECT_FLOAT_EQ(f1.distortion.k1, 0.5f);
    EXPECT_FLOAT_EQ(f1.distortion.k2, -0.02f);
    EXPECT_EQ(d.frames[2].camera.intrinsics.fx, 10.f);
    // position = P(0.5 t + offset), t = (1, 2, 3)
    Vec3 p = f1.camera.pose.position;
    EXPECT_NEAR(p.x, 0.5f * 2 + 0.2f, 1e-6);
    EXPECT_NEAR(p.y, 0.5f * 3 + 0.3f, 1e-6);
    EXPECT_NEAR(p.z, 0.5f * 1 + 0.1f, 1e-6);
    Box3 box = nerf_scene_box(d);
    EXPECT_EQ(box.lo.x, -7.5f);
    EXPECT_EQ(box.hi.z, 8.5f);
}

TEST(NerfDataset, FocalFromVerticalAngleOrOneAxisOnly) {
    json root = blender_scene(3);
    root.erase("camera_angle_x");
    root["camera_angle_y"] = 0.9;
    root["frames"][1]["fl_x"] = 7.0;  // fy stays from camera_angle_y
    DatasetFiles scene(root, 3);
    NerfDataset d = load_nerf_dataset(scene.json_path);
    float fy = (float)(0.5 * 8 / std::tan(0.45));
    EXPECT_NEAR(d.frames[0].camera.intrinsics.fx, fy, 1e-5);  // square pixels
    EXPECT_NEAR(d.frames[0].camera.intrinsics.fy, fy, 1e-5);
    EXPECT_EQ(d.frames[1].camera.intrinsics.fx, 7.f);
    EXPECT_NEAR(d.frames[1].camera.intrinsics.fy, fy, 1e-5);
}

TEST(NerfDataset, MissingImagesAreSkippedWithOneWarning) {
    json root = blender_scene(5);
    DatasetFiles scene(root, 5);
    std::filesystem::remove(scene.dir.file("train/r_1.png"));
    std::filesystem::remove(scene.dir.file("train/r_3.png"));
    std::vector<std::string> warnings;
    NerfDataset d = load_nerf_dataset(scene.json_path, {}, &warnings);
    ASSERT_EQ(d.frames.size(), 3u);
    EXPECT_EQ(d.skipped_missing, 2u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("skipped 2 of 5"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("r_1"), std::string::npos) << warnings[0];
    // The survivors keep their own pixels and poses.
    std::vector<uint8_t> expected = frame_pixels(4);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), d.images.frame(2)));
    EXPECT_FLOAT_EQ(d.frames[2].transform_matrix[0][3], 4.f);
}

TEST(NerfDataset, UnappliedLensFieldsAreNamedInOneWarning) {
    json root = blender_scene(3);
    root["k3"] = 0.01;
    root["frames"][1]["is_fisheye"] = true;
    root["frames"][2]["k3"] = 0.02;
    root["k4"] = 0;  // zero changes nothing
    DatasetFiles scene(root, 3);
    std::vector<std::string> warnings;
    load_nerf_dataset(scene.json_path, {}, &warnings);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("ignored lens fields is_fisheye, k3 ("), std::string::npos) << warnings[0];
}

TEST(NerfDataset, AllImagesMissingIsAnError) {
    DatasetFiles scene(blender_scene(3), 0);
    expect_one_line_input_error([&] { load_nerf_dataset(scene.json_path); }, {scene.json_path, "frames", "none of the 3 images"});
}

TEST(NerfDataset, BadFilesNameTheFile) {
    ScratchDir dir;
    expect_one_line_input_error([&] { load_nerf_dataset(dir.file("absent.json")); }, {dir.file("absent.json"), "cannot open"});
    write_text(dir.file("broken.json"), "{\"frames\": [");
    expect_one_line_input_error([&] { load_nerf_dataset(dir.file("broken.json")); }, {dir.file("broken.json"), "invalid JSON"});
    write_text(dir.file("nan.json"), "{\"camera_angle_x\": NaN, \"frames\": []}");
    expect_one_line_input_error([&] { load_nerf_dataset(dir.file("nan.json")); }, {dir.file("nan.json"), "invalid JSON"});
    write_text(dir.file("array.json"), "[1, 2]");
    expect_one_line_input_error([&] { load_nerf_dataset(dir.file("array.json")); }, {dir.file("array.json"), "JSON object"});
}

TEST(NerfDataset, BadFramesNameTheField) {
    json root = blender_scene(3);
    root.erase("frames");
    expect_bad_scene(root, "frames", "missing");
    root["frames"] = "r_0.png";
    expect_bad_scene(root, "frames", "expected an array");
    root["frames"] = json::array();
    expect_bad_scene(root, "frames", "no frames");
    root = blender_scene(3);
    root["frames"][1] = 5;
    expect_bad_scene(root, "frames[1]", "expected an object");
    root = blender_scene(3);
    root["frames"][1]["file_path"] = 7;
    expect_bad_scene(root, "frames[1].file_path", "expected a string");
    root = blender_scene(3);
    root["frames"][2].erase("file_path");
    expect_bad_scene(root, "frames[2].file_path", "missing");
}

TEST(NerfDataset, BadIntrinsicsNameTheField) {
    json root = blender_scene(3);
    root["camera_angle_x"] = "wide";
    expect_bad_scene(root, "camera_angle_x", "expected a number");
    root["camera_angle_x"] = 4.0;
    expect_bad_scene(root, ": camera_angle_x: ", "(0, pi)");
    root.erase("camera_angle_x");
    expect_bad_scene(root, "camera_angle_x", "missing");
    root["fl_x"] = -3.0;
    expect_bad_scene(root, ": fl_x: ", "positive");
    root["fl_x"] = 10.0;
    root["frames"][1]["fl_x"] = 0.0;
    expect_bad_scene(root, "frames[1].fl_x", "positive");
    root["frames"][1].erase("fl_x");
    root["frames"][2]["fl_y"] = json::array({1});
    expect_bad_scene(root, "frames[2].fl_y", "expected a number");
    root["frames"][2].erase("fl_y");
    root["w"] = 8.5;
    expect_bad_scene(root, ": w: ", "whole number");
    root["w"] = 16;  // the images are 8x8
    expect_bad_scene(root, "w/h", "16x8 but the image is 8x8");
    root.erase("w");
    root["frames"][1]["k1"] = true;
    expect_bad_scene(root, "frames[1].k1", "expected a number");
}

TEST(NerfDataset, BadPosesNameTheField) {
    json root = blender_scene(3);
    root["frames"][0]["transform_matrix"][1] = {0.0, 1.7, 0.0, 2.0};
    expect_bad_scene(root, "frames[0].transform_matrix", "not orthonormal (row 1 has length 1.7)");
    root = blender_scene(3);
    root["frames"][1]["transform_matrix"][0] = {1.0, 0.1, 0.0, 0.0};
    root["frames"][1]["transform_matrix"][1] = {0.0, 1.0, 0.0, 0.0};
    expect_bad_scene(root, "frames[1].transform_matrix", "not orthonormal");
    root = blender_scene(3);
    root["frames"][2]["transform_matrix"][2] = {0.0, 0.0, -1.0, 0.0};
    expect_bad_scene(root, "frames[2].transform_matrix", "reflection");
    root = blender_scene(3);
    root["frames"][2]["transform_matrix"][2][3] = "far";
    expect_bad_scene(root, "frames[2].transform_matrix", "row 2");
    root = blender_scene(3);
    root["frames"][1]["transform_matrix"] = json::array({json::array({1, 0, 0})});
    expect_bad_scene(root, "frames[1].transform_matrix", "rows of 4 numbers");
    root = blender_scene(3);
    root["frames"][1].erase("transform_matrix");
    expect_bad_scene(root, "frames[1].transform_matrix", "missing");
    root = blender_scene(3);
    root["frames"][0]["transform_matrix"][3] = {0.0, 0.0, 1.0, 1.0};
    expect_bad_scene(root, "frames[0].transform_matrix", "row 3");
    // JSON has no NaN or infinity: NaN and an overflowing literal are invalid JSON.
    DatasetFiles scene(blender_scene(3), 3);
    std::string text = blender_scene(3).dump();
    const std::string key = "\"transform_matrix\":[[";
    text.insert(text.find(key) + key.size(), "1e999,");
    write_text(scene.json_path, text);
    expect_one_line_input_error([&] { load_nerf_dataset(scene.json_path); }, {scene.json_path, "invalid JSON", "1e999"});
}

TEST(NerfDataset, BadSceneFieldsNameTheField) {
    for (json bad : {json(3), json(0), json(256), json(0.5), json("16")}) {
        json root = blender_scene(3);
        root["aabb_scale"] = bad;
        expect_bad_scene(root, "aabb_scale");
    }
    for (int ok : {1, 2, 32, 128}) {
        json root = blender_scene(3);
        root["aabb_scale"] = ok;
        DatasetFiles scene(root, 3);
        EXPECT_EQ(load_nerf_dataset(scene.json_path).aabb_scale, (float)ok);
    }
    json root = blender_scene(3);
    root["scale"] = 0;
    expect_bad_scene(root, "scale", "positive");
    root = blender_scene(3);
    root["offset"] = {0.5, 0.5};
    expect_bad_scene(root, "offset", "3 numbers");
}

TEST(NerfDataset, BadImagesNameTheFile) {
    DatasetFiles mixed(blender_scene(3), 3);
    write_png(mixed.dir.file("train/r_2.png"), 2, 8, 6);
    expect_one_line_input_error([&] { load_nerf_dataset(mixed.json_path); }, {mixed.json_path, "frames", "mixed sizes", "r_2.png", "8x6"});
    DatasetFiles corrupt(blender_scene(3), 3);
    write_text(corrupt.dir.file("train/r_1.png"), "not a png at all");
    expect_one_line_input_error([&] { load_nerf_dataset(corrupt.json_path); }, {"r_1.png", "cannot decode"});
}

TEST(NerfDataset, LinearExrFramesBecome8BitSrgb) {
    DatasetFiles scene(blender_scene(3), 3);
    std::filesystem::remove(scene.dir.file("train/r_1.png"));
    Image linear = make_image(8, 8, 3, ColorSpace::Linear);
    for (float& v : linear.pixels) v = 0.21586f;  // sRGB 128 / 255
    save_exr(linear, scene.dir.file("train/r_1.exr"));
    std::vector<std::string> warnings;
    NerfDataset d = load_nerf_dataset(scene.json_path, {}, &warnings);
    ASSERT_EQ(d.frames.size(), 3u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("8-bit sRGB"), std::string::npos);
    const uint8_t* px = d.images.frame(1);
    EXPECT_EQ(px[0], 128);
    EXPECT_EQ(px[2], 128);
    EXPECT_EQ(px[3], 255);
}

TEST(NerfDataset, ThreadedDecodeMatchesSingleThreadAndReportsProgress) {
    DatasetFiles scene(blender_scene(13), 13);
    NerfLoadOptions one;
    one.threads = 1;
    NerfDataset a = load_nerf_dataset(scene.json_path, one);
    NerfLoadOptions four;
    four.threads = 4;
    std::vector<size_t> seen;
    four.progress = [&](size_t done, size_t total) {
        EXPECT_EQ(total, 13u);
        seen.push_back(done);
    };
    NerfDataset b = load_nerf_dataset(scene.json_path, four);
    EXPECT_EQ(a.images.rgba, b.images.rgba);
    ASSERT_EQ(seen.size(), 13u);
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
}

TEST(NerfDataset, WorldToUnitOfAKnownCamera) {
    // A Blender camera at world (0, -4, 0) looking at the origin (+y), z up:
    // camera -z = +y, so columns right (1,0,0), up (0,0,1), back (0,-1,0).
    json root = blender_scene(3);
    root["frames"][1]["transform_matrix"] = json::array({json::array({1, 0, 0, 0}), json::array({0, 0, -1, -4}),
                                                         json::array({0, 1, 0, 0}), json::array({0, 0, 0, 1})});
    DatasetFiles scene(root, 3);
    NerfDataset d = load_nerf_dataset(scene.json_path);
    const CameraPose& pose = d.frames[1].camera.pose;
    // p_unit = P(0.33 p + 0.5), P(x, y, z) = (y, z, x)
    EXPECT_NEAR(pose.position.x, 0.5f - 0.33f * 4, 1e-6);
    EXPECT_NEAR(pose.position.y, 0.5f, 1e-6);
    EXPECT_NEAR(pose.position.z, 0.5f, 1e-6);
    EXPECT_NEAR(pose.forward.x, 1, 1e-6);  // towards the cube's centre
    EXPECT_NEAR(pose.up.y, 1, 1e-6);       // world z up -> our y up
    EXPECT_NEAR(pose.right.z, 1, 1e-6);
    Vec3 r = cross(pose.forward, pose.up);  // right-handed like look_at
    EXPECT_NEAR(length(r - pose.right), 0, 1e-6);
    // The centre pixel's ray passes through the unit cube's centre.
    Ray ray = camera_ray(d.frames[1].camera, 4.f, 4.f);
    Vec3 to_centre = Vec3{0.5f, 0.5f, 0.5f} - ray.origin;
    EXPECT_NEAR(length(to_centre - ray.direction * dot(to_centre, ray.direction)), 0, 1e-6);
    // Image row 0 is the top: a pixel above the centre row looks up (+y).
    EXPECT_GT(camera_ray(d.frames[1].camera, 4.f, 0.5f).direction.y, 0.f);
    EXPECT_EQ(nerf_world_to_unit({1, 2, 3}, 2.f, {0.1f, 0.2f, 0.3f}).x, 4.2f);
}

TEST(NerfDataset, ResolvePathsOfFoldersAndFiles) {
    ScratchDir one;
    write_text(one.file("transforms.json"), "{}");
    NerfSplitPaths a = resolve_nerf_paths(one.path());
    EXPECT_EQ(a.train, one.file("transforms.json"));
    EXPECT_TRUE(a.test.empty());
    EXPECT_TRUE(a.val.empty());

    ScratchDir split;
    for (const char* name : {"transforms_train.json", "transforms_test.json", "transforms_val.json", "transforms.json"})
        write_text(split.file(name), "{}");
    NerfSplitPaths b = resolve_nerf_paths(split.path());
    EXPECT_EQ(b.train, split.file("transforms_train.json"));
    EXPECT_EQ(b.test, split.file("transforms_test.json"));
    EXPECT_EQ(b.val, split.file("transforms_val.json"));
    NerfSplitPaths c = resolve_nerf_paths(split.file("transforms_train.json"));
    EXPECT_EQ(c.train, split.file("transforms_train.json"));
    EXPECT_EQ(c.test, split.file("transforms_test.json"));
    NerfSplitPaths e = resolve_nerf_paths(split.file("transforms_test.json"));
    EXPECT_EQ(e.train, split.file("transforms_test.json"));
    EXPECT_TRUE(e.test.empty());
    std::filesystem::remove(split.file("transforms_val.json"));
    EXPECT_TRUE(resolve_nerf_paths(split.path()).val.empty());

    ScratchDir empty;
    expect_one_line_input_error([&] { resolve_nerf_paths(empty.path()); }, {empty.path(), "transforms.json"});
    expect_one_line_input_error([&] { resolve_nerf_paths(empty.file("nope.json")); }, {empty.file("nope.json"), "no such"});
    write_text(empty.file("scene.png"), "x");
    expect_one_line_input_error([&] { resolve_nerf_paths(empty.file("scene.png")); }, {empty.file("scene.png"), "neither a folder nor a .json"});
}

TEST(NerfDataset, LoadsLego400WhenPresent) {
    const std::string folder = FUSEDNGP_SOURCE_DIR "/../shared/data/nerf/lego_400";
    if (!std::filesystem::exists(folder + "/transforms_train.json")) GTEST_SKIP() << folder << " not present";
    NerfSplitPaths paths = resolve_nerf_paths(folder);
    EXPECT_FALSE(paths.test.empty());
    NerfDataset d = load_nerf_dataset(paths.train);
    ASSERT_EQ(d.frames.size(), 100u);
    EXPECT_EQ(d.images.width, 400u);
    EXPECT_EQ(d.images.height, 400u);
    EXPECT_EQ(d.images.rgba.size(), 100u * 400 * 400 * 4);
    EXPECT_NEAR(d.frames[0].camera.intrinsics.fx, 0.5 * 400 / std::tan(0.5 * 0.6911112), 1e-2);
    EXPECT_NEAR(d.frames[0].camera.intrinsics.fx, 555.6, 0.1);
    const Vec3 centre{0.5f, 0.5f, 0.5f};
    float first_distance = length(d.frames[0].camera.pose.position - centre);
    for (const NerfFrame& f : d.frames) {
        EXPECT_NEAR(length(f.camera.pose.position - centre), first_distance, 1e-3 * first_distance);
        // Blender's cameras look at the origin: the forward axis passes near the centre.
        Vec3 to_centre = centre - f.camera.pose.position;
        float miss = length(to_centre - f.camera.pose.forward * dot(to_centre, f.camera.pose.forward));
        EXPECT_LT(miss, 0.05f);
        EXPECT_GT(dot(to_centre, f.camera.pose.forward), 0.f);
    }
    NerfDataset test = load_nerf_dataset(paths.test);
    EXPECT_EQ(test.frames.size(), 50u);
    EXPECT_EQ(test.images.width, 400u);
    // Not empty: the object covers part of the frame (alpha > 0).
    size_t covered = 0;
    for (size_t i = 3; i < d.images.frame_bytes(); i += 4) covered += d.images.rgba[i] > 0;
    EXPECT_GT(covered, 400u * 400 / 20);
}

TEST(NerfLensDistortion, MatchesTheFormulaAndUndistortInvertsIt) {
    LensDistortion lens{-0.12f, 0.03f, 0.002f, -0.0015f};
    float x = 0.3f, y = -0.2f, dx, dy;
    distort(lens, x, y, dx, dy);
    double r2 = 0.13, radial = 1 - 0.12 * r2 + 0.03 * r2 * r2;
    EXPECT_NEAR(dx, 0.3 * radial + 2 * 0.002 * 0.3 * -0.2 - 0.0015 * (r2 + 2 * 0.09), 1e-6);
    EXPECT_NEAR(dy, -0.2 * radial + 0.002 * (r2 + 2 * 0.04) + 2 * -0.0015 * 0.3 * -0.2, 1e-6);
    float worst = 0;
    for (float u = -0.7f; u <= 0.7f; u += 0.05f)
        for (float v = -0.5f; v <= 0.5f; v += 0.05f) {
            float du, dv, bu, bv;
            distort(lens, u, v, du, dv);
            undistort(lens, du, dv, bu, bv);
            worst = std::max(worst, std::fabs(bu - u) + std::fabs(bv - v));
        }
    EXPECT_LT(worst, 2e-6f);
    LensDistortion none;
    EXPECT_FALSE(none.any());
    float ux, uy;
    undistort(none, 0.4f, -0.3f, ux, uy);
    EXPECT_EQ(ux, 0.4f);
    EXPECT_EQ(uy, -0.3f);
}
