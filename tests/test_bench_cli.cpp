// `fusedngp bench mlp` without a GPU: option parsing, the planned rows of
// --dry-run and the CSV/JSON schema that bench/torch_mlp.py shares. No GPU
// numbers are involved (dry-run rows have empty measurements).
#include "cli_runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace fusedngp::test;
namespace fs = std::filesystem;

namespace {

const std::string kExpectedHeader =
    "kernel,variant,pass,width,depth,n_in,n_out,batch,flop_per_sample,warmup,iters,ms,samples_per_s,tflops,registers,"
    "smem_per_block,blocks_per_sm,occupancy,waves,rows_per_tile,gpu,sm_count,sm_clock_mhz,mem_clock_mhz,driver,commit,io";

std::vector<std::string> split(const std::string& s, char sep);

// One CSV line as column name -> text (columns from kExpectedHeader).
std::map<std::string, std::string> fields_of(const std::string& line) {
    const auto names = split(kExpectedHeader, ',');
    const auto values = split(line, ',');
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) row[names[i]] = values[i];
    return row;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, sep)) parts.push_back(part);
    if (!s.empty() && s.back() == sep) parts.push_back("");
    return parts;
}

class BenchCli : public ::testing::Test {
protected:
    void SetUp() override { dir = make_temp_dir("bench"); }
    void TearDown() override { fs::remove_all(dir); }
    fs::path dir;
};

} // namespace

TEST_F(BenchCli, DryRunCsvHasTheSharedSchemaAndOneRowPerPlannedCase) {
    const fs::path csv = dir / "plan.csv";
    CliResult r = run_cli("bench mlp --dry-run --widths 16,64 --depths 2 --batches 2^10,4096 --warmup 2 --iters 7 --csv " +
                          csv.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = split(read_text(csv.string()), '\n');
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), "");  // the file ends with a newline
    lines.pop_back();
    EXPECT_EQ(lines[0], kExpectedHeader);
    const size_t n_columns = split(kExpectedHeader, ',').size();
    // 2 widths x 1 depth x 2 batches x 2 kernels x 2 passes.
    ASSERT_EQ(lines.size(), 1u + 16u);
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(split(lines[i], ',').size(), n_columns) << lines[i];

    // Order: width, batch, kernel, pass (innermost).
    const auto first = fields_of(lines[1]);
    EXPECT_EQ(first.at("kernel"), "fused");
    EXPECT_EQ(first.at("pass"), "inference");
    EXPECT_EQ(first.at("width"), "16");
    EXPECT_EQ(first.at("depth"), "2");
    EXPECT_EQ(first.at("n_in"), "32");      // default n_in
    EXPECT_EQ(first.at("n_out"), "16");      // default n_out
    EXPECT_EQ(first.at("batch"), "1024");    // 2^10
    // 2 * (32*16 + (2-1)*16*16 + 16*16) multiply-adds.
    EXPECT_EQ(first.at("flop_per_sample"), "2048");
    EXPECT_EQ(first.at("warmup"), "2");
    EXPECT_EQ(first.at("iters"), "7");
    EXPECT_EQ(first.at("ms"), "");  // not measured
    EXPECT_EQ(first.at("gpu"), "dry-run");
    EXPECT_EQ(first.at("io"), "fp32");  // default
    const auto second = fields_of(lines[2]);
    EXPECT_EQ(second.at("kernel"), "fused");
    EXPECT_EQ(second.at("pass"), "train");
    EXPECT_EQ(second.at("flop_per_sample"), "6144");  // training step: 3x the forward FLOP
    EXPECT_EQ(fields_of(lines[3]).at("kernel"), "cublas");
    EXPECT_EQ(fields_of(lines[5]).at("batch"), "4096");
    const auto last = fields_of(lines.back());
    EXPECT_EQ(last.at("kernel"), "cublas");
    EXPECT_EQ(last.at("pass"), "train");
    EXPECT_EQ(last.at("width"), "64");
    EXPECT_EQ(last.at("batch"), "4096");
}

TEST_F(BenchCli, DryRunJsonHasTheSameColumnsWithNullMeasurements) {
    const fs::path json_path = dir / "plan.json";
    CliResult r = run_cli("bench mlp --dry-run --widths 32 --kernels cublas --passes train --batches 65536 --json " +
                          json_path.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(read_text(json_path.string()));
    ASSERT_EQ(doc.at("rows").size(), 1u);
    const auto& row = doc["rows"][0];
    for (const std::string& c : split(kExpectedHeader, ',')) {
        EXPECT_TRUE(row.contains(c)) << c;
    }
    EXPECT_EQ(row["kernel"], "cublas");
    EXPECT_EQ(row["pass"], "train");
    EXPECT_EQ(row["batch"].get<double>(), 65536.0);
    EXPECT_TRUE(row["ms"].is_null());
    EXPECT_TRUE(row["tflops"].is_null());
}

// The study's resource restrictions apply to the fused kernel only and name
// its rows' variant (the caps by default, or --variant).
TEST_F(BenchCli, RestrictionsNameTheVariantOfFusedRowsOnly) {
    const fs::path csv = dir / "restricted.csv";
    CliResult r = run_cli("bench mlp --dry-run --widths 64 --passes train --batches 2^16 --fused-smem-per-sm 100 "
                          "--fused-smem-per-block 99 --fused-blocks-per-sm 1 --csv " + csv.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = split(read_text(csv.string()), '\n');
    lines.pop_back();
    ASSERT_EQ(lines.size(), 1u + 2u);
    EXPECT_EQ(fields_of(lines[1]).at("kernel"), "fused");
    EXPECT_EQ(fields_of(lines[1]).at("variant"), "smem_sm_kb100+smem_block_kb99+blocks_per_sm1");
    EXPECT_EQ(fields_of(lines[2]).at("kernel"), "cublas");
    EXPECT_EQ(fields_of(lines[2]).at("variant"), "");

    ASSERT_EQ(run_cli("bench mlp --dry-run --widths 64 --kernels fused --fused-smem-per-sm 100 --variant rtx3090_smem "
                      "--csv " + csv.string()).exit_code, 0);
    lines = split(read_text(csv.string()), '\n');
    EXPECT_EQ(fields_of(lines[1]).at("variant"), "rtx3090_smem");
}

// fp16 I/O is planned for the fused kernel only; cuBLAS keeps its fp32 rows.
TEST_F(BenchCli, HalfIoRowsAreTheFusedKernelsOnly) {
    const fs::path csv = dir / "io.csv";
    CliResult r = run_cli("bench mlp --dry-run --widths 32 --batches 2^16 --io fp32,fp16 --csv " + csv.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = split(read_text(csv.string()), '\n');
    lines.pop_back();
    ASSERT_EQ(lines.size(), 1u + 6u) << read_text(csv.string());
    std::vector<std::string> seen;
    for (size_t i = 1; i < lines.size(); ++i) {
        const auto f = fields_of(lines[i]);
        seen.push_back(f.at("kernel") + "/" + f.at("pass") + "/" + f.at("io"));
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"fused/inference/fp32", "fused/inference/fp16", "fused/train/fp32",
                                              "fused/train/fp16", "cublas/inference/fp32", "cublas/train/fp32"}));
    EXPECT_NE(r.out.find("fp16"), std::string::npos) << r.out;
    EXPECT_EQ(run_cli("bench mlp --dry-run --io fp8").exit_code, 2);
}

TEST_F(BenchCli, DryRunPrintsTheTable) {
    CliResult r = run_cli("bench mlp --dry-run --widths 128 --kernels fused --passes inference");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Gsamples/s"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1048576"), std::string::npos) << r.out;  // default batch 2^20
}

TEST_F(BenchCli, BadOptionsExitWithUsageError) {
    EXPECT_EQ(run_cli("bench mlp --dry-run --kernels fused,tensorflow").exit_code, 2);
    EXPECT_EQ(run_cli("bench mlp --dry-run --passes backward").exit_code, 2);
    CliResult bad_batch = run_cli("bench mlp --dry-run --batches 2^x");
    EXPECT_EQ(bad_batch.exit_code, 2);
    EXPECT_NE(bad_batch.err.find("--batches"), std::string::npos) << bad_batch.err;
    EXPECT_EQ(run_cli("bench mlp --dry-run --batches 0").exit_code, 2);
    EXPECT_EQ(run_cli("bench mlp --dry-run --iters 0").exit_code, 2);
    EXPECT_EQ(run_cli("bench").exit_code, 2);  // needs a benchmark name
}

#if !FUSEDNGP_HAVE_CUDA
TEST_F(BenchCli, MeasuringWithoutCudaSaysSoAndExits2) {
    const fs::path csv = dir / "none.csv";
    CliResult r = run_cli("bench mlp --widths 16 --csv " + csv.string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("without CUDA"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(csv));
}
#endif

// The cpu kernel times the CPU reference Mlp<float> in any build, with or
// without a GPU.
TEST_F(BenchCli, CpuKernelMeasuresWithoutAGpu) {
    const fs::path csv = dir / "cpu.csv";
    CliResult r = run_cli("bench mlp --kernels cpu --widths 16 --depths 1,2 --batches 128 --warmup 1 --iters 3 --csv " +
                          csv.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = split(read_text(csv.string()), '\n');
    lines.pop_back();  // trailing newline
    ASSERT_EQ(lines.size(), 1u + 4u);  // 2 depths x 2 passes
    EXPECT_EQ(lines[0], kExpectedHeader);
    for (size_t i = 1; i < lines.size(); ++i) {
        ASSERT_EQ(split(lines[i], ',').size(), split(kExpectedHeader, ',').size()) << lines[i];
        const auto f = fields_of(lines[i]);
        EXPECT_EQ(f.at("kernel"), "cpu");
        EXPECT_GT(std::stod(f.at("ms")), 0.0) << lines[i];   // ms
        EXPECT_GT(std::stod(f.at("samples_per_s")), 0.0) << lines[i];   // samples_per_s
        EXPECT_EQ(f.at("gpu").rfind("cpu: ", 0), 0u) << f.at("gpu");  // the device column names the CPU
        EXPECT_EQ(f.at("sm_count"), "");                           // no SM count on a CPU
        EXPECT_EQ(f.at("registers"), "");  // resources are recorded for the fused kernel only
        EXPECT_EQ(f.at("variant"), "");
    }
}
