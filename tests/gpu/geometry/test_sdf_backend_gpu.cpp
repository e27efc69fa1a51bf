// The SDF mode on the CUDA backend against its CPU twins: the device sampler
// against the host sample generator, device inference against host
// inference, and the GPU renderer, marching cubes and IoU against the CPU
// paths on the same trained parameters. Skips without a device.
#include "backends/cpu_backend.h"
#include "engine/cuda_backend.h"
#include "engine/device_sampler.h"
#include "engine/sdf_backend_tools.h"
#include "gpu/components/device_buffer.h"
#include "modes/mode.h"
#include "modes/sdf_mode.h"

#include "gpu/device_test_util.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>

namespace fusedngp {
namespace {

SdfScene torus_scene() {
    SdfScene s;
    s.path = "torus (test)";
    s.mesh = test::make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.12f);
    s.report = analyse_mesh(s.mesh);
    return s;  // already in the unit cube: identity transform
}

json small_config() {
    json c = load_mode_config("sdf", std::string(FUSEDNGP_SOURCE_DIR) + "/configs/examples/sdf_small_cpu.json");
    return c;
}

TEST(SdfCudaBackend, DeviceSamplerMatchesTheHostGenerator) {
    REQUIRE_DEVICE();
    SdfTrainingData data(torus_scene(), SdfSamplingSettings{});
    std::unique_ptr<DeviceSampler> sampler = make_device_sampler(data);
    ASSERT_TRUE(sampler);
    const uint32_t batch = 1 << 14;
    gpu::DeviceBuffer<float> points((size_t)batch * 3), targets(batch);
    sampler->sample(42, 7, batch, points.data(), targets.data(), nullptr);
    std::vector<float> d_points = points.download(), d_targets = targets.download();
    Matrix<float> h_points, h_targets;
    generate_sdf_batch(data.surface(), data.sampling(), 42, 7, batch, data.truth().field(), h_points, h_targets);
    ASSERT_EQ(h_points.rows(), (Eigen::Index)batch);
    size_t sign_flips = 0;
    for (uint32_t i = 0; i < batch; ++i) {
        for (int k = 0; k < 3; ++k) ASSERT_NEAR(d_points[3 * i + k], h_points(i, k), 1e-5f) << "sample " << i;
        EXPECT_NEAR(std::fabs(d_targets[i]), std::fabs(h_targets(i, 0)), 1e-5f) << "sample " << i;
        if ((d_targets[i] < 0) != (h_targets(i, 0) < 0) && std::fabs(h_targets(i, 0)) > 1e-5f) ++sign_flips;
    }
    EXPECT_EQ(sign_flips, 0u);
}

TEST(SdfCudaBackend, TrainsOnDeviceSamplesAndMatchesTheCpuPathsOnItsWeights) {
    REQUIRE_DEVICE();
    SdfTrainingData data(torus_scene(), SdfSamplingSettings{});
    const json config = small_config();
    CudaBackend cuda(config, data, 3);
    for (int i = 0; i < 400; ++i) cuda.train_step(1 << 16);
    cuda.synchronize();

    // IoU on the GPU (2^22 points) against the CPU evaluator (2^18) on the same weights.
    std::unique_ptr<SdfEvaluator> gpu_eval = make_sdf_evaluator(cuda, data, 1 << 22);
    const SdfQuality q = gpu_eval->evaluate(cuda);
    EXPECT_GT(q.iou.iou, 0.95) << q.iou_method;
    CpuBackend cpu(config, data, 3);
    cpu.set_params(cuda.inference_params());
    std::unique_ptr<SdfEvaluator> cpu_eval = make_sdf_evaluator(cpu, data, 1 << 18);
    const SdfQuality qc = cpu_eval->evaluate(cpu);
    EXPECT_NEAR(q.iou.iou, qc.iou.iou, 0.01);
    EXPECT_NEAR(q.mean_abs_error_near_surface, qc.mean_abs_error_near_surface, 1e-3);

    // Device inference against host inference on the same points.
    Matrix<float> points(4096, 3), host_values;
    Rng rng(9);
    for (Eigen::Index i = 0; i < points.rows(); ++i)
        for (int k = 0; k < 3; ++k) points(i, k) = rng.uniform(0.f, 1.f);
    cuda.inference(points, host_values);
    gpu::DeviceBuffer<float> d_points(points.size()), d_values(points.rows());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(d_points.data(), points.data(), d_points.bytes(), cudaMemcpyHostToDevice));
    cuda.inference_device(d_points.data(), (uint32_t)points.rows(), d_values.data(), nullptr);
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    std::vector<float> device_values = d_values.download();
    for (Eigen::Index i = 0; i < points.rows(); ++i) ASSERT_FLOAT_EQ(device_values[i], host_values(i, 0)) << i;
    Matrix<float> cpu_values;
    cpu.inference(points, cpu_values);
    for (Eigen::Index i = 0; i < points.rows(); ++i) EXPECT_NEAR(cpu_values(i, 0), host_values(i, 0), 2e-3f) << i;

    // Marching cubes on the GPU against the CPU's on the same weights (fp16
    // network on the GPU: compare the surfaces, not bit patterns).
    IsosurfaceSettings mc;
    mc.resolution = 48;
    TriangleMesh gpu_mesh = extract_sdf_model_mesh(cuda, mc), cpu_mesh = extract_sdf_model_mesh(cpu, mc);
    ASSERT_GT(cpu_mesh.triangles.size(), 1000u);
    EXPECT_NEAR((double)gpu_mesh.triangles.size(), (double)cpu_mesh.triangles.size(), 0.02 * cpu_mesh.triangles.size());

    // Rendering: the same picture up to the network's fp16 rounding.
    Camera camera;
    camera.pose = orbit_pose(30, 25, 2.2f);
    camera.intrinsics = intrinsics_from_fov(96, 72, 45);
    Image g = render_sdf_model(cuda, camera, SdfRenderMode::Normals), c = render_sdf_model(cpu, camera, SdfRenderMode::Normals);
    ASSERT_EQ(g.pixels.size(), c.pixels.size());
    size_t far = 0;
    for (size_t i = 0; i < g.pixels.size(); ++i) far += std::fabs(g.pixels[i] - c.pixels[i]) > 0.05f;
    EXPECT_LT(far, g.pixels.size() / 50) << "pixels (channels) differing by > 0.05";

    // A model loaded for inference alone (render, mesh) computes the same field.
    InferenceBackend loaded = make_inference_backend("cuda", config, 3, 1, cuda.inference_params());
    Matrix<float> loaded_values;
    loaded->inference(points, loaded_values);
    // (Not bit-equal: seen 0.13041 against 0.13061 at W = 32, the size of the
    // network's fp16 rounding; the cause of the difference is not known.)
    for (Eigen::Index i = 0; i < points.rows(); ++i) ASSERT_NEAR(loaded_values(i, 0), host_values(i, 0), 2e-3f) << i;
    TriangleMesh loaded_mesh = extract_sdf_model_mesh(*loaded, mc);
    // Values within that rounding flip the few cells whose corners sit at the
    // zero level: the meshes agree to a few triangles (seen 28776 against 28780).
    EXPECT_NEAR((double)loaded_mesh.triangles.size(), (double)gpu_mesh.triangles.size(),
                0.002 * gpu_mesh.triangles.size());

    // The training state survives a save/load round trip on the device sampler path.
    TrainingState s = cuda.save_state();
    CudaBackend again(config, data, 3);
    again.load_state(s);
    EXPECT_EQ(again.step(), cuda.step());
    const float a = cuda.train_step(1 << 12), b = again.train_step(1 << 12);
    (void)a;
    (void)b;
    EXPECT_EQ(cuda.synchronize(), again.synchronize());
}

} // namespace
} // namespace fusedngp
