// NeRF scenes: the transforms.json of both dialects, its cameras in the
// model's coordinates and its images, decoded on several threads.
//
// Dialects (one parser; a field present wins, per frame over the top level):
// - Blender / NeRF-synthetic: `camera_angle_x` (horizontal field of view in
//   radians), `frames[].file_path` without extension (".png" is tried), RGBA.
// - instant-ngp: `fl_x fl_y cx cy w h` (pixels), `k1 k2 p1 p2` (OpenCV radial
//   + tangential distortion), `aabb_scale`, `scale`, `offset`, and any of the
//   intrinsics repeated inside a frame to override the top level.
// Focal length: fl_x, else 0.5 w / tan(0.5 camera_angle_x); fl_y, else from
// camera_angle_y, else fx (square pixels). cx, cy default to w/2, h/2; w, h
// default to the image's size. Pixel (i, j) has its centre at (i+0.5, j+0.5),
// row 0 at the top (the convention of render/camera.h and of COLMAP's cx, cy).
//
// World -> model (unit cube) transform, instant-ngp's: a NeRF camera-to-world
// matrix [R | t] (camera space x right, y up, looking along -z; world z up in
// Blender scenes) becomes
//     p_unit = P(scale * p_world + offset),   P(x, y, z) = (y, z, x)
// (P is a rotation, a cyclic permutation of the axes, so world z becomes our
// y, up). Defaults: scale 0.33, offset (0.5, 0.5, 0.5). The camera's pose:
//     position = P(scale * t + offset)
//     right    = P(R column 0)
//     up       = P(R column 1)
//     forward  = P(-R column 2)
// (unit vectors; scale moves centres, not directions). aabb_scale a (a power
// of two in [1, 128], default 1) is the side of the scene's box, centred on
// (0.5, 0.5, 0.5): nerf_scene_box(). Errors are InputError naming the file and
// field: "scene/transforms.json: frames[3].transform_matrix: not orthonormal
// (row 1 has length 1.7)".
#pragma once

#include "geometry/vec3.h"
#include "nerf/lens_distortion.h"
#include "render/camera.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusedngp {

struct NerfFrame {
    std::string image_path;  // resolved, as opened
    Camera camera;           // pose in the model's coordinates, intrinsics in pixels
    LensDistortion distortion;  // nerf/lens_distortion.h
    float transform_matrix[3][4] = {};  // the file's camera-to-world rows, world coordinates
};

// Every frame's pixels, frame-major, row-major, row 0 at the top, RGBA8 as the
// files store them (sRGB, straight alpha; no alpha -> 255). 16-bit PNGs keep
// their high byte (stb_image); EXR/HDR frames are encoded to 8-bit sRGB (one
// warning), so HDR range above 1 is clipped.
struct NerfImages {
    uint32_t width = 0, height = 0;
    std::vector<uint8_t> rgba;
    size_t frame_bytes() const { return (size_t)width * height * 4; }
    const uint8_t* frame(size_t i) const { return rgba.data() + i * frame_bytes(); }
};

struct NerfDataset {
    std::vector<NerfFrame> frames;  // only frames whose image exists, in file order
    NerfImages images;              // images.frame(i) belongs to frames[i]
    float aabb_scale = 1;
    float scale = 0.33f;
    Vec3 offset{0.5f, 0.5f, 0.5f};
    std::string source;  // the json path
    size_t skipped_missing = 0;  // frames dropped because their image file is missing
};

struct NerfLoadOptions {
    unsigned threads = 0;  // image decoding threads; 0 = std::thread::hardware_concurrency()
    // Called after each decoded image with (done, total); serialised (never
    // two at once), `done` strictly increasing, possibly from a worker thread.
    std::function<void(size_t done, size_t total)> progress;
};

// The transforms files of a `--data` argument.
struct NerfSplitPaths {
    std::string train;  // always set
    std::string test;   // empty when absent
    std::string val;    // empty when absent
};

// A folder: transforms_train.json (+ transforms_test.json, transforms_val.json
// beside it when present), else transforms.json (no test split). A .json file:
// itself, and when it is named transforms_train.json its existing _test/_val
// siblings. InputError for a missing path, a file that is not .json, a folder
// with neither file.
NerfSplitPaths resolve_nerf_paths(const std::string& path);

// Parses, validates, and loads the images. Missing image files are skipped
// with one warning giving their count and the first one; none left, or any
// other bad input, throws InputError. Warnings go to `warnings` when given.
NerfDataset load_nerf_dataset(const std::string& json_path, const NerfLoadOptions& options = {},
                              std::vector<std::string>* warnings = nullptr);

// The world -> model transform of the header comment (points, and directions
// without scale and offset).
Vec3 nerf_world_to_unit(Vec3 p_world, float scale, Vec3 offset);
Vec3 nerf_direction_to_unit(Vec3 d_world);
// Their inverses, model -> world: p_world = (P^-1(p_unit) - offset) / scale,
// P^-1(x, y, z) = (z, x, y) (exported meshes go back to the scene's frame).
Vec3 nerf_unit_to_world(Vec3 p_unit, float scale, Vec3 offset);
Vec3 nerf_direction_to_world(Vec3 d_unit);

// The scene's box in the model's coordinates: side aabb_scale around the centre.
Box3 nerf_scene_box(const NerfDataset& dataset);

} // namespace fusedngp
