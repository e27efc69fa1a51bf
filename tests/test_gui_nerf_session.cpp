// The GUI's NerfSession without a window: the worker trains the generated
// scene in lockstep, renders a requested view in bands between steps (a
// newer request replaces the pass in flight), and the eval views are the
// test split, downsampled with their intrinsics.
#ifdef FUSEDNGP_HAVE_GUI

#include "cli_runner.h"
#include "gui/nerf_session.h"
#include "geometry/mesh_io.h"
#include "gui/nerf_setup.h"
#include "nerf/synthetic_scene.h"
#include "persist/nerf_snapshot.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

namespace fusedngp {
namespace {

const char* kSmallConfig = R"({"loss": {"otype": "Huber"},
  "optimizer": {"otype": "Adam", "learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.99, "epsilon": 1e-15},
  "encoding": {"otype": "HashGrid", "n_levels": 4, "n_features_per_level": 2, "log2_hashmap_size": 12,
               "base_resolution": 16, "per_level_scale": 1.5},
  "network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
              "n_neurons": 16, "n_hidden_layers": 1},
  "rgb_network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
                  "n_neurons": 16, "n_hidden_layers": 1},
  "sampling": {"cone_angle": 0.0078125, "max_samples_per_ray": 64, "occupancy_warmup_steps": 0}})";

struct SceneFiles {
    std::string dir, config;
};

const SceneFiles& scene_files() {
    static const SceneFiles files = [] {
        const auto dir = test::make_temp_dir("gui_nerf_session");
        write_synthetic_dataset((dir / "scene").string(), default_synthetic_scene(), 4, 2, 32, 24, 3);
        test::write_text_file(dir / "small.json", kSmallConfig);
        return SceneFiles{(dir / "scene").string(), (dir / "small.json").string()};
    }();
    return files;
}

NerfAppScene small_scene(uint32_t max_side) {
    return load_nerf_scene(scene_files().dir, scene_files().config, 64, 1, NerfEvalViews{3, max_side}, nullptr);
}

// Waits (bounded) until the worker delivered the rows of `pass`.
std::vector<NerfBand> collect_pass(NerfSession& session, uint64_t pass, int height) {
    std::vector<NerfBand> bands;
    int rows = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (rows < height && std::chrono::steady_clock::now() < deadline) {
        for (NerfBand& b : session.take_bands()) {
            if (b.pass != pass) continue;
            rows += b.pixels.height;
            bands.push_back(std::move(b));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return bands;
}

TEST(GuiNerfSession, EvalViewsAreTheTestSplitDownsampled) {
    const NerfAppScene scene = small_scene(16);
    EXPECT_EQ(scene.eval_split, "test");
    ASSERT_EQ(scene.eval.frames.size(), 2u);  // fewer test views than asked for
    EXPECT_EQ(scene.eval.images.width, 16u);  // 32x24 by a factor of 2
    EXPECT_EQ(scene.eval.images.height, 12u);
    const NerfDataset full = load_nerf_dataset(scene_files().dir + "/transforms_test.json");
    const CameraIntrinsics& k = scene.eval.frames[1].camera.intrinsics;
    EXPECT_FLOAT_EQ(k.fx, full.frames[1].camera.intrinsics.fx / 2);
    EXPECT_FLOAT_EQ(k.cx, full.frames[1].camera.intrinsics.cx / 2);
    EXPECT_EQ(k.width, 16u);
    // A downsampled pixel is its block's premultiplied mean: fully covered
    // blocks keep opacity 255, empty ones 0.
    size_t opaque = 0, empty = 0;
    for (size_t i = 0; i < 16 * 12; ++i) {
        const uint8_t a = scene.eval.images.frame(0)[4 * i + 3];
        opaque += a == 255;
        empty += a == 0;
    }
    EXPECT_GT(opaque, 0u);
    EXPECT_GT(empty, 0u);
}

TEST(GuiNerfSession, WorkerStepsInLockstepAndRendersRequestedPassesInBands) {
    NerfSession session(small_scene(32), "cpu");
    EXPECT_EQ(session.backend_name(), "cpu");
    session.set_lockstep(true);
    session.start_worker();
    session.run_steps(5);
    session.poll();
    EXPECT_EQ(session.step(), 5u);
    EXPECT_TRUE(std::isfinite(session.last_loss()));
    EXPECT_EQ(session.rays_per_step(), 64u);
    EXPECT_GT(session.samples_per_step(), 0u);

    NerfRenderRequest old_request;
    old_request.pass = 1;
    old_request.camera.intrinsics = intrinsics_from_fov(40, 30, 45);
    old_request.camera.pose = orbit_pose(30, 20, 1.6f);
    NerfRenderRequest request = old_request;
    request.pass = 2;
    request.camera.intrinsics = intrinsics_from_fov(24, 18, 45);
    session.request_render(old_request);
    session.request_render(request);  // replaces the first before or while it renders
    const std::vector<NerfBand> bands = collect_pass(session, 2, 18);
    int next_row = 0;
    for (const NerfBand& b : bands) {
        EXPECT_EQ(b.y0, next_row);
        EXPECT_EQ(b.pixels.width, 24);
        EXPECT_EQ(b.pixels.channels, 3);
        next_row += b.pixels.height;
    }
    EXPECT_EQ(next_row, 18);

    // Occupancy and depth passes render too, on the same background.
    session.set_background({1, 1, 1});
    for (NerfRenderMode mode : {NerfRenderMode::Occupancy, NerfRenderMode::Depth}) {
        request.pass += 1;
        request.mode = mode;
        session.request_render(request);
        int rows = 0;
        for (const NerfBand& b : collect_pass(session, request.pass, 18)) rows += b.pixels.height;
        EXPECT_EQ(rows, 18) << (int)mode;
    }
    session.stop_worker();
    EXPECT_TRUE(session.take_worker_error().empty());
    EXPECT_GT(session.measure_psnr(), 3.0);
}

// The panel's and --set's live changes: a wider density network and a
// deeper colour network are applied by the worker before its next step,
// carry the weights and leave training going; values that cannot be right
// are refused on the UI thread, and one the trainer refuses comes back as a
// worker error while training goes on.
TEST(GuiNerfSession, LiveNetworkChangesCarryTheWeightsAndTrainOn) {
    NerfSession session(small_scene(16), "cpu");
    session.set_lockstep(true);
    session.start_worker();
    session.run_steps(3);
    session.poll();
    const size_t params_before = session.n_params();
    session.request_change({"network.n_neurons", 32});
    session.request_change({"rgb_network.n_hidden_layers", 2});
    session.run_steps(2);
    session.poll();
    EXPECT_EQ(session.step(), 5u);
    EXPECT_GT(session.n_params(), params_before);
    EXPECT_EQ(config_value(session.config(), "network.n_neurons"), 32);
    EXPECT_EQ(config_value(session.config(), "rgb_network.n_hidden_layers"), 2);
    const std::vector<std::string> reports = session.take_change_reports();
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_NE(reports[0].find("network.n_neurons = 32 (cpu)"), std::string::npos) << reports[0];
    EXPECT_NE(reports[0].find("params carried, the same function"), std::string::npos) << reports[0];
    EXPECT_TRUE(session.take_worker_error().empty());
    EXPECT_TRUE(std::isfinite(session.last_loss()));

    EXPECT_THROW(session.request_change({"network.n_neurons", 0}), ConfigError);
    EXPECT_THROW(session.request_change({"network.otype", "NoKernel"}), ConfigError);
    EXPECT_THROW(session.request_change({"encoding.n_levels", 4}), ConfigError);
    session.request_change({"network.otype", "CPU"});  // already there: the same trainer, rebuilt
    session.run_steps(1);
    session.poll();
    EXPECT_EQ(session.backend_name(), "cpu");
    EXPECT_EQ(session.take_change_reports().size(), 1u);
    session.stop_worker();
    EXPECT_TRUE(session.take_worker_error().empty());
}

// Waits (bounded) until the worker reported `n` file jobs or an error.
std::vector<std::string> wait_file_reports(NerfSession& session, size_t n, std::string* error) {
    std::vector<std::string> reports;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (reports.size() < n && std::chrono::steady_clock::now() < deadline) {
        for (std::string& r : session.take_file_reports()) reports.push_back(std::move(r));
        if (std::string e = session.take_worker_error(); !e.empty()) {
            *error = e;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return reports;
}

// Snapshots, weights and meshes the app writes are the command line's files
// (render, mesh and --resume read them), a loaded snapshot brings its state
// and step back, and a bad file is an error while training goes on. The jobs
// run while training is paused.
TEST(GuiNerfSession, FileJobsWriteTheCommandLinesFilesAndLoadASnapshotBack) {
    const auto dir = test::make_temp_dir("gui_nerf_files");
    NerfSession session(small_scene(16), "cpu");
    session.set_lockstep(true);
    session.running = false;
    session.start_worker();
    session.run_steps(12);
    session.poll();
    const std::string snap = (dir / "a.fusedngp").string(), weights = (dir / "w.safetensors").string();
    const std::string mesh = (dir / "m.ply").string();
    session.request_file_job({NerfFileJobKind::SaveSnapshot, snap});
    session.request_file_job({NerfFileJobKind::ExportWeights, weights});
    session.request_file_job({NerfFileJobKind::ExtractMesh, mesh, 32, 1.f});  // a barely trained field: low densities
    std::string error;
    std::vector<std::string> reports = wait_file_reports(session, 3, &error);
    ASSERT_EQ(reports.size(), 3u) << error;
    EXPECT_NE(reports[0].find("saved snapshot " + snap + " at step 12"), std::string::npos) << reports[0];
    EXPECT_NE(reports[2].find("triangles"), std::string::npos) << reports[2];
    const NerfSnapshot saved = load_nerf_snapshot(snap);
    EXPECT_EQ(saved.state.step, 12u);
    EXPECT_EQ(saved.config, session.config());
    EXPECT_EQ(saved.data_path, scene_files().dir);
    for (const std::string& model : {snap, weights}) {
        const auto r = test::run_cli("render " + model + " --width 8 --out " + (dir / "view.png").string());
        EXPECT_EQ(r.exit_code, 0) << model << ": " << r.err;
    }
    EXPECT_GT(load_mesh(mesh).n_triangles(), 0u);

    session.run_steps(3);
    session.poll();
    EXPECT_EQ(session.step(), 15u);
    session.request_file_job({NerfFileJobKind::LoadSnapshot, snap});
    reports = wait_file_reports(session, 1, &error);
    ASSERT_EQ(reports.size(), 1u) << error;
    session.poll();
    EXPECT_EQ(session.step(), 12u);
    const std::string again = (dir / "b.fusedngp").string();
    session.request_file_job({NerfFileJobKind::SaveSnapshot, again});
    ASSERT_EQ(wait_file_reports(session, 1, &error).size(), 1u) << error;
    const NerfSnapshot reloaded = load_nerf_snapshot(again);
    EXPECT_EQ(reloaded.state.step, 12u);
    EXPECT_EQ(reloaded.state.density_params, saved.state.density_params);
    EXPECT_EQ(reloaded.state.grid_bits, saved.state.grid_bits);

    error.clear();
    session.request_file_job({NerfFileJobKind::LoadSnapshot, (dir / "missing.fusedngp").string()});
    EXPECT_TRUE(wait_file_reports(session, 1, &error).empty());
    EXPECT_NE(error.find("missing.fusedngp"), std::string::npos) << error;
    error.clear();
    session.request_file_job({NerfFileJobKind::ExtractMesh, (dir / "none.ply").string(), 16, 1e9f});
    EXPECT_TRUE(wait_file_reports(session, 1, &error).empty());
    EXPECT_NE(error.find("is empty"), std::string::npos) << error;
    EXPECT_FALSE(std::filesystem::exists(dir / "none.ply"));
    session.run_steps(1);
    session.poll();
    EXPECT_EQ(session.step(), 13u);
    session.stop_worker();
}

// A session 20 lockstep steps in, on `bg`, and a 16 x 12 request of its first eval view.
NerfRenderRequest start_trained_session(NerfSession& session, Vec3 bg) {
    session.set_lockstep(true);
    session.start_worker();
    session.run_steps(20);
    session.set_background(bg);
    NerfRenderRequest request;
    request.camera = session.scene().eval.frames[0].camera;
    request.camera.intrinsics = scaled_intrinsics(request.camera.intrinsics, 16, 12);
    return request;
}

// The normals view: unit normals, (n + 1) / 2 per channel, where the field
// has a surface; the background elsewhere. The cost view renders too.
TEST(GuiNerfSession, NormalsPassShowsUnitNormalsOrTheBackground) {
    NerfSession session(small_scene(16), "cpu");
    const Vec3 bg{0.25f, 0.5f, 0.75f};
    NerfRenderRequest request = start_trained_session(session, bg);
    request.pass = 1;
    request.mode = NerfRenderMode::Normals;
    session.request_render(request);
    const std::vector<NerfBand> bands = collect_pass(session, 1, 12);
    // The cost view of the same camera: every row, no error.
    request.pass = 2;
    request.mode = NerfRenderMode::Cost;
    session.request_render(request);
    int cost_rows = 0;
    for (const NerfBand& b : collect_pass(session, 2, 12)) cost_rows += b.pixels.height;
    EXPECT_EQ(cost_rows, 12);
    session.stop_worker();
    EXPECT_TRUE(session.take_worker_error().empty());
    int rows = 0, surface = 0;
    for (const NerfBand& b : bands) {
        rows += b.pixels.height;
        for (size_t i = 0; i < b.pixels.pixel_count(); ++i) {
            const float* p = &b.pixels.pixels[3 * i];
            if (p[0] == bg.x && p[1] == bg.y && p[2] == bg.z) continue;
            ++surface;
            const Vec3 n{2 * p[0] - 1, 2 * p[1] - 1, 2 * p[2] - 1};
            EXPECT_NEAR(length(n), 1.f, 1e-4f);
        }
    }
    EXPECT_EQ(rows, 12);
    EXPECT_GT(surface, 0);
}

// The view's crop box reaches every render mode: a box away from the scene
// leaves the background in each, and the next request without it draws again.
TEST(GuiNerfSession, CropBoxAwayFromTheSceneLeavesTheBackgroundInEveryMode) {
    NerfSession session(small_scene(16), "cpu");
    const Vec3 bg{0.25f, 0.5f, 0.75f};
    NerfRenderRequest request = start_trained_session(session, bg);
    request.crop = Box3{{2, 2, 2}, {3, 3, 3}};
    const NerfRenderMode modes[] = {NerfRenderMode::Colour, NerfRenderMode::Depth, NerfRenderMode::Normals,
                                    NerfRenderMode::Occupancy, NerfRenderMode::Cost};
    auto count_background = [&](const std::vector<NerfBand>& bands, int& rows) {
        int n = 0;
        for (const NerfBand& b : bands) {
            rows += b.pixels.height;
            for (size_t i = 0; i < b.pixels.pixel_count(); ++i) {
                const float* p = &b.pixels.pixels[3 * i];
                n += p[0] == bg.x && p[1] == bg.y && p[2] == bg.z;
            }
        }
        return n;
    };
    for (NerfRenderMode mode : modes) {
        request.pass += 1;
        request.mode = mode;
        session.request_render(request);
        int rows = 0;
        EXPECT_EQ(count_background(collect_pass(session, request.pass, 12), rows), 16 * 12) << (int)mode;
        EXPECT_EQ(rows, 12) << (int)mode;
    }
    request.pass += 1;
    request.mode = NerfRenderMode::Occupancy;
    request.crop = unbounded_box();
    session.request_render(request);
    int rows = 0;
    EXPECT_LT(count_background(collect_pass(session, request.pass, 12), rows), 16 * 12);
    session.stop_worker();
    EXPECT_TRUE(session.take_worker_error().empty());
}

// Space pauses and resumes by flipping `running` alone: the worker notices.
TEST(GuiNerfSession, PausedWorkerResumesWhenRunningIsSet) {
    NerfSession session(small_scene(32), "cpu");
    session.running = false;
    session.start_worker();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session.poll();
    EXPECT_EQ(session.step(), 0u);
    session.running = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (session.step() < 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        session.poll();
    }
    EXPECT_GE(session.step(), 2u);
    session.stop_worker();
}

} // namespace
} // namespace fusedngp

#endif
