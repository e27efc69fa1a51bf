// `fusedngp render`: render a trained model (snapshot or exported weights)
// to an image at any resolution (SDF models: sphere-traced from a camera;
// NeRF models: volume-rendered, app/render_nerf.h). PNG is 8-bit sRGB, EXR
// is float linear.
#include "app/commands.h"
#include "app/cli_checks.h"

#include "app/output_dir.h"
#include "app/render_nerf.h"
#include "core/errors.h"
#include "app/sdf_model_file.h"
#include "engine/sdf_backend_tools.h"
#include "io/path_extension.h"
#include "modes/image_mode.h"
#include "render/camera_io.h"
#include "persist/model_file.h"
#include "persist/nerf_weights.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

namespace fusedngp {

namespace {

struct RenderOptions {
    std::string input;
    std::string out;
    int width = 0;
    int height = 0;
    // sdf mode
    std::string camera;
    std::string camera_file;
    std::string render_mode = "shade";
    std::string backend;
    // nerf mode
    std::string test;
    std::string camera_path;
    double fps = 30;
    std::string background;
    std::string crop;
};

void render_nerf(const RenderOptions& o, const SafetensorsContents& contents) {
    NerfRenderRequest r;
    r.input = o.input;
    r.out = o.out;
    r.width = o.width;
    r.height = o.height;
    r.camera = o.camera;
    r.camera_file = o.camera_file;
    r.camera_path = o.camera_path;
    r.fps = o.fps;
    r.test = o.test;
    r.background = o.background;
    r.crop = o.crop;
    r.backend = o.backend;
    render_nerf_model(r, contents);
}

// The largest side we render: 16384^2 RGBA floats are 4 GiB already.
constexpr int kMaxRenderSide = 16384;

void check_render_size(long long width, long long height) {
    if (width > kMaxRenderSide || height > kMaxRenderSide) {
        throw InputError("--width and --height: the image would be " + std::to_string(width) + "x" +
                         std::to_string(height) + " pixels; each side must be at most " +
                         std::to_string(kMaxRenderSide));
    }
}

// SDF: sphere tracing from a camera (the GPU when there is one).
void render_sdf_model_file(const RenderOptions& o, const TrainedModel& t) {
    if (!o.camera.empty() && !o.camera_file.empty()) throw InputError("give --camera or --camera-file, not both");
    const SdfRenderMode mode = parse_sdf_render_mode(o.render_mode);
    uint32_t w = o.width ? (uint32_t)o.width : 800, h = o.height ? (uint32_t)o.height : 600;
    if (o.width && !o.height) h = std::max(1u, (uint32_t)(w * 3 / 4));
    Camera camera = default_view_camera(w, h);
    if (!o.camera_file.empty()) camera = load_camera_file(o.camera_file, w, h);
    else if (!o.camera.empty()) camera.pose = parse_camera_spec(o.camera);
    OpenedSdfModel m = sdf_model_from(t, o.input, o.backend);
    prepare_output_file(o.out);
    Image img = render_sdf_model(*m.backend, camera, mode);
    if (lower_extension(o.out) == ".png") save_png(img, o.out);
    else save_exr(img, o.out);
    std::printf("rendered %ux%u (%s, %s) from %s -> %s\n", camera.intrinsics.width, camera.intrinsics.height,
                to_string(mode), m.backend->name().c_str(), o.input.c_str(), o.out.c_str());
}

void run_render(const RenderOptions& o) {
    // One image unless NeRF's --test or --camera-path asks for a folder (or video).
    const bool one_image = o.test.empty() && o.camera_path.empty();
    std::string ext = lower_extension(o.out);
    if (one_image && ext != ".png" && ext != ".exr") throw InputError(o.out + ": output must end in .png or .exr");
    if (o.width < 0 || o.height < 0) throw InputError("--width and --height must be positive");
    check_render_size(o.width, o.height);
    const SafetensorsContents contents = read_safetensors(o.input);
    if (is_nerf_model_file(contents)) return render_nerf(o, contents);
    if (!one_image || !o.background.empty() || !o.crop.empty())
        throw InputError(o.input + ": --test, --camera-path, --background and --crop are for NeRF models");
    TrainedModel t = open_trained_model(contents, o.input);
    if (t.desc.mode == "sdf") return render_sdf_model_file(o, t);
    if (t.desc.mode != "image") throw InputError(o.input + ": rendering mode \"" + t.desc.mode + "\" is not supported yet");
    if (!o.camera.empty() || !o.camera_file.empty())
        throw InputError(o.input + ": an image model has no camera; --camera and --camera-file are for SDF and NeRF models");
    Image shape = blank_image_from_info(t.desc.mode_info, o.input);
    int w = o.width ? o.width : shape.width;
    int h = o.height ? o.height : shape.height;
    if (o.width && !o.height) h = std::max(1, (int)std::min(1e9, (double)shape.height * w / shape.width + 0.5));
    if (o.height && !o.width) w = std::max(1, (int)std::min(1e9, (double)shape.width * h / shape.height + 0.5));
    check_render_size(w, h);
    prepare_output_file(o.out);
    const Model<float>& model = *t.model;
    const float* params = t.inference_params.data();
    InferenceFn infer = [&](const Matrix<float>& in, Matrix<float>& out) { model.inference(in, out, params); };
    Image img = render_image(infer, w, h, shape.channels, shape.color_space);
    if (ext == ".png") save_png(img, o.out);
    else save_exr(img, o.out);
    std::printf("rendered %dx%d from %s -> %s\n", w, h, o.input.c_str(), o.out.c_str());
}

} // namespace

void add_render_command(CLI::App& app) {
    auto o = std::make_shared<RenderOptions>();
    CLI::App* cmd = app.add_subcommand("render", "Render a snapshot or exported weights to an image (.png or .exr); SDF models are sphere-traced and NeRF models volume-rendered from a camera");
    cmd->add_option("model", o->input, "snapshot (from train) or weights (from export)")->required();
    cmd->add_option("--out", o->out, "output image, .png (8-bit sRGB) or .exr (float linear); nerf --test and --camera-path: a folder (or .mp4 for a camera path)")->required();
    cmd->add_option("--width", o->width, "width in pixels (default: the training image's; keeps aspect if only one is given)")
        ->check(positive_number());
    cmd->add_option("--height", o->height, "height in pixels")->check(positive_number());
    cmd->add_option("--camera", o->camera, "sdf, nerf: orbit:YAW,PITCH,DISTANCE around the unit cube's centre (sdf default orbit:30,20,1.6; nerf default: the model's first test view)");
    cmd->add_option("--camera-file", o->camera_file, "sdf, nerf: a camera JSON file (docs/SDF.md)");
    cmd->add_option("--render-mode", o->render_mode, "sdf: shade, normals, depth, ao or cost")->capture_default_str();
    cmd->add_option("--backend", o->backend, "cpu or cuda; default: the best available");
    cmd->add_option("--test", o->test, "nerf: render every view of this transforms .json into --out (a folder) with PSNR in metrics.json");
    cmd->add_option("--camera-path", o->camera_path, "nerf: a camera path JSON (docs/NERF.md); frames to --out (a folder, or .mp4 via ffmpeg)");
    cmd->add_option("--fps", o->fps, "nerf --camera-path: frames per second")->check(positive_number())->capture_default_str();
    cmd->add_option("--background", o->background, "nerf: white, black or R,G,B in [0, 1] (default: the training background)");
    cmd->add_option("--crop", o->crop, "nerf: draw only what lies in the box X0,Y0,Z0,X1,Y1,Z1 (model space: the unit cube holds the object)");
    cmd->callback([o]() { run_render(*o); });
}

} // namespace fusedngp
