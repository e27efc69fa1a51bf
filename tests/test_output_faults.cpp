// Outputs survive a process killed while writing them. The binary runs as a
// child process writing a snapshot (train), exported weights (export) and a
// PNG (render) over a good file of the same name; the test waits for the
// write's temporary file to appear, waits a random part of the time a write
// takes, and SIGKILLs it. After every kill the file at the output path must
// load with our own reader (the atomic temporary-file-and-rename write), and
// the temporary file a kill leaves must be gone once the next run has
// started in that folder. Files that are not our stale temporary files stay.
#include "cli_runner.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "persist/model_file.h"
#include "persist/snapshot.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kKillsPerKind = 20;

// A 2^17-entry hash grid over 8 levels: 1.1 M parameters, a 13 MB snapshot
// (parameters and Adam's two moments), written in tens of milliseconds.
const char* kLargeConfig = R"({
  "loss": {"otype": "L2"},
  "optimizer": {"otype": "Adam", "learning_rate": 1e-2},
  "encoding": {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2, "log2_hashmap_size": 17,
               "base_resolution": 16, "per_level_scale": 2.0},
  "network": {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}
})";

pid_t spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(FUSEDNGP_BINARY));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(FUSEDNGP_BINARY, argv.data());
        _exit(127);
    }
    return pid;
}

int run_to_end(const std::vector<std::string>& args) {
    const pid_t pid = spawn(args);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Names in `dir` that have atomic_temp_path's form.
std::vector<std::string> temp_files(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir))
        if (fusedngp::is_atomic_temp_name(e.path().filename().string())) names.push_back(e.path().filename().string());
    return names;
}

struct Kind {
    std::string name;
    std::vector<std::string> args;
    fs::path output;
    std::function<void(const fs::path&)> check_loads;  // our own reader; ADD_FAILUREs if it does not load
};

struct KillStats {
    int kills = 0;      // SIGKILLed after its temporary file appeared
    int mid_write = 0;  // ... and before the rename (the temporary file was still there)
    int attempts = 0;
};

// Runs `kind` once to the end (the good file), then kills it `kKillsPerKind`
// times at random points of its write.
KillStats kill_while_writing(const Kind& kind, std::mt19937& rng, const std::vector<std::string>& foreign) {
    KillStats stats;
    EXPECT_EQ(run_to_end(kind.args), 0) << kind.name;
    if (!fs::exists(kind.output)) {
        ADD_FAILURE() << kind.name << ": the first run wrote no " << kind.output;
        return stats;
    }
    kind.check_loads(kind.output);

    // How long the temporary file exists in an uninterrupted run: the kills
    // fall uniformly within that time (and a little past it).
    double window_s = 0;
    {
        const pid_t pid = spawn(kind.args);
        const std::string tmp = kind.output.string() + ".fusedngp-tmp." + std::to_string(pid);
        Clock::time_point seen{};
        bool was_seen = false;
        int status = 0;
        while (::waitpid(pid, &status, WNOHANG) == 0) {
            const bool exists = fs::exists(tmp);
            if (exists && !was_seen) {
                was_seen = true;
                seen = Clock::now();
            }
            if (was_seen && !exists) {
                window_s = std::chrono::duration<double>(Clock::now() - seen).count();
                break;
            }
            ::usleep(50);
        }
        ::waitpid(pid, &status, 0);
        EXPECT_TRUE(was_seen) << kind.name << ": never saw " << tmp;
    }
    window_s = std::max(window_s, 0.0005);

    std::string left_by_previous;
    while (stats.kills < kKillsPerKind && stats.attempts < 8 * kKillsPerKind) {
        ++stats.attempts;
        const pid_t pid = spawn(kind.args);
        const std::string tmp = kind.output.string() + ".fusedngp-tmp." + std::to_string(pid);
        int status = 0;
        bool exited = false, seen = false;
        while (!(seen = fs::exists(tmp))) {
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                exited = true;
                break;
            }
            ::usleep(50);
        }
        if (seen) {
            // This run has passed its start-up, output folder checks included.
            if (!left_by_previous.empty()) {
                EXPECT_FALSE(fs::exists(left_by_previous))
                    << kind.name << ": a stale temporary file outlived the next run's start: " << left_by_previous;
            }
            std::uniform_real_distribution<double> delay(0.0, window_s);
            std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            exited = true;
        }
        EXPECT_TRUE(exited);
        const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        if (!killed) {
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << kind.name << ": status " << status;
        }
        if (killed && seen) {
            ++stats.kills;
            if (fs::exists(tmp)) {
                ++stats.mid_write;
                left_by_previous = tmp;
            } else {
                left_by_previous.clear();
            }
        }
        SCOPED_TRACE(kind.name + " after kill " + std::to_string(stats.kills));
        if (!fs::exists(kind.output)) {
            ADD_FAILURE() << kind.output << " is gone";
            return stats;
        }
        kind.check_loads(kind.output);
    }

    // An uninterrupted run afterwards leaves no temporary file of anyone's.
    EXPECT_EQ(run_to_end(kind.args), 0) << kind.name;
    kind.check_loads(kind.output);
    for (const std::string& name : temp_files(kind.output.parent_path()))
        EXPECT_NE(std::find(foreign.begin(), foreign.end(), name), foreign.end()) << kind.name << ": left " << name;
    return stats;
}

void check_snapshot(const fs::path& p, size_t n_params) {
    try {
        const fusedngp::Snapshot s = fusedngp::load_snapshot(p.string());
        EXPECT_EQ(s.state.params.size(), n_params);
    } catch (const std::exception& e) {
        ADD_FAILURE() << p << " does not load: " << e.what();
    }
}

void check_model(const fs::path& p) {
    try {
        const fusedngp::TrainedModel t = fusedngp::open_trained_model(p.string());
        EXPECT_EQ(t.inference_params.size(), t.model->n_params());
    } catch (const std::exception& e) {
        ADD_FAILURE() << p << " does not load: " << e.what();
    }
}

void check_png(const fs::path& p, int width, int height) {
    try {
        const fusedngp::Image img = fusedngp::load_image(p.string());
        EXPECT_EQ(img.width, width);
        EXPECT_EQ(img.height, height);
    } catch (const std::exception& e) {
        ADD_FAILURE() << p << " does not load: " << e.what();
    }
}

pid_t a_finished_process_id() {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return pid;
}

} // namespace

TEST(OutputFaults, KilledWritesLeaveThePreviousFileIntactAndTheNextRunCleansUp) {
    const fs::path dir = fusedngp::test::make_temp_dir("output_faults");
    const fs::path image = dir / "tiny.png";
    fusedngp::Image rgb = fusedngp::make_image(16, 16, 3, fusedngp::ColorSpace::Srgb, "tiny");
    for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = (float)(i % 11) / 10.0f;
    fusedngp::save_png(rgb, image.string());
    fusedngp::test::write_text_file(dir / "large.json", kLargeConfig);

    const fs::path train_out = dir / "train";
    const std::vector<std::string> train_args = {"train", "--data", image.string(), "--backend", "cpu", "--config",
                                                 (dir / "large.json").string(), "--steps", "1", "--batch", "256",
                                                 "--eval-every", "0", "--out", train_out.string()};
    ASSERT_EQ(run_to_end(train_args), 0);
    const fs::path model = dir / "model.fusedngp";
    fs::copy_file(train_out / "snapshot.fusedngp", model);
    const size_t n_params = fusedngp::load_snapshot(model.string()).state.params.size();

    // Files in the render folder the clean-up must leave alone: another
    // program's temporary file, names that only look like ours, a temporary
    // file of a running process (this one) and a folder.
    const fs::path render_dir = dir / "render";
    fs::create_directories(render_dir / "dir.fusedngp-tmp.1");
    const std::vector<std::string> foreign = {"dir.fusedngp-tmp.1", "notes.tmp.1", "render.png.fusedngp-tmp.", "render.png.fusedngp-tmp.12x",
                                              ".fusedngp-tmp.1", "keep.fusedngp-tmp." + std::to_string(getpid())};
    for (size_t i = 1; i < foreign.size(); ++i) fusedngp::test::write_text_file(render_dir / foreign[i], "user data");
    // A stale one of a finished process: removed by the first run.
    const fs::path stale = render_dir / ("render.png.fusedngp-tmp." + std::to_string(a_finished_process_id()));
    fusedngp::test::write_text_file(stale, "half a file");

    const int side = 1024;
    std::vector<Kind> kinds = {
        {"snapshot (train)", train_args, train_out / "snapshot.fusedngp",
         [&](const fs::path& p) { check_snapshot(p, n_params); }},
        {"safetensors (export)", {"export", model.string(), "--out", (dir / "export" / "weights.safetensors").string()},
         dir / "export" / "weights.safetensors", [](const fs::path& p) { check_model(p); }},
        {"png (render)",
         {"render", model.string(), "--backend", "cpu", "--width", std::to_string(side), "--height",
          std::to_string(side), "--out", (render_dir / "render.png").string()},
         render_dir / "render.png", [&](const fs::path& p) { check_png(p, side, side); }},
    };

    const unsigned seed = std::random_device{}();
    std::mt19937 rng(seed);
    std::printf("kill delays seeded with %u\n", seed);
    for (const Kind& kind : kinds) {
        const auto start = Clock::now();
        const KillStats s = kill_while_writing(kind, rng, foreign);
        std::printf("%s: %d kills during the write (%d before the rename, temporary file left), %d runs, %.1f s\n",
                    kind.name.c_str(), s.kills, s.mid_write, s.attempts,
                    std::chrono::duration<double>(Clock::now() - start).count());
        EXPECT_GE(s.kills, kKillsPerKind) << kind.name;
        // A good share of the kills must hit the write before its rename
        // (the PNG's write is the shortest, about a millisecond).
        EXPECT_GE(s.mid_write, kKillsPerKind / 4) << kind.name;
    }

    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::is_directory(render_dir / "dir.fusedngp-tmp.1"));
    for (size_t i = 1; i < foreign.size(); ++i)
        EXPECT_EQ(fusedngp::test::read_text((render_dir / foreign[i]).string()), "user data") << foreign[i];
    fs::remove_all(dir);
}

// The clean-up's own rules, in this process: only regular files named like
// our temporary files, of processes that are not running, last written
// before this process started.
TEST(OutputFaults, StaleTemporaryFilesAreOnlyThoseOfFinishedProcessesFromBeforeThisOne) {
    const fs::path dir = fusedngp::test::make_temp_dir("stale_temp");
    const std::string dead = std::to_string(a_finished_process_id());
    const fs::path old_file = dir / ("a.png.fusedngp-tmp." + dead);
    const fs::path new_file = dir / ("b.png.fusedngp-tmp." + dead);
    const fs::path live = dir / ("c.png.fusedngp-tmp." + std::to_string(getpid()));
    const fs::path other = dir / ("d.png.tmp." + dead);
    for (const auto& p : {old_file, new_file, live, other}) fusedngp::test::write_text_file(p, "x");
    const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (const auto& p : {old_file, live, other}) fs::last_write_time(p, hour_ago);

    EXPECT_EQ(fusedngp::remove_stale_temp_files(dir.string()), 1u);
    EXPECT_FALSE(fs::exists(old_file));
    EXPECT_TRUE(fs::exists(new_file));  // written after this process started
    EXPECT_TRUE(fs::exists(live));
    EXPECT_TRUE(fs::exists(other));
    EXPECT_TRUE(fusedngp::is_atomic_temp_name("snapshot.fusedngp.fusedngp-tmp.42"));
    EXPECT_FALSE(fusedngp::is_atomic_temp_name("snapshot.fusedngp"));
    EXPECT_FALSE(fusedngp::is_atomic_temp_name(".fusedngp-tmp.42"));
    EXPECT_FALSE(fusedngp::is_atomic_temp_name("x.fusedngp-tmp.4a"));
    fs::remove_all(dir);
}
