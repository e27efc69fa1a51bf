// `fusedngp gui [DATA]`: the desktop app, image mode for an image and SDF
// mode (a 3-D view) for a mesh. Also what `fusedngp` runs with no
// arguments when built with the GUI and a display is available.
#include "app/commands.h"
#include "app/cli_checks.h"

#include "app/train_options.h"
#include "backends/backend.h"
#include "config/config_override.h"
#include "core/errors.h"

#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#ifdef FUSEDNGP_HAVE_GUI
#include "gui/gui_app.h"
#endif

namespace fusedngp {

namespace {

struct GuiCliOptions {
    std::string data;
    std::string backend;
    std::string config;
    uint64_t frames = 0;
    std::string screenshot;
    std::vector<std::string> sets;
    uint32_t steps_per_frame = 0;
    float orbit_pixels = 0;
    std::string size = "1600x900";
    double max_fps = 60;
    uint32_t batch_size = 0;  // 0: chosen for the backend
    uint64_t seed = 1337;
    std::string background;  // NeRF: the view's starting background; empty: the app's colour
    std::string crop;        // NeRF: the view's starting crop box; empty: none
};

#ifdef FUSEDNGP_HAVE_GUI
std::string default_image() { return std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png"; }
#endif

int run_gui_command(const GuiCliOptions& o) {
    // Parsed even without a GUI build, so bad --set reports the same everywhere.
    std::vector<ScheduledChange> changes;
    for (const auto& s : o.sets) changes.push_back(parse_scheduled_change(s));
    if (!o.screenshot.empty() && o.frames == 0) throw InputError("--screenshot needs --frames (the final frame is saved)");
#ifdef FUSEDNGP_HAVE_GUI
    GuiOptions g;
    g.data = o.data.empty() ? default_image() : o.data;
    g.backend = o.backend;  // empty: the best available for the mode
    g.config = o.config;
    g.batch_size = o.batch_size;  // 0: the mode's default for the backend
    g.seed = o.seed;
    {
        int w = 0, h = 0;
        char tail = 0;
        if (std::sscanf(o.size.c_str(), "%dx%d%c", &w, &h, &tail) != 2 || w < 320 || h < 240 || w > 16384 || h > 16384)
            throw InputError("--size: expected WIDTHxHEIGHT, at least 320x240, got \"" + o.size + "\"");
        g.window_width = w;
        g.window_height = h;
    }
    if (!(o.max_fps >= 0)) throw InputError("--max-fps must be >= 0 (0: uncapped)");
    g.max_fps = o.max_fps;
    if (!o.background.empty()) g.background = parse_background(o.background);
    if (!o.crop.empty()) g.crop = parse_crop_box(o.crop);
    g.automation = AutomationOptions{o.frames, o.screenshot, std::move(changes), o.steps_per_frame, o.orbit_pixels};
    return run_gui(g);
#else
    throw InputError("this fusedngp was built without the desktop app (configure with -DFUSEDNGP_GUI=ON)");
#endif
}

} // namespace

void add_gui_command(CLI::App& app) {
    auto o = std::make_shared<GuiCliOptions>();
    CLI::App* cmd = app.add_subcommand("gui", "Open the desktop app: train live, change the network while it trains");
    cmd->add_option("data", o->data,
                    "image (image mode), mesh .obj .ply .stl .off (SDF mode, a 3-D view) or NeRF scene "
                    "(a folder or transforms .json: NeRF mode, a 3-D view) to train on; "
                    "default: the bundled data/astronaut.png");
    cmd->add_option("--backend", o->backend, "cpu or cuda; default: the best available");
    cmd->add_option("--config", o->config, "JSON config in tiny-cuda-nn's schema; default: the mode's configs/MODE.json");
    cmd->add_option("--batch", o->batch_size,
                    "samples per step (changeable in the app); default 4096 on cpu, 262144 on cuda; "
                    "NeRF: rays per step, default 1024 on cpu, 4096 on cuda")
        ->check(positive_number());
    cmd->add_option("--seed", o->seed, "seed for initialisation and sampling")->check(non_negative_number())->capture_default_str();
    cmd->add_option("--background", o->background,
                    "NeRF: the view's starting background, white, black or R,G,B (changeable in the app)");
    cmd->add_option("--crop", o->crop,
                    "NeRF: start with the crop box X0,Y0,Z0,X1,Y1,Z1 on (model space; changeable in the app)");
    cmd->add_option("--frames", o->frames, "quit after N frames and print the applied changes, loss and PSNR")
        ->check(positive_number());
    cmd->add_option("--screenshot", o->screenshot, "with --frames: save the final frame as PNG");
    cmd->add_option("--size", o->size, "initial window size, WIDTHxHEIGHT")->capture_default_str();
    cmd->add_option("--max-fps", o->max_fps, "frame cap, leaving the rest of the CPU to training; 0: uncapped")
        ->check(non_negative_number())
        ->capture_default_str();
    cmd->add_option("--steps-per-frame", o->steps_per_frame,
                    "exactly N training steps per frame, each frame waiting for them (reproducible scripted runs); "
                    "default 0: training runs freely on its worker thread")
        ->check(non_negative_number());
    cmd->add_option("--orbit", o->orbit_pixels,
                    "3-D modes: orbit the camera by PIXELS of sideways drag every frame (a moving view for "
                    "measuring frame rate and training speed; default 0: still)")
        ->check(non_negative_number());
    cmd->add_option("--set", o->sets,
                    "KEY=VALUE@FRAME: change a config value at a frame, e.g. network.n_neurons=128@50 (repeatable)");
    cmd->callback([o]() {
        int rc = run_gui_command(*o);
        if (rc != 0) throw CLI::RuntimeError(rc);
    });
}

bool gui_available() {
#ifdef FUSEDNGP_HAVE_GUI
    auto set = [](const char* name) {
        const char* v = std::getenv(name);
        return v && *v;
    };
    return set("DISPLAY") || set("WAYLAND_DISPLAY");
#else
    return false;
#endif
}

int run_gui_default() { return run_gui_command(GuiCliOptions{}); }

} // namespace fusedngp
