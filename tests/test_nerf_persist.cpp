// NeRF snapshots, export and render: the snapshot round trip, bit-identical
// resume on the CPU, export -> load, render from a snapshot and from exported
// weights, `render --test` metrics, camera paths, and bad inputs (one-line
// errors, exit 2, no output).
#include "nerf_persist_scene.h"

#include "backends/backend.h"
#include "engine/nerf_model_file.h"
#include "engine/nerf_training_factory.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "persist/nerf_snapshot.h"
#include "persist/snapshot.h"
#include "render/camera_io.h"
#include "render/camera_path.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using fusedngp::test::expect_cli_input_error;
using namespace fusedngp;
using fusedngp::test::make_temp_dir;
using fusedngp::test::nerf_persist_scene;
using fusedngp::test::nerf_train_args;
using fusedngp::test::read_text;
using fusedngp::test::run_cli;
using fusedngp::test::write_text_file;

namespace {

constexpr int kSteps = 24;  // crosses the occupancy update at step 16

// One trained model shared by the tests: DIR/snapshot.fusedngp after kSteps.
const fs::path& trained_dir() {
    static const fs::path out = [] {
        const fs::path o = make_temp_dir("nerf_persist_trained") / "out";
        const auto r = run_cli(nerf_train_args(o, kSteps));
        if (r.exit_code != 0) throw std::runtime_error("training failed: " + r.out + r.err);
        return o;
    }();
    return out;
}
fs::path persisted_snapshot() { return trained_dir() / "snapshot.fusedngp"; }

void expect_same_tensors(const fs::path& a, const fs::path& b) {
    const SafetensorsContents ca = read_safetensors(a.string()), cb = read_safetensors(b.string());
    ASSERT_EQ(ca.tensors.size(), cb.tensors.size());
    for (size_t i = 0; i < ca.tensors.size(); ++i) {
        EXPECT_EQ(ca.tensors[i].name, cb.tensors[i].name);
        EXPECT_TRUE(ca.tensors[i].values == cb.tensors[i].values) << ca.tensors[i].name << " differs";
    }
}

} // namespace

TEST(SafetensorsU8, RoundTripsSmallIntegersAndRejectsOthers) {
    const std::vector<SafetensorsTensor> t = {{"bits", {4}, {0, 1, 128, 255}, TensorDtype::U8}};
    const SafetensorsContents c = decode_safetensors(encode_safetensors(t), "mem");
    ASSERT_EQ(c.tensors.size(), 1u);
    EXPECT_EQ(c.tensors[0].dtype, TensorDtype::U8);
    EXPECT_EQ(c.tensors[0].values, t[0].values);
    EXPECT_THROW(encode_safetensors({{"bits", {1}, {256}, TensorDtype::U8}}), std::invalid_argument);
    EXPECT_THROW(encode_safetensors({{"bits", {1}, {0.5f}, TensorDtype::U8}}), std::invalid_argument);
}

TEST(NerfSnapshot, SaveThenLoadGivesTheSameState) {
    const NerfDataset data = load_nerf_dataset((nerf_persist_scene().dir / "transforms_train.json").string());
    const json config = json::parse(test::kNerfPersistConfig);
    auto trainer = create_nerf_training("cpu", data, config, nerf::nerf_settings_from_config(config, data.aabb_scale, 64, 7));
    for (int i = 0; i < 3; ++i) trainer->step();
    NerfSnapshot s{config, "scene/", "cpu", 64, 7, nerf_scene_of(data, nerf_frame_view(data, 1), {0.25f, 0.5f, 1}),
                   trainer->save_state()};
    const fs::path path = make_temp_dir("nerf_snap_roundtrip") / "s.fusedngp";
    save_nerf_snapshot(path.string(), s);
    const NerfSnapshot l = load_nerf_snapshot(path.string());
    EXPECT_EQ(l.config, s.config);
    EXPECT_EQ(l.data_path, "scene/");
    EXPECT_EQ(l.backend, "cpu");
    EXPECT_EQ(l.rays_per_batch, 64u);
    EXPECT_EQ(l.seed, 7u);
    EXPECT_EQ(l.state.step, 3u);
    EXPECT_EQ(l.state.rng_state, s.state.rng_state);
    EXPECT_EQ(l.state.density_params, s.state.density_params);
    EXPECT_EQ(l.state.colour_params, s.state.colour_params);
    EXPECT_EQ(l.state.density_optimizer, s.state.density_optimizer);
    EXPECT_EQ(l.state.colour_optimizer, s.state.colour_optimizer);
    EXPECT_EQ(l.state.grid_density, s.state.grid_density);
    EXPECT_EQ(l.state.grid_bits, s.state.grid_bits);
    EXPECT_EQ(l.scene.aabb_scale, data.aabb_scale);
    EXPECT_EQ(l.scene.scale, data.scale);
    EXPECT_EQ(l.scene.background.x, 0.25f);
    EXPECT_EQ(l.scene.camera.intrinsics.width, 24u);
    EXPECT_EQ(l.scene.camera.intrinsics.fx, s.scene.camera.intrinsics.fx);
    EXPECT_EQ(l.scene.camera.pose.position.x, s.scene.camera.pose.position.x);
    // And the loaded state restores into a fresh trainer exactly.
    auto again = create_nerf_training("cpu", data, config, nerf::nerf_settings_from_config(config, data.aabb_scale, 64, 7));
    again->load_state(l.state);
    const nerf::NerfTrainingState back = again->save_state();
    EXPECT_EQ(back.density_params, s.state.density_params);
    EXPECT_EQ(back.grid_bits, s.state.grid_bits);
    EXPECT_EQ(back.rng_state, s.state.rng_state);
}

// A snapshot whose parameters or grid hold a NaN or an infinity (a corrupt
// file, or a diverged run saved) is refused by name, as an image snapshot is.
TEST(NerfSnapshot, NonFiniteParametersOrGridAreAnInputError) {
    const NerfDataset data = load_nerf_dataset((nerf_persist_scene().dir / "transforms_train.json").string());
    const json config = json::parse(test::kNerfPersistConfig);
    auto trainer = create_nerf_training("cpu", data, config, nerf::nerf_settings_from_config(config, data.aabb_scale, 64, 7));
    const NerfSnapshot good{config, "scene/", "cpu", 64, 7, nerf_scene_of(data, nerf_frame_view(data, 0), {1, 1, 1}),
                            trainer->save_state()};
    const fs::path dir = make_temp_dir("nerf_snap_non_finite");
    const char* tensors[3] = {"density.params", "colour.params", "occupancy.density"};
    const float values[3] = {std::nanf(""), -INFINITY, INFINITY};
    for (int k = 0; k < 3; ++k) {
        NerfSnapshot bad = good;
        std::vector<float>& v = k == 0 ? bad.state.density_params
                                : k == 1 ? bad.state.colour_params
                                         : bad.state.grid_density;
        v[v.size() / 2] = values[k];
        const std::string tensor = tensors[k];
        const std::string path = (dir / (tensor + ".fusedngp")).string();
        save_nerf_snapshot(path, bad);
        try {
            load_nerf_snapshot(path);
            ADD_FAILURE() << tensor << ": loaded";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(path), std::string::npos) << what;
            EXPECT_NE(what.find(tensor), std::string::npos) << what;
            EXPECT_NE(what.find("1 of"), std::string::npos) << what;
            EXPECT_NE(what.find("not finite"), std::string::npos) << what;
        }
    }
}

TEST(NerfPersistCli, TrainWritesASnapshotAndResumeIsBitIdentical) {
    const fs::path dir = make_temp_dir("nerf_resume");
    ASSERT_TRUE(fs::exists(persisted_snapshot()));
    auto half = run_cli(nerf_train_args(dir / "half", kSteps / 2));
    ASSERT_EQ(half.exit_code, 0) << half.out << half.err;
    auto resumed = run_cli(nerf_train_args(dir / "resumed", kSteps) + " --resume " +
                           (dir / "half" / "snapshot.fusedngp").string());
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
    EXPECT_NE(resumed.out.find("resuming at step 12"), std::string::npos) << resumed.out;
    expect_same_tensors(persisted_snapshot(), dir / "resumed" / "snapshot.fusedngp");
    const NerfSnapshot a = load_nerf_snapshot(persisted_snapshot().string());
    const NerfSnapshot b = load_nerf_snapshot((dir / "resumed" / "snapshot.fusedngp").string());
    EXPECT_EQ(a.state.step, (uint64_t)kSteps);
    EXPECT_EQ(b.state.step, (uint64_t)kSteps);
    EXPECT_EQ(a.state.rng_state, b.state.rng_state);
    const auto s = nlohmann::json::parse(read_text((dir / "resumed" / "summary.json").string()));
    EXPECT_EQ(s["steps"], kSteps);
    EXPECT_EQ(s["steps_this_run"], kSteps / 2);
}

TEST(NerfPersistCli, ResumingWithADifferentConfigIsAnError) {
    const fs::path dir = make_temp_dir("nerf_resume_config");
    nlohmann::json other = nlohmann::json::parse(test::kNerfPersistConfig);
    other["network"]["n_neurons"] = 16;
    write_text_file(dir / "other.json", other.dump());
    const fs::path out = dir / "out";
    expect_cli_input_error("train --data " + nerf_persist_scene().dir.string() + " --config " + (dir / "other.json").string() +
                           " --steps 30 --resume " + persisted_snapshot().string() + " --out " + out.string(),
                       out, "different config");
}

// A config without the grid's per_level_scale: train sets it from the
// cameras, says so, and keeps it in the snapshot; resuming with the same
// config file derives the same value, so it is not "a different config".
TEST(NerfPersistCli, GridScaleFromTheCamerasIsKeptAndResumes) {
    const fs::path dir = make_temp_dir("nerf_scale_from_data");
    nlohmann::json config = nlohmann::json::parse(test::kNerfPersistConfig);
    config["encoding"].erase("per_level_scale");
    write_text_file(dir / "open.json", config.dump());
    const std::string base = "train --data " + nerf_persist_scene().dir.string() + " --backend cpu --config " +
                             (dir / "open.json").string() + " --batch 128 --eval-every 0 ";
    auto first = run_cli(base + "--steps 4 --out " + (dir / "first").string());
    ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
    EXPECT_NE(first.out.find("set by the data"), std::string::npos) << first.out;
    const NerfSnapshot snap = load_nerf_snapshot((dir / "first" / "snapshot.fusedngp").string());
    ASSERT_TRUE(snap.config["encoding"].contains("per_level_scale"));
    const double scale = snap.config["encoding"]["per_level_scale"].get<double>();
    EXPECT_GE(scale, 1.0);
    EXPECT_NE(scale, 1.5);  // not the file's value: it has none
    auto again = run_cli(base + "--steps 8 --resume " + (dir / "first" / "snapshot.fusedngp").string() + " --out " +
                         (dir / "again").string());
    ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
    EXPECT_NE(again.out.find("resuming at step 4"), std::string::npos) << again.out;
    EXPECT_EQ(again.out.find("set by the data"), std::string::npos) << again.out;  // the snapshot's config
    EXPECT_EQ(load_nerf_snapshot((dir / "again" / "snapshot.fusedngp").string()).config, snap.config);
}

TEST(NerfPersistCli, ExportedWeightsLoadAndRenderLikeTheSnapshot) {
    const fs::path dir = make_temp_dir("nerf_export");
    auto r = run_cli("export " + persisted_snapshot().string() + " --out " + (dir / "w.safetensors").string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const SafetensorsContents c = read_safetensors((dir / "w.safetensors").string());
    EXPECT_EQ(c.metadata.at("mode"), "nerf");
    ASSERT_NE(c.find("occupancy.bits"), nullptr);
    EXPECT_EQ(c.find("occupancy.bits")->dtype, TensorDtype::U8);
    EXPECT_NE(c.find("density.network.layers.0.weight"), nullptr);
    EXPECT_NE(c.find("colour.network.layers.1.weight"), nullptr);

    const OpenedNerfModel snap = open_nerf_model(persisted_snapshot().string(), "cpu");
    const OpenedNerfModel weights = open_nerf_model((dir / "w.safetensors").string(), "cpu");
    EXPECT_TRUE(snap.from_snapshot);
    EXPECT_FALSE(weights.from_snapshot);
    EXPECT_EQ(weights.trainer->density_inference_params(), snap.trainer->density_inference_params());
    EXPECT_EQ(weights.trainer->colour_inference_params(), snap.trainer->colour_inference_params());
    EXPECT_EQ(weights.trainer->occupancy_grid().bits(), snap.trainer->occupancy_grid().bits());

    for (const char* model : {"snapshot", "weights"}) {
        const std::string in = model == std::string("snapshot") ? persisted_snapshot().string() : (dir / "w.safetensors").string();
        auto rr = run_cli("render " + in + " --width 16 --out " + (dir / (std::string(model) + ".exr")).string());
        ASSERT_EQ(rr.exit_code, 0) << rr.out << rr.err;
    }
    const Image a = load_image((dir / "snapshot.exr").string()), b = load_image((dir / "weights.exr").string());
    EXPECT_EQ(a.width, 16);
    EXPECT_EQ(a.height, 16);
    EXPECT_EQ(a.pixels, b.pixels);

    // F16 weights: the same tensors, rounded.
    r = run_cli("export " + persisted_snapshot().string() + " --dtype f16 --out " + (dir / "h.safetensors").string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const OpenedNerfModel half = open_nerf_model((dir / "h.safetensors").string(), "cpu");
    const std::vector<float> p16 = half.trainer->colour_inference_params(), p32 = snap.trainer->colour_inference_params();
    ASSERT_EQ(p16.size(), p32.size());
    for (size_t i = 0; i < p16.size(); ++i) EXPECT_NEAR(p16[i], p32[i], 1e-3f * std::fabs(p32[i]) + 1e-7f);
}

TEST(NerfPersistCli, RenderTestWritesEveryViewAndTheTrainingPsnr) {
    const fs::path out = make_temp_dir("nerf_render_test") / "views";
    auto r = run_cli("render " + persisted_snapshot().string() + " --test " +
                     (nerf_persist_scene().dir / "transforms_test.json").string() + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(fs::exists(out / "test_000.png"));
    EXPECT_TRUE(fs::exists(out / "test_001.png"));
    const auto m = nlohmann::json::parse(read_text((out / "metrics.json").string()));
    ASSERT_EQ(m["views"].size(), 2u);
    const double v0 = m["views"][0]["psnr"], v1 = m["views"][1]["psnr"];
    EXPECT_NEAR(m["mean_psnr"].get<double>(), 0.5 * (v0 + v1), 1e-9);
    // The same renders and targets as train's final evaluation.
    const auto s = nlohmann::json::parse(read_text((trained_dir() / "summary.json").string()));
    EXPECT_NEAR(m["mean_psnr"].get<double>(), s["test_psnr"].get<double>(), 1e-6);
    // The test renders match train's own (same views, same PNG encoding).
    EXPECT_EQ(read_text((out / "test_000.png").string()), read_text((trained_dir() / "test_000.png").string()));
}

TEST(NerfPersistCli, CameraPathWritesOneFramePerTick) {
    const fs::path dir = make_temp_dir("nerf_camera_path");
    write_text_file(dir / "cam1.json", R"({"orbit": [90, 10, 1.4], "fov_y_degrees": 50})");
    write_text_file(dir / "path.json", R"({"width": 12, "height": 8, "keyframes": [
        {"time": 0, "camera": {"orbit": [0, 10, 1.4], "fov_y_degrees": 40}},
        {"time": 1, "camera": "cam1.json"}]})");
    const fs::path out = dir / "frames";
    auto r = run_cli("render " + persisted_snapshot().string() + " --camera-path " + (dir / "path.json").string() +
                     " --fps 4 --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (int i = 0; i < 5; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "frame_%05d.png", i);
        ASSERT_TRUE(fs::exists(out / name)) << name;
        const Image img = load_image((out / name).string());
        EXPECT_EQ(img.width, 12);
        EXPECT_EQ(img.height, 8);
    }
    EXPECT_FALSE(fs::exists(out / "frame_00005.png"));
}

TEST(CameraPath, InterpolatesPositionOrientationAndFov) {
    const fs::path dir = make_temp_dir("camera_path_unit");
    write_text_file(dir / "path.json", R"({"width": 40, "height": 30, "keyframes": [
        {"time": 1, "camera": {"orbit": [0, 0, 2], "fov_y_degrees": 30}},
        {"time": 3, "camera": {"orbit": [90, 0, 2], "fov_y_degrees": 50}}]})");
    const CameraPath p = load_camera_path((dir / "path.json").string(), 100, 100);
    ASSERT_EQ(p.keyframes.size(), 2u);
    const Camera start = camera_at(p, 0.0), mid = camera_at(p, 2.0), end = camera_at(p, 3.0);
    const CameraPose o0 = orbit_pose(0, 0, 2), o90 = orbit_pose(90, 0, 2), o45 = orbit_pose(45, 0, 2);
    for (int a = 0; a < 3; ++a) {
        EXPECT_NEAR(start.pose.position[a], o0.position[a], 1e-5f);
        EXPECT_NEAR(start.pose.forward[a], o0.forward[a], 1e-5f);
        EXPECT_NEAR(end.pose.forward[a], o90.forward[a], 1e-5f);
        EXPECT_NEAR(end.pose.up[a], o90.up[a], 1e-5f);
        // Halfway: the orientation of yaw 45 (slerp), the position on the chord (lerp).
        EXPECT_NEAR(mid.pose.forward[a], o45.forward[a], 1e-5f);
        EXPECT_NEAR(mid.pose.right[a], o45.right[a], 1e-5f);
        EXPECT_NEAR(mid.pose.position[a], 0.5f * (o0.position[a] + o90.position[a]), 1e-5f);
    }
    EXPECT_NEAR(fov_y_degrees(mid.intrinsics), 40.f, 1e-3f);
    EXPECT_EQ(mid.intrinsics.width, 40u);
    EXPECT_EQ(camera_path_frames(p, 2.0).size(), 5u);  // t = 1, 1.5, 2, 2.5, 3
}

TEST(NerfPersistCli, BadInputsAreOneLineErrorsWithNoOutput) {
    const fs::path dir = make_temp_dir("nerf_persist_bad");
    const fs::path out = dir / "out";
    const std::string snap = persisted_snapshot().string();
    // Missing and truncated model files.
    expect_cli_input_error("render " + (dir / "missing.fusedngp").string() + " --out " + (out / "v.png").string(), out,
                       "missing.fusedngp");
    const std::string bytes = read_text(snap);
    std::ofstream((dir / "cut.fusedngp").string(), std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size() / 2);
    expect_cli_input_error("render " + (dir / "cut.fusedngp").string() + " --out " + (out / "v.png").string(), out, "cut.fusedngp");
    expect_cli_input_error(nerf_train_args(out, 30) + " --resume " + (dir / "cut.fusedngp").string(), out, "cut.fusedngp");
    // An image-mode snapshot where a NeRF one is expected, and the other way round.
    Snapshot image_snap;
    image_snap.config = json::object();
    image_snap.mode = "image";
    image_snap.mode_info = json::object();
    image_snap.backend = "cpu";
    save_snapshot((dir / "image.fusedngp").string(), image_snap);
    expect_cli_input_error(nerf_train_args(out, 30) + " --resume " + (dir / "image.fusedngp").string(), out,
                       "not a NeRF snapshot");
    expect_cli_input_error("train --data " + std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png --steps 3 --resume " +
                           snap + " --out " + out.string(),
                       out, "nerf-snapshot-v1");
    // `mesh` takes NeRF models (tests/test_nerf_mesh.cpp), but not the SDF mode's --level.
    expect_cli_input_error("mesh " + snap + " --level 0.5 --out " + (out / "m.ply").string(), out, "--level");
    // Camera paths.
    write_text_file(dir / "broken.json", "{\"keyframes\": [");
    expect_cli_input_error("render " + snap + " --camera-path " + (dir / "broken.json").string() + " --out " + out.string(),
                       out, "broken.json");
    write_text_file(dir / "notime.json", R"({"keyframes": [{"camera": {"orbit": [0, 0, 2]}}]})");
    expect_cli_input_error("render " + snap + " --camera-path " + (dir / "notime.json").string() + " --out " + out.string(),
                       out, "keyframes[0].time");
    write_text_file(dir / "order.json", R"({"keyframes": [{"time": 1, "camera": {"orbit": [0, 0, 2]}},
                                                          {"time": 1, "camera": {"orbit": [9, 0, 2]}}]})");
    expect_cli_input_error("render " + snap + " --camera-path " + (dir / "order.json").string() + " --out " + out.string(),
                       out, "keyframes[1].time");
    // Options that do not fit.
    expect_cli_input_error("render " + snap + " --out " + (out / "v.jpg").string(), out, "v.jpg");
    expect_cli_input_error("render " + snap + " --background pink --out " + (out / "v.png").string(), out, "--background");
    expect_cli_input_error("render " + snap + " --test " + (dir / "nope.json").string() + " --out " + out.string(), out,
                       "nope.json");
    if (available_backends().front() != "cuda")  // no device: --backend cuda is a clear error
        expect_cli_input_error("render " + snap + " --backend cuda --out " + (out / "v.png").string(), out,
                           "--backend cuda");
    if (std::system("command -v ffmpeg >/dev/null 2>&1") != 0) {
        write_text_file(dir / "one.json", R"({"keyframes": [{"time": 0, "camera": {"orbit": [0, 0, 2]}}]})");
        expect_cli_input_error("render " + snap + " --camera-path " + (dir / "one.json").string() + " --out " +
                               (out / "f.mp4").string(),
                           out, "ffmpeg is not on PATH");
    }
}

// Runs `args` with a stand-in `ffmpeg` first on PATH (a script body).
fusedngp::test::CliResult run_with_fake_ffmpeg(const fs::path& dir, const std::string& script, const std::string& args) {
    const fs::path bin = dir / "bin";
    fs::create_directories(bin);
    write_text_file(bin / "ffmpeg", "#!/bin/sh\n" + script + "\n");
    fs::permissions(bin / "ffmpeg", fs::perms::owner_all);
    const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
    auto r = run_cli(args);
    setenv("PATH", old_path.c_str(), 1);
    return r;
}

TEST(NerfPersistCli, CameraPathToMp4PipesRawFramesToFfmpegAndWritesAtomically) {
    const fs::path dir = make_temp_dir("nerf_mp4");
    write_text_file(dir / "path.json", R"({"width": 10, "height": 6, "keyframes": [
        {"time": 0, "camera": {"orbit": [0, 10, 1.4]}}, {"time": 0.5, "camera": {"orbit": [40, 10, 1.4]}}]})");
    const std::string args = "render " + persisted_snapshot().string() + " --camera-path " + (dir / "path.json").string() +
                             " --fps 4 --out " + (dir / "v.mp4").string();
    // The stand-in stores the raw frames in its output file (its last argument).
    auto r = run_with_fake_ffmpeg(dir, "for a; do last=$a; done; cat > \"$last\"", args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(fs::file_size(dir / "v.mp4"), 3u * 10 * 6 * 3);  // frames at t = 0, 0.25, 0.5
    // An ffmpeg that fails leaves nothing behind.
    fs::remove(dir / "v.mp4");
    r = run_with_fake_ffmpeg(dir, "exit 1", args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("ffmpeg failed"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "v.mp4"));
    for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().string().find(".fusedngp-tmp."), std::string::npos) << e.path();
}
