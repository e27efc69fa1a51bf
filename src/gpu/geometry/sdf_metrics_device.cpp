#include "gpu/geometry/sdf_metrics_device.h"

#include "core/errors.h"
#include "geometry/launch_sdf_metrics.h"

#include <algorithm>

namespace fusedngp::gpu {

namespace {

// A chunk's points and both fields' values.
struct ChunkBuffers {
    DeviceBuffer<float> points, model_values, truth_values;
    explicit ChunkBuffers(uint64_t n_points) {
        const size_t n = (size_t)std::min<uint64_t>(n_points, kDeviceSdfMetricChunk);
        points.resize(3 * n);
        model_values.resize(n);
        truth_values.resize(n);
    }
    void evaluate(const DeviceSdfFn& model, const DeviceSdfFn& truth, uint32_t n, cudaStream_t stream) {
        model(points.data(), n, model_values.data(), stream);
        truth(points.data(), n, truth_values.data(), stream);
    }
};

template <typename T>
std::vector<T> download_after(const DeviceBuffer<T>& buffer, cudaStream_t stream) {
    std::vector<T> host(buffer.size());
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    return host;
}

} // namespace

IouResult device_sdf_iou(const DeviceSdfFn& model, const DeviceSdfFn& truth, uint64_t n_points, uint64_t seed,
                         cudaStream_t stream) {
    if (n_points == 0) return iou_from_counts(0, 0, 0);
    const uint64_t key = sdf_random_key(seed, 0, SdfRandomPurpose::Iou);
    ChunkBuffers chunk(n_points);
    DeviceBuffer<unsigned long long> counts(2);  // inside both, inside either
    counts.fill_bytes(0, stream);
    for (uint64_t first = 0; first < n_points; first += kDeviceSdfMetricChunk) {
        const uint32_t n = (uint32_t)std::min<uint64_t>(kDeviceSdfMetricChunk, n_points - first);
        launch_iou_points(key, first, n, chunk.points.data(), stream);
        chunk.evaluate(model, truth, n, stream);
        launch_count_inside(chunk.model_values.data(), chunk.truth_values.data(), n, counts.data(), stream);
    }
    const std::vector<unsigned long long> host = download_after(counts, stream);
    return iou_from_counts(n_points, host[0], host[1]);
}

BandErrorResult device_sdf_band_error(const DeviceSdfSampler& surface, const DeviceSdfFn& model,
                                      const DeviceSdfFn& truth, uint64_t n_points, uint64_t seed,
                                      cudaStream_t stream, float band) {
    if (surface.empty()) throw InputError("SDF band error: the mesh has no triangles");
    BandErrorResult result;
    result.n_points = n_points;
    if (n_points == 0) return result;
    const uint64_t key = sdf_random_key(seed, 0, SdfRandomPurpose::Band);
    ChunkBuffers chunk(n_points);
    DeviceBuffer<double> partials(kAbsDiffBlocks), sum(1);
    sum.fill_bytes(0, stream);
    for (uint64_t first = 0; first < n_points; first += kDeviceSdfMetricChunk) {
        const uint32_t n = (uint32_t)std::min<uint64_t>(kDeviceSdfMetricChunk, n_points - first);
        launch_band_points(surface.view(), key, first, n, band, chunk.points.data(), stream);
        chunk.evaluate(model, truth, n, stream);
        launch_add_abs_difference(chunk.model_values.data(), chunk.truth_values.data(), n, partials.data(),
                                  sum.data(), stream);
    }
    result.mean_abs_error = download_after(sum, stream)[0] / (double)n_points;
    return result;
}

} // namespace fusedngp::gpu
