// The desktop app end to end under Xvfb (Mesa llvmpipe, CPU backend): trains
// for a few hundred frames, widens the network and switches kernel mid-run,
// and checks the printed report and the final screenshot.
#include "cli_runner.h"
#include "io/image.h"
#include "nerf/synthetic_scene.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

using namespace fusedngp;
using namespace fusedngp::test;

namespace {

bool have_program(const std::string& name) { return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0; }

// "key=value key=value" -> map
std::map<std::string, std::string> fields(const std::string& line) {
    std::map<std::string, std::string> out;
    std::istringstream in(line);
    std::string token;
    while (in >> token) {
        auto eq = token.find('=');
        if (eq != std::string::npos) out[token.substr(0, eq)] = token.substr(eq + 1);
    }
    return out;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
    return out;
}

// Mean of channel c over a cell of `image` (nearest samples), for comparing
// a screen region with the source at a common coarse resolution.
double cell_mean(const Image& image, double x0, double y0, double x1, double y1, int c) {
    double sum = 0;
    int n = 0;
    for (int y = (int)y0; y < (int)y1; ++y) {
        for (int x = (int)x0; x < (int)x1; ++x) {
            sum += image.at(x, y, c);
            ++n;
        }
    }
    return n ? sum / n : 0;
}

// Without a display (no DISPLAY, no WAYLAND_DISPLAY) the app says so in one
// line, points to the headless command and exits 2, writing nothing.
TEST(GuiApp, NoDisplayIsOneLineAndExitTwo) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#else
    struct Unset {
        std::string name, value;
        bool had = false;
        explicit Unset(const char* n) : name(n) {
            if (const char* v = std::getenv(n)) had = true, value = v;
            unsetenv(n);
        }
        ~Unset() {
            if (had) setenv(name.c_str(), value.c_str(), 1);
        }
    } display("DISPLAY"), wayland("WAYLAND_DISPLAY");
    auto dir = make_temp_dir("gui_no_display");
    const std::string image = std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png";
    const std::string shot = (dir / "shot.png").string();
    const CliResult r = run_cli("gui " + image + " --backend cpu --frames 2 --screenshot " + shot);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("cannot open a window"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("fusedngp train"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(shot));
#endif
}

} // namespace

TEST(GuiApp, TrainsResizesAndSwitchesKernelUnderXvfb) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#endif
    if (!have_program("xvfb-run")) GTEST_SKIP() << "xvfb-run is not installed";
    auto dir = make_temp_dir("gui");
    const std::string shot = (dir / "S.png").string(), out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
    const std::string source = std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png";
    std::string cmd = "xvfb-run -a -s \"-screen 0 1280x800x24\" " + std::string(FUSEDNGP_BINARY) + " gui " + source +
                      " --backend cpu --frames 240 --steps-per-frame 1 --screenshot " + shot +
                      " --set network.n_neurons=128@100 --set network.otype=CublasMLP@170 >" + out + " 2>" + err +
                      " </dev/null";
    int status = std::system(cmd.c_str());
    std::string text = read_text(out);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text << read_text(err);

    auto changes = lines_starting(text, "change ");
    auto finals = lines_starting(text, "final ");
    ASSERT_EQ(changes.size(), 2u) << text;
    ASSERT_EQ(finals.size(), 1u) << text;
    auto resize = fields(changes[0]), kernel = fields(changes[1]), final_line = fields(finals[0]);
    EXPECT_EQ(resize["key"], "network.n_neurons");
    EXPECT_EQ(resize["value"], "128");
    EXPECT_EQ(kernel["value"], "CublasMLP");
    EXPECT_EQ(resize["kept"], "1") << text;  // wider with zeroed new inputs: the same function
    EXPECT_EQ(kernel["kept"], "1") << text;
    const double first = std::stod(final_line["first_loss"]), last = std::stod(final_line["loss"]);
    EXPECT_LT(last, 0.05 * first) << "the loss did not fall: " << text;
    // Weights survived the resize: right after it the loss is far below a fresh start's.
    EXPECT_LT(std::stod(resize["loss_after"]), 0.05 * first) << text;
    EXPECT_LT(std::stod(kernel["loss_after"]), 0.05 * first) << text;
    EXPECT_GT(std::stod(final_line["psnr"]), 20.0) << text;

    // The screenshot shows the prediction where the app draws it: side by
    // side, right half of the image area (window minus the 400 px side panel).
    Image s = load_image(shot);
    Image src = load_image(source);
    const double area_w = s.width - std::min(400.0, s.width * 0.5);
    const double panel_w = (area_w - 4) * 0.5, side = std::min(panel_w, (double)s.height);
    const double px0 = area_w - panel_w + (panel_w - side) * 0.5, py0 = (s.height - side) * 0.5;
    const int cells = 16;
    std::vector<double> a, b;
    for (int cy = 0; cy < cells; ++cy) {
        for (int cx = 0; cx < cells; ++cx) {
            for (int c = 0; c < 3; ++c) {
                double f0 = (double)cx / cells, f1 = (double)(cx + 1) / cells;
                double g0 = (double)cy / cells, g1 = (double)(cy + 1) / cells;
                a.push_back(cell_mean(s, px0 + f0 * side + 1, py0 + g0 * side + 1, px0 + f1 * side - 1, py0 + g1 * side - 1, c));
                b.push_back(cell_mean(src, f0 * src.width, g0 * src.height, f1 * src.width, g1 * src.height, c));
            }
        }
    }
    double ma = 0, mb = 0;
    for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
    ma /= a.size();
    mb /= b.size();
    double cov = 0, va = 0, vb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        cov += (a[i] - ma) * (b[i] - mb);
        va += (a[i] - ma) * (a[i] - ma);
        vb += (b[i] - mb) * (b[i] - mb);
    }
    EXPECT_GT(std::sqrt(va / a.size()), 0.1) << "the prediction region is blank";
    EXPECT_NEAR(ma, mb, 0.05);
    EXPECT_GT(cov / std::sqrt(va * vb), 0.95) << "the prediction region does not look like the source";
}

TEST(GuiApp, BadSetExitsTwoWithOneLine) {
    for (const char* bad : {"--set network.n_neurons=128", "--set network.width=128@3", "--set network.n_neurons=64@x"}) {
        CliResult r = run_cli(std::string("gui --frames 1 ") + bad);
        EXPECT_EQ(r.exit_code, 2) << bad << r.out << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("--set"), std::string::npos) << r.err;
    }
#ifdef FUSEDNGP_HAVE_GUI
    // A well-formed key with an invalid value fails before any window opens
    // (values are checked by the app, so only in builds that have it).
    CliResult r = run_cli("gui --frames 1 --set network.activation=Wobbly@3");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("network.activation"), std::string::npos) << r.err;
#endif
}

// SDF mode: a mesh opens the 3-D view. The CPU backend trains the cow live
// (a small model, so a CPU step is quick), widens the network mid-run, and the
// final frame shows the surface: the view area is not the bare background.
TEST(GuiApp, SdfModeDrawsTheSurfaceUnderXvfb) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#endif
    if (!have_program("xvfb-run")) GTEST_SKIP() << "xvfb-run is not installed";
    auto dir = make_temp_dir("gui_sdf");
    const std::string shot = (dir / "S.png").string(), out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
    const std::string config = (dir / "small.json").string();
    write_text_file(config, R"({"encoding": {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2,
        "log2_hashmap_size": 14, "base_resolution": 8, "per_level_scale": 1.5},
        "network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
        "n_neurons": 16, "n_hidden_layers": 1}})");
    const std::string mesh = std::string(FUSEDNGP_SOURCE_DIR) + "/data/cow.obj";
    std::string cmd = "xvfb-run -a -s \"-screen 0 1280x800x24\" " + std::string(FUSEDNGP_BINARY) + " gui " + mesh +
                      " --backend cpu --config " + config + " --batch 2048 --frames 150 --steps-per-frame 2 --screenshot " +
                      shot + " --set network.n_neurons=32@100 >" + out + " 2>" + err + " </dev/null";
    int status = std::system(cmd.c_str());
    std::string text = read_text(out);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text << read_text(err);
    EXPECT_NE(text.find("(sdf mode)"), std::string::npos) << text;

    auto changes = lines_starting(text, "change ");
    auto finals = lines_starting(text, "final ");
    ASSERT_EQ(changes.size(), 1u) << text;
    ASSERT_EQ(finals.size(), 1u) << text;
    auto widen = fields(changes[0]), final_line = fields(finals[0]);
    EXPECT_EQ(widen["key"], "network.n_neurons");
    const double first = std::stod(final_line["first_loss"]), last = std::stod(final_line["loss"]);
    EXPECT_LT(last, 0.5 * first) << text;
    EXPECT_LT(std::stod(widen["loss_after"]), 0.5 * first) << "the widening lost what was learned: " << text;
    ASSERT_TRUE(final_line.count("iou")) << text;
    EXPECT_GT(std::stod(final_line["iou"]), 0.3) << text;

    // The view fills the window left of the 400 px side panel; misses show
    // the app's background (0.07, 0.075, 0.08). The cow covers a good share
    // of the fitted view in clay shading, far from that colour.
    Image s = load_image(shot);
    const int area_w = s.width - (int)std::min(400.0, s.width * 0.5);
    size_t surface = 0, total = 0;
    for (int y = 0; y < s.height; ++y) {
        for (int x = 0; x < area_w; ++x) {
            const double diff = std::abs(s.at(x, y, 0) - 0.07) + std::abs(s.at(x, y, 1) - 0.075) + std::abs(s.at(x, y, 2) - 0.08);
            surface += diff > 0.15;
            ++total;
        }
    }
    const double share = (double)surface / (double)total;
    EXPECT_GT(share, 0.02) << "the 3-D view shows no surface";
    EXPECT_LT(share, 0.9) << "the 3-D view shows no background around the mesh";
}

// A mesh that cannot be opened fails before any window opens, with one line
// naming the file (so no display is needed).
TEST(GuiApp, UnreadableMeshExitsTwoBeforeAWindow) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#else
    auto dir = make_temp_dir("gui_bad_mesh");
    const std::string missing = (dir / "missing.obj").string(), garbled = (dir / "garbled.ply").string();
    write_text_file(garbled, "ply\nthis is not a header\n");
    for (const std::string& path : {missing, garbled}) {
        CliResult r = run_cli("gui " + path + " --backend cpu --frames 1");
        EXPECT_EQ(r.exit_code, 2) << path << r.out << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    }
#endif
}

// NeRF mode: a folder with transforms_*.json opens the NeRF view. The CPU
// backend trains the generated test scene (8 views of 24x24, a small model)
// in lockstep (one step per frame, 30 frames) while the worker renders the
// view between steps; the final frame shows the field: the view area is not
// uniform.
TEST(GuiApp, NerfModeDrawsTheFieldUnderXvfb) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#endif
    if (!have_program("xvfb-run")) GTEST_SKIP() << "xvfb-run is not installed";
    auto dir = make_temp_dir("gui_nerf");
    const std::string scene = (dir / "scene").string(), shot = (dir / "S.png").string();
    const std::string out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
    const std::string config = (dir / "small.json").string();
    write_synthetic_dataset(scene, default_synthetic_scene(), 8, 2, 24, 24, 5);
    write_text_file(config, R"({"loss": {"otype": "Huber"},
        "optimizer": {"otype": "Adam", "learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.99, "epsilon": 1e-15},
        "encoding": {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2, "log2_hashmap_size": 14,
                     "base_resolution": 16, "per_level_scale": 1.5},
        "network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
                    "n_neurons": 32, "n_hidden_layers": 1},
        "rgb_network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
                        "n_neurons": 32, "n_hidden_layers": 1},
        "sampling": {"cone_angle": 0.0078125, "max_samples_per_ray": 128, "occupancy_warmup_steps": 0}})");
    std::string cmd = "xvfb-run -a -s \"-screen 0 1024x640x24\" " + std::string(FUSEDNGP_BINARY) + " gui " + scene +
                      " --backend cpu --config " + config + " --batch 256 --size 1024x640 --frames 30 --steps-per-frame 1 " +
                      "--background white --crop 0.4,-1,-1,2,2,2 " +
                      "--screenshot " + shot + " --set optimizer.learning_rate=0.005@15 --set network.n_neurons=64@10 " +
                      "--set rgb_network.n_hidden_layers=2@20 >" + out + " 2>" + err + " </dev/null";
    int status = std::system(cmd.c_str());
    std::string text = read_text(out);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text << read_text(err);
    EXPECT_NE(text.find("(nerf mode)"), std::string::npos) << text;
    ASSERT_EQ(lines_starting(text, "change frame=15 key=optimizer.learning_rate").size(), 1u) << text;
    // Width and depth change live, the learned weights carried.
    const auto changed = lines_starting(text, "changed   ");
    ASSERT_EQ(changed.size(), 2u) << text;
    EXPECT_NE(changed[0].find("network.n_neurons = 64 (cpu)"), std::string::npos) << text;
    EXPECT_NE(changed[1].find("rgb_network.n_hidden_layers = 2 (cpu)"), std::string::npos) << text;
    for (const std::string& line : changed) EXPECT_NE(line.find("the same function"), std::string::npos) << line;
    auto finals = lines_starting(text, "final ");
    ASSERT_EQ(finals.size(), 1u) << text;
    auto final_line = fields(finals[0]);
    EXPECT_EQ(final_line["steps"], "30") << text;  // lockstep: one step per frame
    EXPECT_LT(std::stod(final_line["loss"]), std::stod(final_line["first_loss"])) << text;
    ASSERT_TRUE(final_line.count("psnr")) << text;
    EXPECT_GT(std::stod(final_line["psnr"]), 8.0) << text;

    // The view fills the window left of the 400 px side panel; the NeRF
    // render there is not one colour: the field's colours (after 30 steps
    // still a dark fog where the primitives are) against the white background.
    Image s = load_image(shot);
    EXPECT_EQ(s.width, 1024);
    EXPECT_EQ(s.height, 640);
    const int area_w = s.width - (int)std::min(400.0, s.width * 0.5);
    double sum = 0, sum2 = 0;
    size_t n = 0;
    for (int y = 0; y < s.height; ++y) {
        for (int x = 0; x < area_w; ++x) {
            for (int c = 0; c < 3; ++c) {
                sum += s.at(x, y, c);
                sum2 += s.at(x, y, c) * s.at(x, y, c);
                ++n;
            }
        }
    }
    const double mean = sum / n, stddev = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
    EXPECT_GT(stddev, 0.03) << "the 3-D view is uniform: the NeRF render shows nothing";
}

// A --set the NeRF view cannot apply, a bad --background or a missing scene
// fails before any window opens with one line (no display needed).
TEST(GuiApp, NerfBadInputExitsTwoBeforeAWindow) {
#ifndef FUSEDNGP_HAVE_GUI
    GTEST_SKIP() << "built without the desktop app (FUSEDNGP_GUI=OFF)";
#else
    auto dir = make_temp_dir("gui_nerf_bad");
    const std::string scene = (dir / "scene").string();
    write_synthetic_dataset(scene, default_synthetic_scene(), 2, 0, 8, 8, 5);
    CliResult r = run_cli("gui " + scene + " --backend cpu --frames 1 --set encoding.n_levels=4@3");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("encoding.n_levels"), std::string::npos) << r.err;
    r = run_cli("gui " + scene + " --backend cpu --frames 1 --set network.n_neurons=0@3");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("network.n_neurons"), std::string::npos) << r.err;
    // The colour network is the NeRF view's alone.
    const std::string image = std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png";
    r = run_cli("gui " + image + " --backend cpu --frames 1 --set rgb_network.n_neurons=64@3");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("only the NeRF view has a colour network"), std::string::npos) << r.err;
    // --background belongs to the NeRF view, and takes train's values.
    for (const std::string& args : {image + " --background white", scene + " --background pink"}) {
        r = run_cli("gui " + args + " --backend cpu --frames 1");
        EXPECT_EQ(r.exit_code, 2) << args << r.out << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("--background"), std::string::npos) << r.err;
    }
    // So does --crop, which takes render's and mesh's boxes.
    for (const std::string& args : {image + " --crop 0,0,0,1,1,1", scene + " --crop 0,0,0,1,1", scene + " --crop 1,0,0,0,1,1"}) {
        r = run_cli("gui " + args + " --backend cpu --frames 1");
        EXPECT_EQ(r.exit_code, 2) << args << r.out << r.err;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("--crop"), std::string::npos) << r.err;
    }
    const std::string missing = (dir / "missing").string() + "/transforms.json";
    r = run_cli("gui " + missing + " --backend cpu --frames 1");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
#endif
}
