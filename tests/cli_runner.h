// Runs the fusedngp binary in tests and captures its exit code and output.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>
#include <unistd.h>

namespace fusedngp::test {

struct CliResult {
    int exit_code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

inline std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A fresh, empty directory under the system temp dir, unique per call.
inline std::filesystem::path make_temp_dir(const std::string& tag) {
    static int counter = 0;
    auto dir = std::filesystem::temp_directory_path() /
               ("fusedngp_test_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// `args` is appended to the binary path as-is (quote paths yourself).
inline CliResult run_cli(const std::string& args) {
    static int counter = 0;
    auto dir = std::filesystem::temp_directory_path();
    std::string tag = std::to_string(getpid()) + "_" + std::to_string(counter++);
    std::string out_path = (dir / ("fngp_out_" + tag)).string();
    std::string err_path = (dir / ("fngp_err_" + tag)).string();
    std::string cmd = std::string(FUSEDNGP_BINARY) + " " + args + " >" + out_path + " 2>" + err_path + " </dev/null";
    int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(out_path);
    r.err = read_text(err_path);
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return r;
}

// A training run stopped by signals: starts `args` (a run long enough to be
// interrupted), waits for its first progress line ("step "), sends `signals`
// back to back (as `timeout -s INT` delivers one to the process and then to
// its group) and returns its exit code (-1: it never started or did not
// exit); `log` gets its stdout and stderr.
inline int run_cli_interrupted(const std::string& args, const std::vector<int>& signals, std::string& log) {
    const std::string log_path = (make_temp_dir("interrupt") / "log.txt").string();
    const std::string cmd = "exec " + std::string(FUSEDNGP_BINARY) + " " + args + " > " + log_path + " 2>&1";
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
        _exit(127);
    }
    bool started = false;
    for (int i = 0; i < 1200 && !started; ++i) {
        usleep(50 * 1000);
        started = read_text(log_path).find("step ") != std::string::npos;
    }
    for (int sig : signals) kill(pid, started ? sig : SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    log = read_text(log_path);
    return started && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `train_args` (a run of --seconds 120 writing to `out`) stopped by
// `signals` must stop cleanly with everything saved: exit 0, "interrupted: "
// in its last line, the snapshot and `render` in `out`, and a summary whose
// stop_reason says so, written before the 120 s were up. Returns the summary.
inline nlohmann::json expect_saved_after_signals(const std::string& train_args, const std::filesystem::path& out,
                                                 const std::string& render, const std::vector<int>& signals) {
    std::string log;
    const int code = run_cli_interrupted(train_args, signals, log);
    EXPECT_EQ(code, 0) << log;
    EXPECT_NE(log.find("interrupted: "), std::string::npos) << log;
    EXPECT_TRUE(std::filesystem::exists(out / "snapshot.fusedngp")) << log;
    EXPECT_TRUE(std::filesystem::exists(out / render)) << log;
    const std::string summary_text = read_text((out / "summary.json").string());
    const nlohmann::json summary = nlohmann::json::parse(summary_text, nullptr, false);
    EXPECT_FALSE(summary.is_discarded()) << "summary.json: " << summary_text << "\n" << log;
    if (summary.is_discarded()) return nlohmann::json::object();
    EXPECT_EQ(summary.value("stop_reason", ""), "interrupted");
    EXPECT_LT(summary.value("seconds", 1e9), 120.0);
    return summary;
}

inline int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += (c == '\n');
    if (!s.empty() && s.back() != '\n') ++n;
    return n;
}

inline void write_text_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
}

// A command that must fail on bad input: exit 2, one line on stderr naming
// `needle`, and nothing at `out`.
inline void expect_cli_input_error(const std::string& args, const std::filesystem::path& out,
                                   const std::string& needle) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "expected \"" << needle << "\" in: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << out;
}

} // namespace fusedngp::test
