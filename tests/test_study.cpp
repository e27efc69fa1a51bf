// The fused-MLP study tooling on the CPU (no GPU numbers): a reduced sweep
// through `bench/study.py run` with `--kernels cpu`, then `study.py plot`.
// Checks the appended CSV (schema, one row per case, resume without
// duplicates), the JSON summary and that the plots are real PNG images.
#include "cli_runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace fusedngp::test;
namespace fs = std::filesystem;

namespace {

const char* kStudyPython = "/usr/bin/python3";
const std::string kStudyCsvHeader =
    "kernel,variant,pass,width,depth,n_in,n_out,batch,flop_per_sample,warmup,iters,ms,samples_per_s,tflops,registers,"
    "smem_per_block,blocks_per_sm,occupancy,waves,rows_per_tile,gpu,sm_count,sm_clock_mhz,mem_clock_mhz,driver,commit,io";
// The schema of the first H200 slice (before variant and the resource columns).
const std::string kOldHeader =
    "kernel,pass,width,depth,n_in,n_out,batch,flop_per_sample,warmup,iters,ms,samples_per_s,tflops,gpu,sm_count,"
    "sm_clock_mhz,mem_clock_mhz,driver,commit";

std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> parts;
    std::stringstream ss(line);
    for (std::string part; std::getline(ss, part, ',');) parts.push_back(part);
    if (!line.empty() && line.back() == ',') parts.push_back("");
    return parts;
}

std::string study_script() { return std::string(FUSEDNGP_SOURCE_DIR) + "/bench/study.py"; }

// Exit status of a shell command, its stdout+stderr into `log`.
int run_shell(const std::string& cmd, const fs::path& log) {
    const int status = std::system((cmd + " >" + log.string() + " 2>&1 </dev/null").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) lines.push_back(line);
    return lines;
}

bool is_png(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    char sig[8] = {};
    f.read(sig, 8);
    return f && std::string(sig, 8) == "\x89PNG\r\n\x1a\n";
}

class StudyTooling : public ::testing::Test {
protected:
    void SetUp() override {
        dir = make_temp_dir("study");
        ASSERT_EQ(run_shell(std::string(kStudyPython) + " -c 'import numpy, matplotlib'", dir / "probe.log"), 0)
            << kStudyPython << " cannot import numpy and matplotlib, declared dependencies of bench/study.py "
            << "(Debian: python3-numpy python3-matplotlib, see scripts/install-deps): " << read_text((dir / "probe.log").string());
    }
    void TearDown() override { fs::remove_all(dir); }

    // Two widths x two batches x depth 1 x cpu x two passes = 8 rows.
    int run_reduced_sweep(const std::string& log_name) {
        return run_shell(std::string(kStudyPython) + " " + study_script() + " run --out " + (dir / "out").string() +
                             " --fusedngp " + FUSEDNGP_BINARY +
                             " --widths 16,32 --depths 1 --batches 2^6,256 --kernels cpu --warmup 1 --iters 3 --quiet",
                         dir / log_name);
    }
    fs::path dir;
};

} // namespace

// bench/low_precision_study.py's e4m3 rounding against the format's 253
// finite values, decoded from their bit patterns (fixed points, nearest
// neighbour, ties to even, saturation at 448).
TEST_F(StudyTooling, LowPrecisionStudyRoundsToE4m3Codes) {
    const std::string script = std::string(FUSEDNGP_SOURCE_DIR) + "/bench/low_precision_study.py";
    const fs::path log = dir / "self_test.log";
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " " + script + " --self-test", log), 0) << read_text(log.string());
    EXPECT_NE(read_text(log.string()).find("253 finite codes"), std::string::npos) << read_text(log.string());
}

// The study end to end on a model the CLI trains and exports: every form's
// row, fp16 as good as fp32 (our kernels' numerics), the work fractions.
TEST_F(StudyTooling, LowPrecisionStudyRunsOnAnExportedImageModel) {
    const std::string bin = FUSEDNGP_BINARY;
    const fs::path png = dir / "small.png", model = dir / "model.safetensors", log = dir / "study.log";
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " -c \"from PIL import Image; Image.open('" + FUSEDNGP_SOURCE_DIR +
                            "/data/astronaut.png').convert('RGB').resize((48, 40)).save('" + png.string() + "')\"",
                        dir / "png.log"),
              0)
        << read_text((dir / "png.log").string());
    ASSERT_EQ(run_shell(bin + " train --backend cpu --data " + png.string() + " --steps 60 --batch 2048 --eval-every 0 --out " +
                            (dir / "train").string(),
                        dir / "train.log"),
              0)
        << read_text((dir / "train.log").string());
    ASSERT_EQ(run_shell(bin + " export " + (dir / "train" / "snapshot.fusedngp").string() + " --out " + model.string(),
                        dir / "export.log"),
              0)
        << read_text((dir / "export.log").string());
    const std::string script = std::string(FUSEDNGP_SOURCE_DIR) + "/bench/low_precision_study.py";
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " " + script + " image " + model.string() + " --image " + png.string(),
                        log),
              0)
        << read_text(log.string());
    // | model | form | MACs kept | PSNR |
    std::map<std::string, std::pair<double, double>> rows;
    for (const std::string& line : lines_of(read_text(log.string()))) {
        std::vector<std::string> cells;
        std::stringstream ss(line);
        for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(cell);
        if (cells.size() < 5 || cells[2].find("form") != std::string::npos || cells[2].find("---") != std::string::npos)
            continue;
        std::string form = cells[2];
        form.erase(std::remove(form.begin(), form.end(), ' '), form.end());
        rows[form] = {std::stod(cells[3]), std::stod(cells[4])};
    }
    for (const char* form : {"fp32", "fp16", "fp8w", "fp8", "sparse0.5", "sparse0.35", "sparse0.25"})
        ASSERT_TRUE(rows.count(form)) << form << "\n" << read_text(log.string());
    EXPECT_GT(rows["fp32"].second, 15.0);  // the model learned something
    EXPECT_NEAR(rows["fp16"].second, rows["fp32"].second, 0.05);
    EXPECT_EQ(rows["fp8"].first, 1.0);
    EXPECT_LT(rows["sparse0.25"].first, 1.0);  // some products skipped
    EXPECT_LE(rows["sparse0.25"].first, rows["sparse0.5"].first);
}

TEST_F(StudyTooling, ReducedCpuSweepWritesTheSharedCsvSchemaAndResumesWithoutDuplicates) {
    ASSERT_EQ(run_reduced_sweep("run1.log"), 0) << read_text((dir / "run1.log").string());
    const fs::path csv = dir / "out" / "study.csv";
    std::vector<std::string> lines = lines_of(read_text(csv.string()));
    ASSERT_EQ(lines.size(), 1u + 8u) << read_text(csv.string());
    EXPECT_EQ(lines[0], kStudyCsvHeader);
    const auto header = split_commas(kStudyCsvHeader);
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto f = split_commas(lines[i]);
        ASSERT_EQ(f.size(), header.size()) << lines[i];
        EXPECT_EQ(f[0], "cpu") << lines[i];
        for (const char* measured : {"ms", "samples_per_s", "tflops"}) {
            const size_t c = std::find(header.begin(), header.end(), measured) - header.begin();
            EXPECT_FALSE(f[c].empty()) << measured << " empty: " << lines[i];
        }
    }

    // A second run finds every case done: no new rows.
    ASSERT_EQ(run_reduced_sweep("run2.log"), 0) << read_text((dir / "run2.log").string());
    EXPECT_EQ(lines_of(read_text(csv.string())).size(), 9u);
    EXPECT_NE(read_text((dir / "run2.log").string()).find("0 groups run"), std::string::npos);

    const auto summary = nlohmann::json::parse(read_text((dir / "out" / "summary.json").string()));
    EXPECT_EQ(summary.at("n_rows"), 8);
    EXPECT_EQ(summary.at("rows_per_kernel").at("cpu"), 8);
    EXPECT_NE(summary.at("machines").at("cpu").at("gpu").get<std::string>().find("cpu: "), std::string::npos);
}

// A CSV from before the variant/resource columns is rewritten with today's
// columns (its rows kept, the new columns empty) and the sweep appends to it.
TEST_F(StudyTooling, ResumesACsvWithTheOlderColumns) {
    fs::create_directories(dir / "out");
    const fs::path csv = dir / "out" / "study.csv";
    write_text_file(csv, kOldHeader + "\ncublas,train,64,2,32,16,1024,43008,5,20,0.05,2.048e7,0.881,NVIDIA H200,132,"
                                      "1980,3201,580.159.04,f8696f7\n");
    ASSERT_EQ(run_reduced_sweep("run.log"), 0) << read_text((dir / "run.log").string());
    const std::vector<std::string> lines = lines_of(read_text(csv.string()));
    ASSERT_EQ(lines.size(), 1u + 1u + 8u) << read_text(csv.string());
    EXPECT_EQ(lines[0], kStudyCsvHeader);
    EXPECT_EQ(lines[1].rfind("cublas,,train,64,2,", 0), 0u) << lines[1];
    EXPECT_NE(lines[1].find(",0.05,"), std::string::npos) << lines[1];
}

TEST_F(StudyTooling, PlotWritesValidPngsFromTheCsv) {
    ASSERT_EQ(run_reduced_sweep("run.log"), 0) << read_text((dir / "run.log").string());
    // The CPU sweep has no fused rows; add fake fused rows (times halved)
    // so the speedup heatmaps have cells. Only the plotting is under test here.
    const fs::path csv = dir / "out" / "study.csv";
    const std::string add_fused = std::string(kStudyPython) + " -c \"import csv,sys; p=sys.argv[1]; " +
                                  "rows=list(csv.DictReader(open(p))); w=csv.DictWriter(open(p,'a'),rows[0].keys()); " +
                                  "[w.writerow({**r,'kernel':'fused','ms':float(r['ms'])/2,'registers':96,"
                                  "'smem_per_block':57344,'blocks_per_sm':2,'occupancy':0.25,'waves':1.5,"
                                  "'rows_per_tile':256}) for r in rows]; " +
                                  "[w.writerow({**r,'kernel':'fused','variant':'rtx3090_smem','ms':float(r['ms'])*0.8}) "
                                  "for r in rows]; " +
                                  "[w.writerow({**r,'kernel':'cublas'}) for r in rows]\" " + csv.string();
    ASSERT_EQ(run_shell(add_fused, dir / "fake.log"), 0) << read_text((dir / "fake.log").string());

    // The summary of the whole CSV: speedups, restricted variants, resources, small-batch latency.
    ASSERT_EQ(run_reduced_sweep("rerun.log"), 0) << read_text((dir / "rerun.log").string());
    const auto summary = nlohmann::json::parse(read_text((dir / "out" / "summary.json").string()));
    ASSERT_EQ(summary.at("fused_speedup_over_best_unfused").size(), 8u);
    for (const auto& e : summary["fused_speedup_over_best_unfused"]) EXPECT_NEAR(e.at("speedup").get<double>(), 2.0, 1e-3);
    const auto& restricted = summary.at("restricted").at("rtx3090_smem");
    EXPECT_NE(restricted.at("emulates").get<std::string>().find("RTX 3090"), std::string::npos);
    ASSERT_EQ(restricted.at("fused_speedup_over_best_unfused").size(), 8u);
    for (const auto& e : restricted["fused_speedup_over_best_unfused"]) EXPECT_NEAR(e.at("speedup").get<double>(), 1.25, 1e-3);
    ASSERT_EQ(summary.at("fused_resources").size(), 4u);  // 2 widths x 2 passes, depth 1
    EXPECT_EQ(summary["fused_resources"][0].at("registers"), 96);
    EXPECT_EQ(summary["fused_resources"][0].at("waves_by_batch").size(), 2u);
    EXPECT_EQ(summary.at("small_batch_latency_us").size(), 8u);

    // The markdown tables of the study document.
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " " + study_script() + " report --csv " + csv.string(), dir / "report.md"), 0)
        << read_text((dir / "report.md").string());
    const std::string report = read_text((dir / "report.md").string());
    for (const char* heading : {"## Largest width at which fused wins", "## Fused speedup, train",
                                "## Restricted: rtx3090_smem", "## Fused kernel resources", "## Small batches"})
        EXPECT_NE(report.find(heading), std::string::npos) << heading << "\n" << report;
    EXPECT_NE(report.find("| train | 1 | 32 |"), std::string::npos) << report;  // fused wins up to W = 32

    const fs::path plots = dir / "plots";
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " " + study_script() + " plot --csv " + csv.string() + " --out " +
                            plots.string() + " --peak-tflops 1 --peak-gbps 50",
                        dir / "plot.log"),
              0)
        << read_text((dir / "plot.log").string());
    for (const char* name : {"speedup_heatmap_train.png", "speedup_heatmap_inference.png", "roofline.png",
                             "throughput_train.png", "throughput_inference.png", "latency_small_batch.png",
                             "restrictions.png"}) {
        const fs::path png = plots / name;
        ASSERT_TRUE(fs::exists(png)) << name << "\n" << read_text((dir / "plot.log").string());
        EXPECT_TRUE(is_png(png)) << name;
        EXPECT_GT(fs::file_size(png), 5000u) << name;  // a real figure, not an empty canvas
    }
}

// The restricted variants become `bench mlp` calls of the fused kernel with
// the caps and the variant name (checked without a GPU through --dry-run).
TEST_F(StudyTooling, DryRunListsTheRestrictedFusedRuns) {
    ASSERT_EQ(run_shell(std::string(kStudyPython) + " " + study_script() + " run --out " + (dir / "out").string() +
                            " --fusedngp " + FUSEDNGP_BINARY +
                            " --widths 64,512 --depths 2 --batches 2^16 --kernels fused,cublas --torch-python /bin/false"
                            " --variants rtx3090_smem,one_block_per_sm --dry-run",
                        dir / "dry.log"),
              0);
    const std::string log = read_text((dir / "dry.log").string());
    EXPECT_NE(log.find("--fused-smem-per-sm 100 --fused-smem-per-block 99 --variant rtx3090_smem"), std::string::npos)
        << log;
    EXPECT_NE(log.find("--fused-blocks-per-sm 1 --variant one_block_per_sm"), std::string::npos) << log;
    // W = 64: fused + cublas + two variants; W = 512: cublas only (no fused kernel, no variants).
    EXPECT_NE(log.find("dry run: 4 groups to run"), std::string::npos) << log;
    EXPECT_EQ(log.find("--widths 512 --depths 2 --kernels fused"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(dir / "out" / "study.csv"));
}

TEST_F(StudyTooling, PlotOfACsvWithoutMeasurementsFailsClearly) {
    const fs::path csv = dir / "empty.csv";
    write_text_file(csv, kStudyCsvHeader + "\n");
    EXPECT_NE(run_shell(std::string(kStudyPython) + " " + study_script() + " plot --csv " + csv.string() + " --out " +
                            (dir / "plots").string(),
                        dir / "plot.log"),
              0);
    EXPECT_NE(read_text((dir / "plot.log").string()).find("no measured rows"), std::string::npos);
}
