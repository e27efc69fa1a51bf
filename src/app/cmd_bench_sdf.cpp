// `fusedngp bench sdf`: the SDF mode's throughputs besides training (which
// `fusedngp train` measures): ground-truth distance queries per second on
// the CPU and the GPU, the device sampler's batch time, and, for a trained
// model, marching cubes and sphere tracing times. docs/BENCHMARKS.md.
#include "app/commands.h"
#include "app/cli_checks.h"

#include "app/sdf_model_file.h"
#include "core/clock.h"
#include "core/errors.h"
#include "engine/sdf_backend_tools.h"
#include "io/atomic_file.h"
#include "modes/sdf_mode.h"
#include "render/camera.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#include "engine/device_sampler.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_bvh.h"
#include <cuda_runtime.h>
#endif

#include <chrono>
#include <cstdio>

namespace fusedngp {
namespace {

struct BenchSdfOptions {
    std::string data;
    std::string model;
    uint32_t cpu_points = 1 << 16;
    uint32_t gpu_points = 1 << 24;
    uint32_t resolution = 512;
    uint32_t width = 1920, height = 1080;
    std::string json_out;
};

using Clock = std::chrono::steady_clock;

Matrix<float> random_points(uint32_t n, uint64_t seed) {
    Rng rng(seed);
    Matrix<float> p(n, 3);
    for (uint32_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) p(i, k) = rng.uniform(-0.05f, 1.05f);
    return p;
}

#ifdef FUSEDNGP_HAVE_CUDA
// Median-free, simple: one warm-up, then the mean of `reps` timed runs.
template <typename F>
double time_device_ms(F&& f, int reps = 5) {
    f();
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    const auto t = Clock::now();
    for (int r = 0; r < reps; ++r) f();
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    return seconds_since(t) * 1e3 / reps;
}

void bench_ground_truth_gpu(const SdfTrainingData& data, const BenchSdfOptions& o, json& out) {
    if (!cuda_device_available()) return;
    gpu::DeviceBvh bvh(data.truth().bvh());
    Matrix<float> host = random_points(o.gpu_points, 5);
    gpu::DeviceBuffer<float> points((size_t)o.gpu_points * 3), values(o.gpu_points);
    FUSEDNGP_GPU_CHECK(cudaMemcpy(points.data(), host.data(), points.bytes(), cudaMemcpyHostToDevice));
    const double ms = time_device_ms([&] {
        bvh.signed_distances(points.data(), o.gpu_points, values.data(), data.truth().sign_rays(), nullptr);
    });
    out["ground_truth_gpu_queries_per_second"] = o.gpu_points / (ms * 1e-3);
    std::printf("ground truth (GPU)   %10.3e queries/s  (%u points, %.2f ms)\n", o.gpu_points / (ms * 1e-3),
                o.gpu_points, ms);

    std::unique_ptr<DeviceSampler> sampler = make_device_sampler(data);
    const uint32_t batch = 1 << 18;
    gpu::DeviceBuffer<float> inputs((size_t)batch * 3), targets(batch);
    uint64_t step = 0;
    const double sample_ms = time_device_ms([&] { sampler->sample(1, step++, batch, inputs.data(), targets.data(), nullptr); }, 20);
    out["device_sampler_batch_2pow18_ms"] = sample_ms;
    std::printf("device sampler       %10.3f ms per batch of 2^18 (points + ground truth)\n", sample_ms);
}
#endif

void bench_ground_truth_cpu(const SdfTrainingData& data, const BenchSdfOptions& o, json& out) {
    Matrix<float> points = random_points(o.cpu_points, 5), values;
    const auto t = Clock::now();
    data.truth().field()(points, values);
    const double s = seconds_since(t);
    out["ground_truth_cpu_queries_per_second"] = o.cpu_points / s;
    std::printf("ground truth (CPU)   %10.3e queries/s  (%u points, %.2f s)\n", o.cpu_points / s, o.cpu_points, s);
}

// The loaded model's IoU on both backends: a trained model read back from
// its file must score what its training run reported.
void check_model_quality(const BenchSdfOptions& o, const SdfTrainingData& data, json& out) {
    for (const char* name : {"cpu", "cuda"}) {
        if (std::string(name) == "cuda" && available_backends().front() != "cuda") continue;
        for (bool via_state : {true, false}) {
            OpenedSdfModel m = open_sdf_model(o.model, name, via_state);
            const SdfQuality q = make_sdf_evaluator(*m.backend, data, std::string(name) == "cpu" ? 1u << 16 : 1u << 22)
                                     ->evaluate(*m.backend);
            const std::string how = via_state ? "state" : "params";
            out["loaded_model_iou_" + std::string(name) + "_" + how] = q.iou.iou;
            Matrix<float> probe = random_points(4, 3), values;
            m.backend->inference(probe, values);
            std::printf("loaded model (%s, %s)   IoU %.5f on %llu points; f at 4 points %.4g %.4g %.4g %.4g\n", name,
                        how.c_str(), q.iou.iou, (unsigned long long)q.iou.n_points, values(0, 0), values(1, 0),
                        values(2, 0), values(3, 0));
        }
    }
}

void bench_model(const BenchSdfOptions& o, json& out) {
    OpenedSdfModel m = open_sdf_model(o.model, "");
    IsosurfaceSettings settings;
    settings.resolution = o.resolution;
    IsosurfaceSettings warm_up;
    warm_up.resolution = 64;
    extract_sdf_model_mesh(*m.backend, warm_up);
    auto t = Clock::now();
    TriangleMesh mesh = extract_sdf_model_mesh(*m.backend, settings);
    const double mc = seconds_since(t);
    out["marching_cubes"] = {{"resolution", o.resolution}, {"seconds", mc}, {"triangles", mesh.triangles.size()},
                             {"backend", m.backend->name()}};
    std::printf("marching cubes       %10.3f s at %u^3, %zu triangles (%s)\n", mc, o.resolution,
                mesh.triangles.size(), m.backend->name().c_str());
    const Camera camera = default_view_camera(o.width, o.height);
    json renders = json::object();
    for (SdfRenderMode mode : {SdfRenderMode::Shade, SdfRenderMode::Normals, SdfRenderMode::Depth, SdfRenderMode::Ao,
                               SdfRenderMode::Cost}) {
        render_sdf_model(*m.backend, camera, mode);  // warm-up
        t = Clock::now();
        const int reps = m.backend->name() == "cuda" ? 5 : 1;
        for (int r = 0; r < reps; ++r) render_sdf_model(*m.backend, camera, mode);
        const double ms = seconds_since(t) * 1e3 / reps;
        renders[to_string(mode)] = ms;
        std::printf("render %-8s      %10.2f ms at %ux%u (%s)\n", to_string(mode), ms, o.width, o.height,
                    m.backend->name().c_str());
    }
    out["render_ms"] = renders;
}

void run_bench_sdf(const BenchSdfOptions& o) {
    SdfScene scene = load_sdf_scene(o.data);
    const std::string description = scene.report.describe();
    SdfTrainingData data(std::move(scene), SdfSamplingSettings{});
    std::printf("data      %s: %s\n", o.data.c_str(), description.c_str());
    json out{{"data", o.data}, {"triangles", data.scene().mesh.triangles.size()}};
    bench_ground_truth_cpu(data, o, out);
#ifdef FUSEDNGP_HAVE_CUDA
    bench_ground_truth_gpu(data, o, out);
#endif
    if (!o.model.empty()) {
        check_model_quality(o, data, out);
        bench_model(o, out);
    }
    if (!o.json_out.empty()) {
        const std::string text = out.dump(2) + "\n";
        write_file_atomically(o.json_out, text.data(), text.size());
    }
}

} // namespace

void add_bench_sdf_command(CLI::App* bench) {
    auto o = std::make_shared<BenchSdfOptions>();
    CLI::App* cmd = bench->add_subcommand(
        "sdf", "SDF mode: ground-truth queries/s (CPU, GPU), the device sampler, and for --model marching cubes and render times");
    cmd->add_option("--data", o->data, "mesh (.obj .ply .stl .off)")->required();
    cmd->add_option("--model", o->model, "a trained SDF snapshot: also time marching cubes and rendering");
    cmd->add_option("--cpu-points", o->cpu_points, "ground-truth queries timed on the CPU")->check(positive_number())->capture_default_str();
    cmd->add_option("--gpu-points", o->gpu_points, "ground-truth queries timed on the GPU")->check(positive_number())->capture_default_str();
    cmd->add_option("--resolution", o->resolution, "marching-cubes resolution")->check(positive_number())->capture_default_str();
    cmd->add_option("--width", o->width, "render width")->check(positive_number())->capture_default_str();
    cmd->add_option("--height", o->height, "render height")->check(positive_number())->capture_default_str();
    cmd->add_option("--json", o->json_out, "write the figures as JSON");
    cmd->callback([o]() { run_bench_sdf(*o); });
}

} // namespace fusedngp
