// `fusedngp render`: render a trained model (snapshot or exported weights)
// to an image at any resolution. PNG is 8-bit sRGB, EXR is float linear.
#include "app/commands.h"

#include "app/output_dir.h"
#include "core/errors.h"
#include "modes/image_mode.h"
#include "persist/model_file.h"

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
};

std::string lower_extension(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return ext;
}

void run_render(const RenderOptions& o) {
    std::string ext = lower_extension(o.out);
    if (ext != ".png" && ext != ".exr") throw InputError(o.out + ": output must end in .png or .exr");
    if (o.width < 0 || o.height < 0) throw InputError("--width and --height must be positive");
    TrainedModel t = open_trained_model(o.input);
    if (t.desc.mode != "image") throw InputError(o.input + ": rendering mode \"" + t.desc.mode + "\" is not supported yet");
    Image shape = blank_image_from_info(t.desc.mode_info, o.input);
    int w = o.width ? o.width : shape.width;
    int h = o.height ? o.height : shape.height;
    if (o.width && !o.height) h = std::max(1, (int)((double)shape.height * w / shape.width + 0.5));
    if (o.height && !o.width) w = std::max(1, (int)((double)shape.width * h / shape.height + 0.5));
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
    CLI::App* cmd = app.add_subcommand("render", "Render a snapshot or exported weights to an image (.png or .exr)");
    cmd->add_option("model", o->input, "snapshot (from train) or weights (from export)")->required();
    cmd->add_option("--out", o->out, "output image, .png (8-bit sRGB) or .exr (float linear)")->required();
    cmd->add_option("--width", o->width, "width in pixels (default: the training image's; keeps aspect if only one is given)");
    cmd->add_option("--height", o->height, "height in pixels");
    cmd->callback([o]() { run_render(*o); });
}

} // namespace fusedngp
