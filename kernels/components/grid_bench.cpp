// fusedngp_grid_bench: times the grid encoding's kernels under every
// GridKernelOptions choice, on one device call (docs/GPU_COMPONENTS.md,
// "Grid"; docs/BENCHMARKS.md has the results).
//
//   fusedngp_grid_bench [--config FILE] [--batch N] [--iters N] [--csv FILE] [--no-3d]
//                       [--order random|tiled|both] [--order-ab-only]
//
// FILE: a training config whose "encoding" is a 2D grid (default
// configs/examples/image_fit_tcnn.json, the image-fit step of issue #4).
// Inputs are uniform in [0,1)^2, dL/dy uniform in [-1e-3, 1e-3], parameters
// uniform in [-1e-2, 1e-2]. Each time is the median of --iters launches
// (CUDA events around each, after 3 warm-up launches). Gradient variants are
// also compared with the first (level-major, global atomics) variant:
// norm-wise relative difference, which must be fp32 rounding only (~1e-6);
// forward variants must be bit-identical.
// Then, unless --no-3d, the same for the default 3D HashGrid (16 x 2, 2^19).
// Last, the sample-order A/B of the 2D grid (rows "order <name>"): inputs in
// random order (as above) and in the image sampler's tiled order
// (SampleOrder::Tiled at the image-fit density: side = strata_side(batch),
// jittered in its stratum and snapped to the pixel centres of a 1024 x 1024
// image, so each warp is an 8 x 4 tile of 2 x 2-pixel strata at 2^18); for
// each order the forward, the gradient kernel without and with warp
// aggregation of the shared-memory levels (checked against the plain kernel
// on the same inputs) and, per global level, the atomics alone.
// --order-ab-only runs only that part.

#include "encodings/grid.h"
#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/components/gpu_grid_encoding.h"
#include "launch_grid.h"

#include "core/rng.h"
#include "io/sampling.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace fusedngp;
using namespace fusedngp::gpu;

namespace {

struct Bench {
    cudaStream_t stream = nullptr;
    int iters = 30;
    FILE* csv = nullptr;
    std::string case_name;

    double median_ms(const std::function<void()>& fn) const {
        for (int i = 0; i < 3; ++i) fn();
        cudaEvent_t a, b;
        FUSEDNGP_GPU_CHECK(cudaEventCreate(&a));
        FUSEDNGP_GPU_CHECK(cudaEventCreate(&b));
        std::vector<float> t;
        for (int i = 0; i < iters; ++i) {
            FUSEDNGP_GPU_CHECK(cudaEventRecord(a, stream));
            fn();
            FUSEDNGP_GPU_CHECK(cudaEventRecord(b, stream));
            FUSEDNGP_GPU_CHECK(cudaEventSynchronize(b));
            float ms = 0;
            FUSEDNGP_GPU_CHECK(cudaEventElapsedTime(&ms, a, b));
            t.push_back(ms);
        }
        cudaEventDestroy(a);
        cudaEventDestroy(b);
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }

    void report(const std::string& what, const std::string& variant, double ms, const std::string& check) const {
        std::printf("%-6s %-18s %-58s %9.4f ms  %s\n", case_name.c_str(), what.c_str(), variant.c_str(), ms, check.c_str());
        std::fflush(stdout);
        if (csv) std::fprintf(csv, "%s,%s,%s,%.5f,%s\n", case_name.c_str(), what.c_str(), variant.c_str(), ms, check.c_str());
    }
};

std::vector<float> download(const float* d, size_t n) {
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    std::vector<float> h(n);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

DeviceBuffer<float> upload_random(size_t n, uint64_t seed, float lo, float hi) {
    Rng rng(seed);
    std::vector<float> h(n);
    for (float& v : h) v = rng.uniform<float>(lo, hi);
    DeviceBuffer<float> d(n);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(d.data(), h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

std::string relative_difference(const std::vector<float>& a, const std::vector<float>& ref) {
    double d2 = 0, r2 = 0;
    size_t non_finite = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) {
            ++non_finite;
            continue;
        }
        const double d = (double)a[i] - ref[i];
        d2 += d * d;
        r2 += (double)ref[i] * ref[i];
    }
    char buf[96];
    if (non_finite) {
        std::snprintf(buf, sizeof buf, "BAD: %zu non-finite", non_finite);
    } else {
        const double rel = std::sqrt(d2 / std::max(r2, 1e-300));
        std::snprintf(buf, sizeof buf, "%s rel.diff %.2e", rel < 1e-4 ? "ok" : "BAD", rel);
    }
    return buf;
}

std::string describe(const GridKernelConfig& c) {
    std::ostringstream s;
    s << "smem<=" << c.gradient_smem_bytes << " ratio " << c.gradient_flush_ratio << " spt<="
      << c.gradient_max_samples_per_thread
      << (c.gradient_interleave_levels ? " interleaved<=" + std::to_string(c.gradient_interleave_max_bytes >> 20) + "MB"
                                       : std::string(" level-major"))
      << (c.gradient_pair_corners ? " pairs" : " no-pairs") << (c.gradient_warp_aggregate_shared ? " warp-agg-shared" : "");
    return s.str();
}

// The gradient kernel of `shape` on (in, dout): compared with `reference`
// (which it becomes when empty), then timed; one report row.
void time_checked_gradient(const Bench& bench, const std::string& what, const std::string& variant,
                           const GridShape& shape, ConstDeviceRows in_rows, ConstDeviceRows dout_rows,
                           DeviceBuffer<float>& dparams, uint32_t batch, std::vector<float>& reference) {
    const cudaStream_t stream = bench.stream;
    FUSEDNGP_GPU_CHECK(cudaMemsetAsync(dparams.data(), 0, dparams.size() * sizeof(float), stream));
    launch_grid_param_gradient(shape, in_rows, dout_rows, dparams.data(), batch, stream);
    const std::vector<float> result = download(dparams.data(), dparams.size());
    std::string check = "reference";
    if (reference.empty()) {
        reference = result;
    } else {
        check = relative_difference(result, reference);
    }
    const double ms =
        bench.median_ms([&] { launch_grid_param_gradient(shape, in_rows, dout_rows, dparams.data(), batch, stream); });
    bench.report(what, variant, ms, check);
}

void run_case(Bench& bench, uint32_t n_dims, const json& encoding_config, uint32_t batch, bool full_sweep) {
    GpuEncodingPair enc = create_gpu_encoding(n_dims, encoding_config);
    auto& grid = dynamic_cast<GpuGridEncoding&>(*enc.gpu);
    const auto& cpu_grid = dynamic_cast<const GridEncoding<float>&>(*enc.cpu);
    std::printf("# %s, batch %u, auto smem budget %u bytes\n", enc.cpu->describe().c_str(), batch,
                grid.gradient_smem_bytes());
    const uint32_t n_out = enc.cpu->n_output_dims(), n_levels = (uint32_t)cpu_grid.levels().size();
    const size_t n_params = enc.cpu->n_params();
    for (uint32_t l = 0; l < n_levels; ++l) {
        const GridLevel& level = cpu_grid.levels()[l];
        std::printf("#   level %2u: %s, %u rows, %zu gradient bytes\n", l, level.hashed() ? "hashed" : "dense ",
                    (unsigned)level.rows, (size_t)level.rows * cpu_grid.options().n_features_per_level * 4);
    }

    DeviceBuffer<float> params = upload_random(n_params, 1, -1e-2f, 1e-2f);
    DeviceBuffer<float> in = upload_random((size_t)batch * n_dims, 2, 0.f, 1.f);
    DeviceBuffer<float> dout = upload_random((size_t)batch * n_out, 3, -1e-3f, 1e-3f);
    DeviceBuffer<float> out((size_t)batch * n_out), dparams(n_params), din((size_t)batch * n_dims);
    grid.set_params(params.data(), bench.stream);
    const GridShape base = grid.shape();
    const ConstDeviceRows in_rows = const_rows(in.data(), n_dims), dout_rows = const_rows(dout.data(), n_out);
    const cudaStream_t stream = bench.stream;

    // ---- forward ----
    std::vector<float> forward_reference;
    // Each level group without, then with the 16-byte chunk loads of corner
    // pairs (fp16 tables, F <= 4); the first (group 1, no chunks) is the reference.
    for (uint32_t v = 0; v < 12; ++v) {
        const uint32_t g = v / 2;
        const bool chunks = (v & 1u) != 0;
        if (g > 0 && (1u << (g - 1)) >= n_levels) break;
        GridKernelOptions options;
        options.forward_level_group = 1u << g;
        options.forward_chunk_loads = chunks;
        grid.set_kernel_options(options);
        FUSEDNGP_GPU_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.size() * sizeof(float), stream));
        grid.forward(in_rows, rows(out.data(), n_out), batch, stream);
        const std::vector<float> result = download(out.data(), out.size());
        std::string check = "reference";
        if (forward_reference.empty()) {
            forward_reference = result;
        } else {
            check = std::memcmp(result.data(), forward_reference.data(), result.size() * sizeof(float)) == 0
                        ? "ok bit-identical"
                        : "BAD: differs from group 1";
        }
        const double ms = bench.median_ms([&] { grid.forward(in_rows, rows(out.data(), n_out), batch, stream); });
        bench.report("forward fp16", "level group " + std::to_string(1u << g) + (chunks ? " chunks" : " no-chunks"), ms,
                     check);
    }
    grid.set_kernel_options({});
    {
        GpuEncodingPair fp32 = create_gpu_encoding(n_dims, encoding_config, "encoding",
                                                   GpuEncodingOptions{GridParamPrecision::Float, {}});
        fp32.gpu->set_params(params.data(), stream);
        const double ms = bench.median_ms([&] { fp32.gpu->forward(in_rows, rows(out.data(), n_out), batch, stream); });
        bench.report("forward fp32", "default", ms, "");
    }
    {
        const double ms = bench.median_ms([&] { grid.forward(in_rows, rows(out.data(), n_out), batch, stream); });
        bench.report("forward fp16", "default (auto)", ms, "");
    }

    // ---- parameter gradient: whole kernel, variants ----
    std::vector<float> gradient_reference;
    auto time_gradient = [&](const std::string& what, GridShape shape) {
        time_checked_gradient(bench, what, describe(shape.config), shape, in_rows, dout_rows, dparams, batch,
                              gradient_reference);
    };
    GridShape legacy = base;
    legacy.config.gradient_smem_bytes = 0;
    legacy.config.gradient_interleave_levels = false;
    legacy.config.gradient_pair_corners = false;
    time_gradient("dparams kernel", legacy);
    GridShape legacy_pairs = legacy;
    legacy_pairs.config.gradient_pair_corners = true;
    time_gradient("dparams kernel", legacy_pairs);
    GridShape interleaved = legacy;
    interleaved.config.gradient_interleave_levels = true;
    interleaved.config.gradient_interleave_max_bytes = 0xFFFFFFFFu;  // whatever the tables' size
    time_gradient("dparams kernel", interleaved);
    interleaved.config.gradient_pair_corners = true;
    time_gradient("dparams kernel", interleaved);
    time_gradient("dparams kernel", base);  // the default
    GridShape base_no_pairs = base;
    base_no_pairs.config.gradient_pair_corners = false;
    time_gradient("dparams kernel", base_no_pairs);
    GridShape base_level_major = base;
    base_level_major.config.gradient_interleave_levels = false;
    time_gradient("dparams kernel", base_level_major);
    // Budgets that take the levels one by one into shared memory.
    std::vector<uint32_t> budgets;
    for (uint32_t l = 0; l < n_levels; ++l) {
        const uint32_t bytes = (uint32_t)(cpu_grid.levels()[l].rows * cpu_grid.options().n_features_per_level * 4);
        if (cpu_grid.levels()[l].hashed() || bytes > 200000) break;
        if (budgets.empty() || budgets.back() != bytes) budgets.push_back(bytes);
    }
    for (uint32_t bytes : budgets) {
        GridShape shape = base;
        shape.config.gradient_smem_bytes = bytes;
        time_gradient("dparams kernel", shape);
        if (full_sweep) {
            shape.config.gradient_interleave_levels = false;
            time_gradient("dparams kernel", shape);
        }
    }
    if (full_sweep) {
        for (uint32_t ratio : {2u, 4u, 8u, 16u, 32u, 64u}) {
            for (uint32_t spt : {4u, 8u, 16u, 32u, 64u}) {
                GridShape shape = base;
                shape.config.gradient_flush_ratio = ratio;
                shape.config.gradient_max_samples_per_thread = spt;
                time_gradient("dparams kernel", shape);
            }
        }
    }

    // ---- per level: global atomics vs shared memory ----
    for (uint32_t l = 0; l < n_levels; ++l) {
        GridShape one = base;
        one.n_levels = 1;
        one.levels = base.levels + l;
        one.host_levels = base.host_levels + l;
        one.config.gradient_smem_bytes = 0;
        one.config.gradient_interleave_levels = false;
        for (bool pairs : {false, true}) {
            one.config.gradient_pair_corners = pairs;
            const double global_ms = bench.median_ms(
                [&] { launch_grid_param_gradient(one, in_rows, dout_rows, dparams.data(), batch, stream); });
            bench.report("dparams level " + std::to_string(l), pairs ? "global atomics, pairs" : "global atomics",
                         global_ms, "");
        }
        one.config.gradient_pair_corners = base.config.gradient_pair_corners;
        const uint32_t bytes = (uint32_t)(cpu_grid.levels()[l].rows * cpu_grid.options().n_features_per_level * 4);
        if (bytes <= 200000) {
            one.config.gradient_smem_bytes = bytes;
            const double shared_ms = bench.median_ms(
                [&] { launch_grid_param_gradient(one, in_rows, dout_rows, dparams.data(), batch, stream); });
            bench.report("dparams level " + std::to_string(l), "shared memory " + describe(one.config), shared_ms, "");
        }
    }

    // ---- the public calls, as a training step makes them ----
    {
        const double ms = bench.median_ms([&] {
            grid.backward(in_rows, dout_rows, dparams.data(), DeviceRows{}, batch, stream);
        });
        bench.report("backward dparams", "default, incl. memset", ms, "");
        const double memset_ms = bench.median_ms(
            [&] { FUSEDNGP_GPU_CHECK(cudaMemsetAsync(dparams.data(), 0, n_params * sizeof(float), stream)); });
        bench.report("memset dparams", std::to_string(n_params * 4) + " bytes", memset_ms, "");
        const double din_ms = bench.median_ms([&] {
            grid.backward(in_rows, dout_rows, nullptr, rows(din.data(), n_dims), batch, stream);
        });
        bench.report("backward dinput", "default", din_ms, "");
    }
}

// Inputs in the image sampler's tiled order at the image-fit density: the
// CPU sampler itself (io/sampling.h, sample_batch: stratified over side =
// strata_side(batch) strata, jittered, the samples past side^2 uniform, all
// snapped to the pixel centres of a size x size image), as in training.
DeviceBuffer<float> upload_tiled_inputs(uint32_t batch, uint32_t image_size, uint64_t seed) {
    Image image;
    image.width = image.height = (int)image_size;
    image.channels = 1;
    image.pixels.assign(image.pixel_count(), 0.f);
    Rng rng(seed);
    Matrix<float> coords, targets;
    sample_batch(image, batch, rng, coords, targets,
                 ImageSampling{SamplePositions::Stratified, SampleTargets::PixelCentres, SampleOrder::Tiled});
    DeviceBuffer<float> d((size_t)coords.size());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(d.data(), coords.data(), d.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

// The sample-order A/B (2D): forward and gradient under random and tiled
// input order, the gradient with shared-level warp aggregation off and on.
void run_order_ab(Bench& bench, const json& encoding_config, uint32_t batch, const std::string& orders) {
    GpuEncodingPair enc = create_gpu_encoding(2, encoding_config);
    auto& grid = dynamic_cast<GpuGridEncoding&>(*enc.gpu);
    const uint32_t n_out = enc.cpu->n_output_dims(), n_levels = grid.shape().n_levels;
    const size_t n_params = enc.cpu->n_params();
    std::printf("# sample-order A/B: %s, batch %u\n", enc.cpu->describe().c_str(), batch);
    DeviceBuffer<float> params = upload_random(n_params, 1, -1e-2f, 1e-2f);
    DeviceBuffer<float> dout = upload_random((size_t)batch * n_out, 3, -1e-3f, 1e-3f);
    DeviceBuffer<float> out((size_t)batch * n_out), dparams(n_params);
    grid.set_params(params.data(), bench.stream);
    const cudaStream_t stream = bench.stream;
    const ConstDeviceRows dout_rows = const_rows(dout.data(), n_out);

    struct Variant {
        const char* name;
        bool shared;
    };
    const Variant variants[] = {{"plain", false}, {"aggregate shared", true}};
    for (const char* order_name : {"random", "tiled"}) {
        const std::string order = order_name;
        if (orders != "both" && orders != order) continue;
        const DeviceBuffer<float> in = order == "random" ? upload_random((size_t)batch * 2, 2, 0.f, 1.f)
                                                         : upload_tiled_inputs(batch, 1024, 2);
        const ConstDeviceRows in_rows = const_rows(in.data(), 2);
        const std::string what = "order " + order;
        grid.set_kernel_options({});
        bench.report(what, "forward default",
                     bench.median_ms([&] { grid.forward(in_rows, rows(out.data(), n_out), batch, stream); }), "");
        std::vector<float> reference;
        for (const Variant& variant : variants) {
            GridKernelOptions options;
            options.gradient_warp_aggregate_shared = variant.shared;
            grid.set_kernel_options(options);  // the smem budget of the kernel that runs
            const GridShape shape = grid.shape();
            time_checked_gradient(bench, what, std::string("dparams kernel ") + variant.name + ": " + describe(shape.config),
                                  shape, in_rows, dout_rows, dparams, batch, reference);
        }
        // Per level: the global-atomic path alone (level-major).
        for (uint32_t l = 0; l < n_levels; ++l) {
            GridKernelOptions options;
            options.gradient_smem_bytes = 0;
            grid.set_kernel_options(options);
            GridShape one = grid.shape();
            one.n_levels = 1;
            one.levels += l;
            one.host_levels += l;
            const double ms = bench.median_ms(
                [&] { launch_grid_param_gradient(one, in_rows, dout_rows, dparams.data(), batch, stream); });
            bench.report(what, "dparams level " + std::to_string(l) + " global", ms, "");
        }
    }
    grid.set_kernel_options({});
}

} // namespace

int main(int argc, char** argv) {
    std::string config_path = "configs/examples/image_fit_tcnn.json", csv_path;
    uint32_t batch = 1u << 18;
    bool with_3d = true, order_ab_only = false;
    std::string orders = "both";
    Bench bench;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--config") {
            config_path = next();
        } else if (a == "--batch") {
            batch = (uint32_t)std::stoul(next());
        } else if (a == "--iters") {
            bench.iters = std::stoi(next());
        } else if (a == "--csv") {
            csv_path = next();
        } else if (a == "--no-3d") {
            with_3d = false;
        } else if (a == "--order") {
            orders = next();
            if (orders != "random" && orders != "tiled" && orders != "both") throw std::invalid_argument("--order " + orders);
        } else if (a == "--order-ab-only") {
            order_ab_only = true;
        } else {
            std::fprintf(stderr,
                         "usage: %s [--config FILE] [--batch N] [--iters N] [--csv FILE] [--no-3d] "
                         "[--order random|tiled|both] [--order-ab-only]\n",
                         argv[0]);
            return 2;
        }
    }
    try {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            std::fprintf(stderr, "fusedngp_grid_bench: no CUDA device\n");
            return 1;
        }
        cudaDeviceProp prop{};
        FUSEDNGP_GPU_CHECK(cudaGetDeviceProperties(&prop, 0));
        std::printf("# %s, %d SMs, L2 %d MB, smem/SM %zu KB\n", prop.name, prop.multiProcessorCount,
                    prop.l2CacheSize >> 20, prop.sharedMemPerMultiprocessor >> 10);
        std::ifstream file(config_path);
        if (!file) throw std::runtime_error("cannot read " + config_path);
        const json config = json::parse(file, nullptr, true, /*ignore_comments=*/true);
        if (!csv_path.empty()) {
            bench.csv = std::fopen(csv_path.c_str(), "w");
            if (!bench.csv) throw std::runtime_error("cannot write " + csv_path);
            std::fprintf(bench.csv, "case,what,variant,ms,check\n");
        }
        FUSEDNGP_GPU_CHECK(cudaStreamCreate(&bench.stream));

        // Device copy bandwidth, for scale (bytes read + written).
        {
            const size_t n = (size_t)1 << 28;  // 1 GiB of floats per buffer
            DeviceBuffer<float> a(n), b(n);
            FUSEDNGP_GPU_CHECK(cudaMemsetAsync(a.data(), 1, n * sizeof(float), bench.stream));
            const double ms = bench.median_ms([&] {
                FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(b.data(), a.data(), n * sizeof(float), cudaMemcpyDeviceToDevice,
                                                   bench.stream));
            });
            std::printf("# device copy: %.0f GB/s (read + write)\n", 2.0 * n * sizeof(float) / (ms * 1e6));
        }

        bench.case_name = "2d";
        if (!order_ab_only) {
            run_case(bench, 2, config.at("encoding"), batch, /*full_sweep=*/true);
            if (with_3d) {
                bench.case_name = "3d";
                run_case(bench, 3, json{{"otype", "HashGrid"}}, batch, /*full_sweep=*/false);
            }
        }
        bench.case_name = "2d";
        run_order_ab(bench, config.at("encoding"), batch, orders);
        if (bench.csv) std::fclose(bench.csv);
        cudaStreamDestroy(bench.stream);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fusedngp_grid_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
