// Throughput of the fully fused MLP: n_in -> W x D -> n_out, batch 2^20.
//
// For each width: inference, training step (forward + backward with dL/dout
// from the caller, weight gradients reduced), the fused L2 train step, and
// the GEMMs alone of an unfused cuBLAS implementation of the same training
// step (a lower bound on any cuBLAS MLP: its elementwise kernels and
// activation traffic are not counted), and the real unfused baseline
// CublasMlp (cuBLASLt GEMMs + its elementwise kernels: conversion,
// activation, derivative and unpadding kernels all counted) for inference
// and the full training step (forward + backward with dL/dW and dL/dinput).
// Widths the fused kernel lacks (e.g. --widths 48,512) get the CublasMlp
// rows only. CUDA events, median of timed
// repetitions after warm-up, inputs rotated among 4 buffers (timing helpers
// shared with `fusedngp bench mlp`: src/gpu/mlp_timing.h). Prints a table
// and writes CSV.
//
// usage: fusedngp_mlp_bench [--batch N] [--widths 16,64] [--depth D] [--reps R]
//                           [--csv file] [--variants] [--ceilings] [--inference-ab [--batches N,..]]
//                           [--train-ab [--depths 1,2,4] [--batches 65536,1048576] [--train-variants tile,wgmma,warp,f0]]
//
// --inference-ab times inference only, for the warp kernel (default plan,
// flavour 0 = the kernel before the flavours, each flavour (ReLU compiled in,
// 16-byte I/O, cp.async input ring), 16-row slabs, a full grid instead of the
// persistent one, and the slab / weight-placement variants) against the
// block-tile kernel (FusedMlpTuning::tile_inference) and an I/O-only kernel,
// at --batches (default --batch), every variant twice in interleaved order
// so that the spread of one variant shows the noise.
//
// --train-ab times training only, the warp training kernel (its planned
// variant at W = 16/32/64, forced for every batch) against the block-tile
// kernel (FusedMlpTuning::tile_training), for every width x depth x batch,
// plus the warp kernel's other variants (weight-gradient sums per warp or per
// block, warps per block) from 2^20 rows on: the fused L2 step (no
// dL/dinput, as `fusedngp bench mlp --passes train`) and forward + backward
// with dL/dout from the caller and dL/dinput; every variant twice in
// interleaved order. "warp" runs the ReLU flavour the planner picks for
// these ReLU / None networks, "warpx" the same through the kernels with the
// fused loss's extras compiled in (RelativeL2, loss sums, dL/dinput flag),
// "f0" the same variant with the activations switched at run time, "wgmma"
// the Hopper wgmma training kernel (FusedMlpTuning::wgmma_train; W = 64 and 128,
// compute capability 9.0 only, skipped elsewhere).
// --train-variants keeps only the named variants.
#include "gpu/cublas_mlp.h"
#include "gpu/fused_mlp.h"
#include "gpu/gpu_mlp_factory.h"
#include "gpu/mlp_timing.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace fusedngp;
using namespace fusedngp::gpu;

namespace {

#define CUBLAS_CHECK(expr)                                                                  \
    do {                                                                                    \
        cublasStatus_t st_ = (expr);                                                        \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #expr, (int)st_); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

struct Options {
    uint32_t batch = 1u << 20;
    std::vector<uint32_t> widths = {16, 32, 64, 128, 256};
    uint32_t depth = 2, n_in = 32, n_out = 16;
    int reps = 20;
    std::string csv;
    bool variants = false;
    bool ceilings = false;
    bool inference_ab = false;
    bool train_ab = false;
    std::vector<uint32_t> depths, batches;  // --train-ab (default: --depth, --batch)
    std::vector<std::string> train_variants;  // --train-ab: only these variants (default: all)
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { std::fprintf(stderr, "missing value for %s\n", a.c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--batch") o.batch = (uint32_t)std::stoul(next());
        else if (a == "--depth") o.depth = (uint32_t)std::stoul(next());
        else if (a == "--reps") o.reps = std::stoi(next());
        else if (a == "--csv") o.csv = next();
        else if (a == "--variants") o.variants = true;
        else if (a == "--ceilings") o.ceilings = true;
        else if (a == "--inference-ab") o.inference_ab = true;
        else if (a == "--train-ab") o.train_ab = true;
        else if (a == "--depths" || a == "--batches") {
            std::vector<uint32_t>& list = a == "--depths" ? o.depths : o.batches;
            std::stringstream ss(next());
            std::string v;
            while (std::getline(ss, v, ',')) list.push_back((uint32_t)std::stoul(v));
        }
        else if (a == "--train-variants") {
            std::stringstream ss(next());
            std::string v;
            while (std::getline(ss, v, ',')) o.train_variants.push_back(v);
        }
        else if (a == "--widths") {
            o.widths.clear();
            std::stringstream ss(next());
            std::string w;
            while (std::getline(ss, w, ',')) o.widths.push_back((uint32_t)std::stoul(w));
        } else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); std::exit(2); }
    }
    return o;
}

struct Row {
    std::string variant;
    uint32_t width = 0;
    std::string pass;
    double ms = 0, samples_per_s = 0, tflops = 0;
    std::string plan;
};

// The rows as CSV (the schema of e.g. bench/results/h200_train_ab_5255ca9.csv).
void write_rows_csv(const std::string& path, const std::vector<Row>& rows) {
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
        std::fprintf(stderr, "fusedngp_mlp_bench: cannot write %s\n", path.c_str());
        return;
    }
    std::fprintf(f, "variant,width,pass,ms,samples_per_s,tflops,plan\n");
    for (const Row& r : rows)
        std::fprintf(f, "%s,%u,%s,%.6f,%.6e,%.3f,\"%s\"\n", r.variant.c_str(), r.width, r.pass.c_str(), r.ms,
                     r.samples_per_s, r.tflops, r.plan.c_str());
    std::fclose(f);
}

constexpr int kRotations = kDefaultRotations;
constexpr int kWarmup = 3;

// GEMM-only time of an unfused fp16 cuBLAS training step (or inference).
double cublas_gemm_ms(cublasHandle_t h, uint32_t batch, uint32_t n_in, uint32_t w, uint32_t depth, uint32_t n_out,
                      bool training, int reps) {
    std::vector<std::pair<uint32_t, uint32_t>> layers;  // (K = fan_in, N = fan_out)
    layers.push_back({n_in, w});
    for (uint32_t l = 1; l < depth; ++l) layers.push_back({w, w});
    layers.push_back({w, n_out});
    const uint32_t widest = std::max({n_in, w, n_out});
    DeviceMemory act((size_t)(depth + 2) * batch * widest * sizeof(__half));
    DeviceMemory grad((size_t)2 * batch * widest * sizeof(__half));
    DeviceMemory weights((size_t)(depth + 1) * widest * widest * sizeof(__half));
    DeviceMemory dweights((size_t)(depth + 1) * widest * widest * sizeof(float));
    FUSEDNGP_CUDA_CHECK(cudaMemset(act.as<void>(), 0x3c, act.bytes()));  // 1.0-ish halves, not zeros
    FUSEDNGP_CUDA_CHECK(cudaMemset(grad.as<void>(), 0x2c, grad.bytes()));
    FUSEDNGP_CUDA_CHECK(cudaMemset(weights.as<void>(), 0x2c, weights.bytes()));
    const float one = 1.f, zero = 0.f;
    auto act_at = [&](uint32_t l) { return act.as<__half>() + (size_t)l * batch * widest; };
    auto w_at = [&](uint32_t l) { return weights.as<__half>() + (size_t)l * widest * widest; };
    auto g_at = [&](uint32_t i) { return grad.as<__half>() + (size_t)(i % 2) * batch * widest; };
    auto step = [&](int) {
        // Forward: Z_l[B][N] = H[B][K] W^T  (column-major: Z^T = W H^T).
        for (size_t l = 0; l < layers.size(); ++l) {
            auto [K, N] = layers[l];
            CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, batch, K, &one, w_at(l), CUDA_R_16F, K,
                                      act_at(l), CUDA_R_16F, K, &zero, act_at(l + 1), CUDA_R_16F, N,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        if (!training) return;
        for (size_t l = layers.size(); l-- > 0;) {
            auto [K, N] = layers[l];
            // dW[N][K] = dZ^T H  (column-major: dW^T = H^T dZ).
            CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, K, N, batch, &one, act_at(l), CUDA_R_16F, K,
                                      g_at(l), CUDA_R_16F, N, &zero, dweights.as<float>() + l * widest * widest,
                                      CUDA_R_32F, K, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            // dH[B][K] = dZ W  (column-major: dH^T = W^T dZ^T).
            CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, K, batch, N, &one, w_at(l), CUDA_R_16F, K,
                                      g_at(l), CUDA_R_16F, N, &zero, g_at(l + 1), CUDA_R_16F, K,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
    };
    return time_median_ms(kWarmup, reps, step);
}

void measure_ceilings() {
    const size_t bytes = (size_t)1 << 31;
    DeviceMemory a(bytes), b(bytes);
    FUSEDNGP_CUDA_CHECK(cudaMemset(a.as<void>(), 1, bytes));
    const double ms = time_median_ms(kWarmup, 10, [&](int) {
        FUSEDNGP_CUDA_CHECK(cudaMemcpyAsync(b.as<void>(), a.as<void>(), bytes, cudaMemcpyDeviceToDevice));
    });
    std::printf("ceiling: device-to-device copy %.2f TB/s (read + write)\n", 2.0 * bytes / (ms * 1e-3) / 1e12);

    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    const int n = 8192;
    DeviceMemory x((size_t)n * n * 2), y((size_t)n * n * 2), z((size_t)n * n * 2);
    auto hx = random_floats((size_t)n * n, 1.f, 3);
    std::vector<__half> hh(hx.size());
    for (size_t i = 0; i < hx.size(); ++i) hh[i] = __float2half(hx[i]);
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(x.as<void>(), hh.data(), hh.size() * 2, cudaMemcpyHostToDevice));
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(y.as<void>(), hh.data(), hh.size() * 2, cudaMemcpyHostToDevice));
    const float one = 1.f, zero = 0.f;
    const double gms = time_median_ms(kWarmup, 10, [&](int) {
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, x.as<void>(), CUDA_R_16F, n,
                                  y.as<void>(), CUDA_R_16F, n, &zero, z.as<void>(), CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    });
    std::printf("ceiling: cuBLAS fp16 GEMM 8192^3 (fp32 accumulate) %.0f TFLOP/s\n", 2.0 * n * n * (double)n / (gms * 1e-3) / 1e12);
    cublasDestroy(h);
}

// The I/O alone of one inference call (n_in % 4 == 0, n_out % 4 == 0,
// n_in >= n_out): every input float read once, every output float written
// once, 16-byte streaming accesses, one thread per 4 outputs, one launch of
// batch * n_out / 4 threads. A reference for what plain streaming code gets
// at this batch (launch, ramp and tail included), not a bound: on the H200 it
// reached 77.6 % of the copy-ceiling bound at 2^20 rows, below the warp
// kernel's flavour 3 (86.6 %), and 92.4 % at 2^22.
__global__ void io_only_kernel(const float* __restrict__ in, float* __restrict__ out, uint32_t batch,
                               uint32_t n_in, uint32_t n_out) {
    const uint32_t groups = n_out / 4u, in_groups = n_in / 4u;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)batch * groups) return;
    const uint32_t r = (uint32_t)(i / groups), j = (uint32_t)(i % groups);
    const float4* src = reinterpret_cast<const float4*>(in + (size_t)r * n_in);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (uint32_t q = j; q < in_groups; q += groups) {
        const float4 v = __ldcs(src + q);
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    __stcs(reinterpret_cast<float4*>(out + (size_t)r * n_out) + j, acc);
}

// --inference-ab: the warp kernel's flavours and grid shapes (see the
// usage note at the top) against flavour 0 (the kernel before them) and the
// block-tile kernel, at every width and batch, each variant twice in
// interleaved order, plus the I/O-only kernel as a streaming reference.
void run_inference_ab(const Options& opt, const std::vector<uint32_t>& batches, const std::vector<DeviceMemory>& inputs,
                      DeviceMemory& out) {
    struct AbVariant {
        std::string name;
        FusedMlpTuning tuning;
    };
    auto flavor = [](int f, int mt = 0, bool full = false) {
        FusedMlpTuning t;
        t.warp_flavor = f;
        t.row_tiles_per_warp = mt;
        t.warp_full_grid = full;
        return t;
    };
    std::vector<AbVariant> ab = {{"warp", {}}, {"f0", flavor(0)}, {"tile", {}}};
    ab[2].tuning.tile_inference = true;
    ab.push_back({"f1_relu", flavor(1)});
    ab.push_back({"f2_vec4", flavor(2)});
    ab.push_back({"f3_v4relu", flavor(3)});
    ab.push_back({"f6_stage", flavor(6)});
    ab.push_back({"f7_stgrelu", flavor(7)});
    ab.push_back({"f7_s16", flavor(7, 1)});
    ab.push_back({"f3_s16", flavor(3, 1)});
    ab.push_back({"f0_full", flavor(0, 0, true)});
    ab.push_back({"f3_full", flavor(3, 0, true)});
    for (int mt : {1, 2})
        for (int smem : {0, 1}) {
            FusedMlpTuning t = flavor(0, mt);
            t.warp_weights_in_smem = smem;
            ab.push_back({"f0_s" + std::to_string(16 * mt) + (smem ? "_smem" : "_l1"), t});
        }
    struct AbRow {
        std::string variant;
        uint32_t width, batch;
        int round;
        double ms;
        std::string plan;
    };
    std::vector<AbRow> rows;
    const double bound_bytes = 4.0 * (opt.n_in + opt.n_out);
    const bool io_ok = opt.n_in % 4 == 0 && opt.n_out % 4 == 0 && opt.n_in >= opt.n_out;
    for (uint32_t B : batches) {
        if (io_ok)
            for (int round = 0; round < 2; ++round) {
                const uint32_t threads = 256, blocks = (uint32_t)(((uint64_t)B * (opt.n_out / 4) + threads - 1) / threads);
                const double ms = time_median_ms(kWarmup, opt.reps, [&](int i) {
                    io_only_kernel<<<blocks, threads>>>(inputs[i % kRotations].as<float>(), out.as<float>(), B,
                                                        opt.n_in, opt.n_out);
                });
                FUSEDNGP_CUDA_CHECK(cudaGetLastError());
                rows.push_back({"io_only", 0, B, round, ms, "I/O only"});
            }
        for (uint32_t w : opt.widths)
            for (int round = 0; round < 2; ++round)
                for (size_t k = 0; k < ab.size(); ++k) {
                    const AbVariant& v = ab[round == 0 ? k : ab.size() - 1 - k];
                    FusedMlpConfig cfg{opt.n_in, opt.n_out, w, opt.depth, Activation::ReLU, Activation::None};
                    FusedMlp mlp(cfg, v.tuning);
                    if (v.name != "tile" && !mlp.inference_plan().warp) continue;  // W >= 128: no warp kernel
                    mlp.set_params(random_floats(mlp.n_params(), 1.f / std::sqrt((float)w), 5).data());
                    const double ms = time_median_ms(kWarmup, opt.reps, [&](int i) {
                        mlp.inference(inputs[i % kRotations].as<float>(), out.as<float>(), B, nullptr);
                    });
                    FUSEDNGP_CUDA_CHECK(cudaGetLastError());
                    rows.push_back({v.name, w, B, round, ms, mlp.describe()});
                    if (round == 0 && B == batches.front()) std::printf("%s W=%u: %s\n", v.name.c_str(), w, mlp.describe().c_str());
                    std::printf("row %s %u %u r%d %.4f ms %.3f G/s\n", v.name.c_str(), w, B, round, ms, B / (ms * 1e-3) / 1e9);
                    std::fflush(stdout);
                }
    }
    std::printf("\nnetwork %u -> %u x W -> %u, ReLU, median of %d; %% of the I/O bound at %.0f B/sample and 4.25 TB/s "
                "(io_only: the I/O alone, W 0)\n", opt.n_in, opt.depth, opt.n_out, opt.reps, bound_bytes);
    std::printf("%-14s %4s %8s %3s %9s %11s %8s\n", "variant", "W", "batch", "r", "ms", "Gsamples/s", "% bound");
    for (const AbRow& r : rows) {
        const double sps = r.batch / (r.ms * 1e-3);
        std::printf("%-14s %4u %8u %3d %9.4f %11.3f %7.1f%%\n", r.variant.c_str(), r.width, r.batch, r.round, r.ms,
                    sps / 1e9, 100.0 * sps * bound_bytes / 4.25e12);
    }
    if (!opt.csv.empty()) {
        FILE* f = std::fopen(opt.csv.c_str(), "w");
        if (f != nullptr) {
            std::fprintf(f, "variant,width,batch,round,ms,samples_per_s,pct_bound,plan\n");
            for (const AbRow& r : rows) {
                const double sps = r.batch / (r.ms * 1e-3);
                std::fprintf(f, "%s,%u,%u,%d,%.6f,%.6e,%.2f,\"%s\"\n", r.variant.c_str(), r.width, r.batch, r.round,
                             r.ms, sps, 100.0 * sps * bound_bytes / 4.25e12, r.plan.c_str());
            }
            std::fclose(f);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    const Options opt = parse(argc, argv);
    cudaDeviceProp prop{};
    FUSEDNGP_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs, %.0f MB L2, %zu KB smem/block opt-in\n", prop.name, prop.multiProcessorCount,
                prop.l2CacheSize / 1e6, prop.sharedMemPerBlockOptin / 1024);
    if (opt.ceilings) measure_ceilings();

    std::vector<uint32_t> batches = opt.batches.empty() ? std::vector<uint32_t>{opt.batch} : opt.batches;
    const uint32_t B = *std::max_element(batches.begin(), batches.end());
    std::vector<DeviceMemory> inputs, douts;
    for (int r = 0; r < kRotations; ++r) {
        inputs.push_back(upload(random_floats((size_t)B * opt.n_in, 1.f, 10 + r)));
        douts.push_back(upload(random_floats((size_t)B * opt.n_out, 1e-6f, 20 + r)));
    }
    DeviceMemory target = upload(random_floats((size_t)B * opt.n_out, 1.f, 30));
    DeviceMemory out((size_t)B * opt.n_out * sizeof(float)), din((size_t)B * opt.n_in * sizeof(float));

    if (opt.inference_ab) {
        run_inference_ab(opt, batches, inputs, out);
        return 0;
    }

    if (opt.train_ab) {
        const std::vector<uint32_t> depths = opt.depths.empty() ? std::vector<uint32_t>{opt.depth} : opt.depths;
        // Each variant forces its kernel for every batch (the default plan
        // picks one per call by batch). "warp": the planner's warp variant;
        // the others force one weight-gradient mode and block size, timed
        // only from 2^20 rows on and skipped where they equal "warp".
        struct TrainVariant {
            std::string name;
            FusedMlpTuning tuning;
            bool large_batches_only = false;
        };
        std::vector<TrainVariant> variants;
        {
            FusedMlpTuning tile;
            tile.tile_training = true;
            variants.push_back({"tile", tile});
            // The Hopper wgmma training kernel (W = 64 and 128 networks it supports,
            // compute capability 9.0; skipped elsewhere).
            FusedMlpTuning wgmma;
            wgmma.wgmma_train = true;
            variants.push_back({"wgmma", wgmma});
            FusedMlpTuning warp;
            warp.force_warp_training = true;
            variants.push_back({"warp", warp});
            // The planned variant with the activations switched at run time
            // (flavour 0) instead of the ReLU flavour the planner picks for
            // these ReLU / None networks.
            FusedMlpTuning f0 = warp;
            f0.warp_train_flavor = 0;
            variants.push_back({"f0", f0});
            // The planned variant through the kernels with the fused loss's
            // extras compiled in (what the image step's fused training runs).
            FusedMlpTuning warpx = warp;
            warpx.warp_train_extras = 1;
            variants.push_back({"warpx", warpx});
            auto forced = [&](const std::string& name, WarpDwMode mode, int warps) {
                FusedMlpTuning t = warp;
                t.warp_train_dw_mode = (int)mode;
                t.warp_train_warps = warps;
                variants.push_back({name, t, true});
            };
            forced("pw", WarpDwMode::PerWarp, 0);
            for (int w : {4, 6, 8, 12}) forced("sh" + std::to_string(w), WarpDwMode::Shared, w);
            for (int w : {4, 8}) forced("s128x" + std::to_string(w), WarpDwMode::Shared128, w);
            // The planned variant without the L2 prefetch of the next slab's
            // dL/dout or target (shared modes only).
            FusedMlpTuning nopf = warp;
            nopf.l2_prefetch = false;
            variants.push_back({"nopf", nopf, true});
            if (!opt.train_variants.empty()) {
                std::vector<TrainVariant> kept;
                for (const TrainVariant& v : variants)
                    if (std::find(opt.train_variants.begin(), opt.train_variants.end(), v.name) !=
                        opt.train_variants.end())
                        kept.push_back(v);
                variants = kept;
            }
        }
        struct AbRow {
            std::string variant, pass;
            uint32_t width, depth, batch;
            double ms;
            std::string plan;
        };
        std::vector<AbRow> ab_rows;
        for (uint32_t w : opt.widths)
            for (uint32_t depth : depths)
                for (uint32_t batch : batches)
                    for (int round = 0; round < 2; ++round)
                        for (size_t k = 0; k < variants.size(); ++k) {
                            // Interleaved order: forward in round 0, backward in round 1.
                            const TrainVariant& v = variants[round == 0 ? k : variants.size() - 1 - k];
                            if (v.large_batches_only && batch < (1u << 20)) continue;
                            FusedMlpConfig cfg{opt.n_in, opt.n_out, w, depth, Activation::ReLU, Activation::None};
                            FusedMlp mlp(cfg, v.tuning);
                            const FusedMlp::PassPlan& plan = mlp.training_plan_for(batch);
                            const bool want_wgmma = v.tuning.wgmma_train;
                            const bool want_warp = !v.tuning.tile_training && !want_wgmma;
                            if (want_wgmma && !plan.wgmma) continue;  // not on this device / shape
                            if (want_warp && !plan.warp) continue;  // no such warp plan here
                            if (v.large_batches_only && v.name != "nopf") {
                                // The same kernel as "warp": not timed twice.
                                FusedMlpTuning def;
                                def.force_warp_training = true;
                                const FusedMlp ref(cfg, def);
                                const WarpTrainVariant& a = plan.warp_train;
                                const WarpTrainVariant& b = ref.training_plan_for(batch).warp_train;
                                if (a.dw_mode == b.dw_mode && a.warps == b.warps && a.flavor == b.flavor) continue;
                            }
                            mlp.set_params(random_floats(mlp.n_params(), 1.f / std::sqrt((float)w), 5).data());
                            DeviceMemory dw(mlp.n_params() * sizeof(float));
                            const double l2 = time_median_ms(kWarmup, opt.reps, [&](int i) {
                                mlp.train_step(inputs[i % kRotations].as<float>(), target.as<float>(), LossKind::L2,
                                               nullptr, nullptr, dw.as<float>(), batch, nullptr);
                            });
                            const double fb = time_median_ms(kWarmup, opt.reps, [&](int i) {
                                const float* in = inputs[i % kRotations].as<float>();
                                mlp.forward(in, out.as<float>(), batch, nullptr);
                                mlp.backward(in, douts[i % kRotations].as<float>(), din.as<float>(), dw.as<float>(),
                                             batch, nullptr);
                            });
                            const std::string r = " r" + std::to_string(round);
                            ab_rows.push_back({v.name, "train fused L2" + r, w, depth, batch, l2, mlp.describe()});
                            ab_rows.push_back({v.name, "train fwd+bwd" + r, w, depth, batch, fb, mlp.describe()});
                            if (round == 0 && (batch == batches.front() || v.large_batches_only))
                                std::printf("%s W=%u D=%u B=%u: %s\n", v.name.c_str(), w, depth, batch,
                                            mlp.describe().c_str());
                            // Each row as soon as it is measured (a run cut short keeps them).
                            for (size_t i = ab_rows.size() - 2; i < ab_rows.size(); ++i)
                                std::printf("row %s %u %u %u %s %.4f ms %.3f G/s\n", ab_rows[i].variant.c_str(), w,
                                            depth, batch, ab_rows[i].pass.c_str(), ab_rows[i].ms,
                                            batch / (ab_rows[i].ms * 1e-3) / 1e9);
                            std::fflush(stdout);
                        }
        std::printf("\nnetwork %u -> D x W -> %u, ReLU, median of %d; tile = block-tile kernel, wgmma = the Hopper wgmma training kernel, warp = the warp "
                    "training kernel's planned variant, f0 = the same with the activations switched at run time (no ReLU flavour), warpx = the same through the kernels with the fused loss's extras, pw / shN / s128xN = forced variants (per-warp sums; per-block "
                    "sums, N warps per block; the same at 128 registers), nopf = warp without the L2 prefetch\n",
                    opt.n_in, opt.n_out, opt.reps);
        std::printf("%-7s %4s %3s %9s %-20s %10s %12s\n", "kernel", "W", "D", "batch", "pass", "ms", "Gsamples/s");
        for (const AbRow& r : ab_rows)
            std::printf("%-7s %4u %3u %9u %-20s %10.4f %12.3f\n", r.variant.c_str(), r.width, r.depth, r.batch,
                        r.pass.c_str(), r.ms, r.batch / (r.ms * 1e-3) / 1e9);
        if (!opt.csv.empty()) {
            FILE* f = std::fopen(opt.csv.c_str(), "w");
            if (f != nullptr) {
                std::fprintf(f, "variant,width,depth,batch,pass,ms,samples_per_s,plan\n");
                for (const AbRow& r : ab_rows)
                    std::fprintf(f, "%s,%u,%u,%u,%s,%.6f,%.6e,\"%s\"\n", r.variant.c_str(), r.width, r.depth, r.batch,
                                 r.pass.c_str(), r.ms, r.batch / (r.ms * 1e-3), r.plan.c_str());
                std::fclose(f);
            }
        }
        return 0;
    }

    cublasHandle_t cublas;
    CUBLAS_CHECK(cublasCreate(&cublas));

    struct Variant {
        std::string name;
        FusedMlpTuning tuning;
    };
    std::vector<Variant> variants = {{"auto", {}}};
    if (opt.variants) {
        FusedMlpTuning mt1; mt1.row_tiles_per_warp = 1;
        FusedMlpTuning mt2; mt2.row_tiles_per_warp = 2;
        FusedMlpTuning big; big.occupancy_first = false;
        FusedMlpTuning r128; r128.rows_per_tile = 128;
        variants.push_back({"slab16", mt1});
        variants.push_back({"slab32", mt2});
        variants.push_back({"max_rows", big});
        variants.push_back({"rows128", r128});
        FusedMlpTuning no_prefetch; no_prefetch.l2_prefetch = false;
        variants.push_back({"noprefet", no_prefetch});
    }

    std::vector<Row> rows;
    for (uint32_t w : opt.widths) {
        const double macs = mlp_macs_per_sample(opt.n_in, w, opt.depth, opt.n_out);
        const double fwd_flop = 2 * macs * B, train_flop = 6 * macs * B;
        const bool fused_runs = fused_unsupported_reason({opt.n_in, opt.n_out, w, opt.depth}).empty();
        for (const Variant& v : variants) {
            if (!fused_runs) break;
            FusedMlpConfig cfg{opt.n_in, opt.n_out, w, opt.depth, Activation::ReLU, Activation::None};
            FusedMlp mlp(cfg, v.tuning);
            mlp.set_params(random_floats(mlp.n_params(), 1.f / std::sqrt((float)w), 5).data());
            DeviceMemory dw(mlp.n_params() * sizeof(float));
            auto add = [&](const std::string& pass, double ms, double flop) {
                rows.push_back({v.name, w, pass, ms, B / (ms * 1e-3), flop / (ms * 1e-3) / 1e12, mlp.describe()});
            };
            add("inference", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    mlp.inference(inputs[i % kRotations].as<float>(), out.as<float>(), B, nullptr);
                }), fwd_flop);
            add("train fwd+bwd", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    const float* in = inputs[i % kRotations].as<float>();
                    mlp.forward(in, out.as<float>(), B, nullptr);
                    mlp.backward(in, douts[i % kRotations].as<float>(), din.as<float>(), dw.as<float>(), B, nullptr);
                }), train_flop);
            add("train fused L2", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    mlp.train_step(inputs[i % kRotations].as<float>(), target.as<float>(), LossKind::L2, out.as<float>(),
                                   din.as<float>(), dw.as<float>(), B, nullptr);
                }), train_flop);
            add("backward only", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    mlp.backward(inputs[i % kRotations].as<float>(), douts[i % kRotations].as<float>(), din.as<float>(),
                                 dw.as<float>(), B, nullptr);
                }), train_flop);
            // Without d_dweights the reduce kernel does not run: the
            // difference to "backward only" is its cost.
            add("backward no dW", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    mlp.backward(inputs[i % kRotations].as<float>(), douts[i % kRotations].as<float>(), din.as<float>(),
                                 nullptr, B, nullptr);
                }), train_flop);
            std::printf("%s %s\n", v.name.c_str(), mlp.describe().c_str());
            std::fflush(stdout);
        }
        {
            CublasMlp mlp({opt.n_in, opt.n_out, w, opt.depth, Activation::ReLU, Activation::None}, B);
            mlp.set_params(random_floats(mlp.n_params(), 1.f / std::sqrt((float)w), 5).data());
            DeviceMemory dw(mlp.n_params() * sizeof(float));
            auto add = [&](const std::string& pass, double ms, double flop) {
                rows.push_back({"CublasMLP", w, pass, ms, B / (ms * 1e-3), flop / (ms * 1e-3) / 1e12, mlp.describe()});
            };
            add("inference", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    mlp.inference(inputs[i % kRotations].as<float>(), out.as<float>(), B, nullptr);
                }), fwd_flop);
            add("train fwd+bwd", time_median_ms(kWarmup, opt.reps, [&](int i) {
                    const float* in = inputs[i % kRotations].as<float>();
                    mlp.forward(in, out.as<float>(), B, nullptr);
                    mlp.backward(in, douts[i % kRotations].as<float>(), din.as<float>(), dw.as<float>(), B, nullptr);
                }), train_flop);
            std::printf("%s\n", mlp.describe().c_str());
            std::fflush(stdout);
        }
        const double ci = cublas_gemm_ms(cublas, B, opt.n_in, w, opt.depth, opt.n_out, false, opt.reps);
        rows.push_back({"cublas", w, "inference GEMMs only", ci, B / (ci * 1e-3), fwd_flop / (ci * 1e-3) / 1e12, ""});
        const double ct = cublas_gemm_ms(cublas, B, opt.n_in, w, opt.depth, opt.n_out, true, opt.reps);
        rows.push_back({"cublas", w, "train GEMMs only", ct, B / (ct * 1e-3), train_flop / (ct * 1e-3) / 1e12, ""});
    }
    cublasDestroy(cublas);

    std::printf("\nnetwork %u -> %u x W -> %u, ReLU, batch %u, median of %d\n", opt.n_in, opt.depth, opt.n_out, B,
                opt.reps);
    std::printf("%-9s %5s %-22s %10s %12s %9s\n", "variant", "W", "pass", "ms", "Gsamples/s", "TFLOP/s");
    for (const Row& r : rows)
        std::printf("%-9s %5u %-22s %10.3f %12.3f %9.1f\n", r.variant.c_str(), r.width, r.pass.c_str(), r.ms,
                    r.samples_per_s / 1e9, r.tflops);
    if (!opt.csv.empty()) write_rows_csv(opt.csv, rows);
    return 0;
}
