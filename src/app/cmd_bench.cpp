// `fusedngp bench mlp`: inference and training-step throughput of the GPU
// MLP kernels over width x depth x batch x kernel x pass, as a table and as
// CSV/JSON rows (schema below, shared with bench/torch_mlp.py).
//
// The plan, the CSV/JSON writers and the option parsing need no GPU:
// --dry-run writes the planned rows with empty measurements, which is what
// the CPU tests check. Measuring the GPU kernels needs a CUDA build and a
// device; without either the command says so and exits 2. The `cpu` kernel
// (the CPU reference Mlp<float>, see app/mlp_cpu_bench.h) runs anywhere, so
// bench/study.py and its CI test can sweep without a GPU.
#include "app/commands.h"
#include "app/cli_checks.h"
#include "app/mlp_cpu_bench.h"

#include "core/errors.h"

#if FUSEDNGP_HAVE_CUDA
#include "gpu/mlp_bench_runner.h"
#include "gpu/mlp_timing.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

namespace {

struct BenchMlpOptions {
    std::vector<uint32_t> widths = {16, 32, 64, 128, 256};
    std::vector<uint32_t> depths = {2};
    std::vector<std::string> batches = {"2^20"};
    std::vector<std::string> kernels = {"fused", "cublas"};
    std::vector<std::string> passes = {"inference", "train"};
    std::vector<std::string> ios = {"fp32"};
    uint32_t n_in = 32, n_out = 16;
    int warmup = 5, iters = 20;
    std::string csv, json;
    bool dry_run = false;
    // Resource restrictions of the fused kernel (the study's emulation of
    // smaller GPUs); 0 = none. The fused rows then carry `variant`.
    uint32_t fused_smem_per_sm_kb = 0, fused_smem_per_block_kb = 0, fused_blocks_per_sm = 0;
    std::string variant;

    bool restricted() const { return fused_smem_per_sm_kb || fused_smem_per_block_kb || fused_blocks_per_sm; }
    // The variant name of restricted fused rows: --variant, else the caps.
    std::string variant_name() const {
        if (!variant.empty() || !restricted()) return variant;
        std::string name;
        auto add = [&](const char* key, uint32_t v) {
            if (v) name += (name.empty() ? "" : "+") + std::string(key) + std::to_string(v);
        };
        add("smem_sm_kb", fused_smem_per_sm_kb);
        add("smem_block_kb", fused_smem_per_block_kb);
        add("blocks_per_sm", fused_blocks_per_sm);
        return name;
    }
};

// Where the numbers were measured; "dry-run" rows leave it empty. For the
// cpu kernel `gpu` names the CPU and the GPU-only columns stay empty.
struct MachineInfo {
    std::string gpu = "dry-run", driver, commit;
    int sm_count = 0, sm_clock_mhz = 0, mem_clock_mhz = 0;
};

// One run may mix GPU kernels and the cpu kernel; each row names its own device.
struct Machines {
    MachineInfo gpu, cpu;
    const MachineInfo& of(const std::string& kernel) const { return kernel == "cpu" ? cpu : gpu; }
};

bool is_cpu_kernel(const std::string& kernel) { return kernel == "cpu"; }

// One CSV row. Measurements are negative until measured (written empty).
struct BenchRow {
    std::string kernel, variant, pass, io = "fp32";
    uint32_t width = 0, depth = 0, n_in = 0, n_out = 0, batch = 0;
    double flop_per_sample = 0;
    int warmup = 0, iters = 0;
    double ms = -1;
    bool unsupported = false;  // the kernel cannot run this case: the row is dropped
    // Resources of the fused kernel (registers < 0: unknown, written empty).
    int registers = -1, blocks_per_sm = -1;
    double smem_per_block = -1, occupancy = -1, waves = -1, rows_per_tile = -1;
};

// Column order of the CSV (and keys of the JSON rows). bench/torch_mlp.py
// writes the same columns; keep both in sync.
// variant: empty, or the name of a resource restriction of the fused kernel.
// registers..rows_per_tile: the fused kernel's resources (empty otherwise).
// io: the type of the data read and written, fp32 or fp16.
const std::vector<std::string> kCsvColumns = {
    "kernel", "variant", "pass", "width", "depth", "n_in", "n_out", "batch", "flop_per_sample", "warmup", "iters",
    "ms", "samples_per_s", "tflops", "registers", "smem_per_block", "blocks_per_sm", "occupancy", "waves",
    "rows_per_tile", "gpu", "sm_count", "sm_clock_mhz", "mem_clock_mhz", "driver", "commit", "io"};
const std::vector<std::string> kTextColumns = {"kernel", "variant", "pass", "gpu", "driver", "commit", "io"};

// "2^20", "1048576" -> 1048576. Throws InputError naming the option.
uint32_t parse_batch(const std::string& text) {
    auto bad = [&]() {
        return InputError("--batches: '" + text + "' is not a batch size (a positive integer or 2^k, k <= 31)");
    };
    try {
        size_t used = 0;
        if (text.rfind("2^", 0) == 0) {
            const unsigned long k = std::stoul(text.substr(2), &used);
            if (used + 2 != text.size() || k > 31) throw bad();
            return 1u << k;
        }
        const unsigned long long v = std::stoull(text, &used);
        if (used != text.size() || v == 0 || v > 0xffffffffull) throw bad();
        return (uint32_t)v;
    } catch (const std::logic_error&) {  // stoul's invalid_argument / out_of_range
        throw bad();
    }
}

// Same multiply-add count as gpu::mlp_macs_per_sample (documented there);
// repeated here because a CPU-only build has no GPU library.
double flop_per_sample(uint32_t n_in, uint32_t width, uint32_t depth, uint32_t n_out, bool training) {
    const double macs = (double)n_in * width + (double)(depth - 1) * width * width + (double)width * n_out;
    return (training ? 6.0 : 2.0) * macs;
}

// Whether a kernel takes this I/O type: fp16 is the fused kernel's
// (inference_half: fp16 in and out; train_step_half: fp16 input, fp32
// target); every kernel runs fp32.
bool io_measured(const std::string& kernel, const std::string& io) { return io == "fp32" || kernel == "fused"; }

BenchRow plan_row(const BenchMlpOptions& o, const std::string& kernel, const std::string& pass, const std::string& io,
                  uint32_t width, uint32_t depth, const std::string& batch) {
    BenchRow r;
    r.kernel = kernel;
    if (kernel == "fused") r.variant = o.variant_name();
    r.pass = pass;
    r.io = io;
    r.width = width;
    r.depth = depth;
    r.n_in = o.n_in;
    r.n_out = o.n_out;
    r.batch = parse_batch(batch);
    r.flop_per_sample = flop_per_sample(o.n_in, width, depth, o.n_out, pass == "train");
    r.warmup = o.warmup;
    r.iters = o.iters;
    return r;
}

// Every planned row, in output order: depth, width, batch, kernel, pass, io.
std::vector<BenchRow> plan_rows(const BenchMlpOptions& o) {
    std::vector<BenchRow> rows;
    for (uint32_t depth : o.depths)
        for (uint32_t width : o.widths)
            for (const std::string& b : o.batches)
                for (const std::string& kernel : o.kernels)
                    for (const std::string& pass : o.passes)
                        for (const std::string& io : o.ios)
                            if (io_measured(kernel, io)) rows.push_back(plan_row(o, kernel, pass, io, width, depth, b));
    return rows;
}

double samples_per_s(const BenchRow& r) { return r.ms > 0 ? r.batch / (r.ms * 1e-3) : -1; }
double tflops(const BenchRow& r) { return r.ms > 0 ? samples_per_s(r) * r.flop_per_sample / 1e12 : -1; }

std::string csv_quoted(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string number_or_empty(double v, const char* format) {
    if (v < 0) return "";
    char buf[64];
    std::snprintf(buf, sizeof(buf), format, v);
    return buf;
}

// The row's values in kCsvColumns order, as text.
std::vector<std::string> row_fields(const BenchRow& r, const MachineInfo& m) {
    return {r.kernel, r.variant, r.pass, std::to_string(r.width), std::to_string(r.depth), std::to_string(r.n_in),
            std::to_string(r.n_out), std::to_string(r.batch), number_or_empty(r.flop_per_sample, "%.0f"),
            std::to_string(r.warmup), std::to_string(r.iters), number_or_empty(r.ms, "%.6f"),
            number_or_empty(samples_per_s(r), "%.6e"), number_or_empty(tflops(r), "%.3f"),
            number_or_empty(r.registers, "%.0f"), number_or_empty(r.smem_per_block, "%.0f"),
            number_or_empty(r.blocks_per_sm, "%.0f"), number_or_empty(r.occupancy, "%.4f"),
            number_or_empty(r.waves, "%.4f"), number_or_empty(r.rows_per_tile, "%.0f"), m.gpu,
            m.sm_count ? std::to_string(m.sm_count) : "", m.sm_clock_mhz ? std::to_string(m.sm_clock_mhz) : "",
            m.mem_clock_mhz ? std::to_string(m.mem_clock_mhz) : "", m.driver, m.commit, r.io};
}

std::ofstream open_output(const std::string& path) {
    std::ofstream f(path);
    if (!f) throw InputError(path + ": cannot open for writing");
    return f;
}

void write_csv(const std::string& path, const std::vector<BenchRow>& rows, const Machines& m) {
    std::ofstream f = open_output(path);
    for (size_t c = 0; c < kCsvColumns.size(); ++c) f << (c ? "," : "") << kCsvColumns[c];
    f << "\n";
    for (const BenchRow& r : rows) {
        const auto fields = row_fields(r, m.of(r.kernel));
        for (size_t c = 0; c < fields.size(); ++c) f << (c ? "," : "") << csv_quoted(fields[c]);
        f << "\n";
    }
    if (!f) throw InputError(path + ": write failed");
}

// {"rows": [{column: value, ...}]}: numbers as numbers, unmeasured as null.
void write_json(const std::string& path, const std::vector<BenchRow>& rows, const Machines& m) {
    nlohmann::json out = {{"rows", nlohmann::json::array()}};
    for (const BenchRow& r : rows) {
        const auto fields = row_fields(r, m.of(r.kernel));
        nlohmann::json row;
        for (size_t c = 0; c < fields.size(); ++c) {
            const std::string& v = fields[c];
            const bool text =
                std::find(kTextColumns.begin(), kTextColumns.end(), kCsvColumns[c]) != kTextColumns.end();
            if (text) row[kCsvColumns[c]] = v;
            else if (v.empty()) row[kCsvColumns[c]] = nullptr;
            else if (v.find_first_of(".e") == std::string::npos) row[kCsvColumns[c]] = std::stoll(v);
            else row[kCsvColumns[c]] = std::stod(v);
        }
        out["rows"].push_back(row);
    }
    std::ofstream f = open_output(path);
    f << out.dump(2) << "\n";
    if (!f) throw InputError(path + ": write failed");
}

void print_machine(const MachineInfo& m) {
    std::printf("gpu %s, %d SMs, SM clock %d MHz, memory clock %d MHz, driver %s, commit %s\n", m.gpu.c_str(),
                m.sm_count, m.sm_clock_mhz, m.mem_clock_mhz, m.driver.c_str(), m.commit.c_str());
}

void print_table(const std::vector<BenchRow>& rows, const Machines& m) {
    const bool any_cpu = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return is_cpu_kernel(r.kernel); });
    const bool any_gpu = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return !is_cpu_kernel(r.kernel); });
    if (any_gpu || !any_cpu) print_machine(m.gpu);
    if (any_cpu) std::printf("cpu kernel on %s, commit %s\n", m.cpu.gpu.c_str(), m.cpu.commit.c_str());
    std::printf("%-7s %-9s %4s %5s %5s %9s %10s %12s %9s %5s %6s %7s  %s\n", "kernel", "pass", "io", "W", "depth",
                "batch", "ms", "Gsamples/s", "TFLOP/s", "regs", "blk/SM", "waves", "variant");
    for (const BenchRow& r : rows) {
        std::printf("%-7s %-9s %4s %5u %5u %9u ", r.kernel.c_str(), r.pass.c_str(), r.io.c_str(), r.width, r.depth,
                    r.batch);
        if (r.ms < 0) std::printf("%10s %12s %9s", "-", "-", "-");
        else std::printf("%10.4f %12.3f %9.1f", r.ms, samples_per_s(r) / 1e9, tflops(r));
        if (r.registers < 0) std::printf(" %5s %6s %7s", "-", "-", "-");
        else std::printf(" %5d %6d %7.2f", r.registers, r.blocks_per_sm, r.waves);
        std::printf("  %s\n", r.variant.c_str());
    }
}

// Short hash of the checkout: $FUSEDNGP_COMMIT (device copies have no .git),
// else git, else "unknown".
std::string source_commit() {
    if (const char* env = std::getenv("FUSEDNGP_COMMIT"); env != nullptr && *env != '\0') return env;
    const std::string cmd = std::string("git -C \"") + FUSEDNGP_SOURCE_DIR + "\" rev-parse --short HEAD 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "unknown";
    char buf[64] = {};
    std::string hash = std::fgets(buf, sizeof(buf), p) ? buf : "";
    pclose(p);
    while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r')) hash.pop_back();
    return hash.empty() ? "unknown" : hash;
}

#if FUSEDNGP_HAVE_CUDA
MachineInfo measure_gpu(std::vector<BenchRow>& rows, const BenchMlpOptions& o) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        cudaGetLastError();  // clear the sticky "no device" error
        throw InputError("bench mlp: no CUDA device found (this build has CUDA, the machine has no usable GPU)");
    }
    const gpu::GpuIdentity id = gpu::gpu_identity(0);
    MachineInfo m;
    m.gpu = id.name;
    m.driver = id.driver;
    m.sm_count = id.sm_count;
    m.sm_clock_mhz = id.sm_clock_mhz;
    m.mem_clock_mhz = id.mem_clock_mhz;
    m.commit = source_commit();

    uint32_t max_batch = 0;
    for (const BenchRow& r : rows)
        if (!is_cpu_kernel(r.kernel)) max_batch = std::max(max_batch, r.batch);
    gpu::MlpBenchRunner runner({o.n_in, o.n_out, o.warmup, o.iters}, max_batch);
    gpu::FusedMlpTuning tuning;
    tuning.smem_per_sm_cap = (size_t)o.fused_smem_per_sm_kb * 1024;
    tuning.smem_per_block_cap = (size_t)o.fused_smem_per_block_kb * 1024;
    tuning.max_blocks_per_sm = (int)o.fused_blocks_per_sm;
    for (BenchRow& r : rows) {
        if (is_cpu_kernel(r.kernel)) continue;
        const gpu::MlpBenchCase c{r.kernel, r.pass, r.io, r.width, r.depth, r.batch, tuning};
        if (std::string why = runner.unsupported_reason(c); !why.empty()) {
            std::fprintf(stderr, "bench mlp: skipping %s W=%u depth=%u: %s\n", r.kernel.c_str(), r.width, r.depth,
                         why.c_str());
            r.unsupported = true;
            continue;
        }
        const gpu::MlpBenchResult result = runner.measure(c);
        r.ms = result.ms;
        if (result.resources.known) {
            const gpu::MlpKernelResources& k = result.resources;
            r.registers = k.registers;
            r.smem_per_block = (double)k.smem_per_block;
            r.blocks_per_sm = k.blocks_per_sm;
            r.occupancy = k.occupancy;
            r.waves = k.waves;
            r.rows_per_tile = k.rows_per_tile;
        }
    }
    return m;
}
#else
MachineInfo measure_gpu(std::vector<BenchRow>&, const BenchMlpOptions&) {
    throw InputError("bench mlp: this fusedngp was built without CUDA (FUSEDNGP_CUDA=OFF or no nvcc); "
                     "rebuild with CUDA to measure the GPU kernels, pass --kernels cpu to time the CPU "
                     "reference, or pass --dry-run to list the planned rows");
}
#endif

MachineInfo measure_cpu(std::vector<BenchRow>& rows, const BenchMlpOptions& o) {
    MachineInfo m;
    m.gpu = cpu_identity();
    m.commit = source_commit();
    const CpuMlpBenchSettings settings{o.n_in, o.n_out, o.warmup, o.iters};
    for (BenchRow& r : rows)
        if (is_cpu_kernel(r.kernel)) r.ms = cpu_mlp_median_ms(settings, {r.pass, r.width, r.depth, r.batch});
    return m;
}

// Measures every row in place (GPU rows need a CUDA device, cpu rows do not)
// and drops the rows a GPU kernel cannot run.
Machines measure(std::vector<BenchRow>& rows, const BenchMlpOptions& o) {
    const auto any = [&](bool cpu) {
        return std::any_of(rows.begin(), rows.end(), [&](const BenchRow& r) { return is_cpu_kernel(r.kernel) == cpu; });
    };
    Machines m;
    // GPU first: without a device the command fails before spending CPU time.
    if (any(false)) m.gpu = measure_gpu(rows, o);
    if (any(true)) m.cpu = measure_cpu(rows, o);
    rows.erase(std::remove_if(rows.begin(), rows.end(), [](const BenchRow& r) { return r.unsupported; }), rows.end());
    return m;
}

void run_bench_mlp(const BenchMlpOptions& o) {
    if (o.warmup < 0 || o.iters < 1) throw InputError("bench mlp: --warmup must be >= 0 and --iters >= 1");
    for (uint32_t d : o.depths)
        if (d == 0) throw InputError("bench mlp: --depths: hidden layer counts must be >= 1");
    for (uint32_t w : o.widths)
        if (w == 0) throw InputError("bench mlp: --widths: widths must be >= 1");
    std::vector<BenchRow> rows = plan_rows(o);
    Machines machine;
    if (!o.dry_run) machine = measure(rows, o);
    print_table(rows, machine);
    if (!o.csv.empty()) write_csv(o.csv, rows, machine);
    if (!o.json.empty()) write_json(o.json, rows, machine);
}

} // namespace

void add_bench_command(CLI::App& app) {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks of the GPU kernels");
    bench->require_subcommand(1);
    auto o = std::make_shared<BenchMlpOptions>();
    CLI::App* mlp = bench->add_subcommand(
        "mlp", "MLP throughput (n_in -> W x depth -> n_out, no bias, ReLU, fp16): inference and training step");
    mlp->add_option("--widths", o->widths, "hidden widths, comma separated")->delimiter(',')->capture_default_str();
    mlp->add_option("--depths", o->depths, "hidden layer counts (n_hidden_layers), comma separated")
        ->delimiter(',')
        ->capture_default_str();
    mlp->add_option("--batches", o->batches, "batch sizes, comma separated: 65536 or 2^16")
        ->delimiter(',')
        ->capture_default_str();
    mlp->add_option("--kernels", o->kernels, "fused, cublas (GPU), cpu (the CPU reference Mlp<float>, fp32)")
        ->delimiter(',')
        ->check(CLI::IsMember({"fused", "cublas", "cpu"}))
        ->capture_default_str();
    mlp->add_option("--passes", o->passes, "inference, train")
        ->delimiter(',')
        ->check(CLI::IsMember({"inference", "train"}))
        ->capture_default_str();
    mlp->add_option("--io", o->ios,
                    "data types, comma separated: fp32, fp16 (the fused kernel only: inference reads and writes "
                    "fp16, training reads fp16 input and an fp32 target)")
        ->delimiter(',')
        ->check(CLI::IsMember({"fp32", "fp16"}))
        ->capture_default_str();
    mlp->add_option("--in", o->n_in, "input dims")->check(CLI::PositiveNumber)->capture_default_str();
    mlp->add_option("--out", o->n_out, "output dims")->check(CLI::PositiveNumber)->capture_default_str();
    mlp->add_option("--warmup", o->warmup, "untimed calls before timing")->check(non_negative_number())->capture_default_str();
    mlp->add_option("--iters", o->iters, "timed calls (the median is reported)")->check(positive_number())->capture_default_str();
    mlp->add_option("--csv", o->csv, "write the rows as CSV");
    mlp->add_option("--json", o->json, "write the rows as JSON");
    mlp->add_flag("--dry-run", o->dry_run, "list the planned rows (no GPU needed, no measurements)");
    mlp->add_option("--fused-smem-per-sm", o->fused_smem_per_sm_kb,
                    "restrict the fused kernel to this many KB of shared memory per SM (emulates a smaller GPU; "
                    "RTX 3090: 100, A100: 164)");
    mlp->add_option("--fused-smem-per-block", o->fused_smem_per_block_kb,
                    "restrict one fused block to this many KB of shared memory (RTX 3090: 99)");
    mlp->add_option("--fused-blocks-per-sm", o->fused_blocks_per_sm, "at most this many resident fused blocks per SM");
    mlp->add_option("--variant", o->variant, "name of the restriction in the CSV's variant column (default: the caps)");
    mlp->callback([o]() { run_bench_mlp(*o); });
    add_bench_sdf_command(bench);
}

} // namespace fusedngp
