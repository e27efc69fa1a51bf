// `fusedngp render` for NeRF models (snapshot or exported weights): one view
// (.png/.exr), every view of a test split with PSNR metrics, or the frames of
// a camera path (a PNG folder, or .mp4 through ffmpeg).
#pragma once

#include "io/safetensors.h"

#include <string>

namespace fusedngp {

struct NerfRenderRequest {
    std::string input;
    std::string out;
    int width = 0, height = 0;  // 0: the model's default view size
    std::string camera;         // orbit:YAW,PITCH,DIST
    std::string camera_file;
    std::string camera_path;
    double fps = 30;
    std::string test;           // a transforms .json
    std::string background;     // empty: the one the model was trained with
    std::string crop;           // empty: none; else X0,Y0,Z0,X1,Y1,Z1 (parse_crop_box)
    std::string backend;        // empty: cpu
};

// `contents` is the decoded `request.input`. Throws InputError for bad input
// (before writing anything).
void render_nerf_model(const NerfRenderRequest& request, const SafetensorsContents& contents);

} // namespace fusedngp
