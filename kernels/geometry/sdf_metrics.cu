// SDF metric kernels: the metric points (the same counters as the CPU's
// geometry/sdf_metrics.cpp) and the reductions of the two fields' values.
#include "geometry/launch_sdf_metrics.h"

#include "components/block_sum_device.cuh"
#include "gpu/components/device_buffer.h"

namespace fusedngp::gpu {
namespace {

constexpr uint32_t kThreads = 256;

uint32_t blocks_for(uint32_t n) { return (n + kThreads - 1) / kThreads; }

__device__ void store_point(float* points, uint32_t i, Vec3 p) {
    points[3ull * i] = p.x;
    points[3ull * i + 1] = p.y;
    points[3ull * i + 2] = p.z;
}

__global__ void iou_points_kernel(uint64_t key, uint64_t first, uint32_t n, float* points) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_point(points, i, sdf_cube_point(key, first + i));
}

__global__ void band_points_kernel(SurfaceSamplerView surface, uint64_t key, uint64_t first, uint32_t n, float band,
                                   float* points) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store_point(points, i, sdf_near_surface_point(surface, key, first + i, band));
}

// __syncthreads_count sums a predicate over the block; one atomic per block.
__global__ void count_inside_kernel(const float* model, const float* truth, uint32_t n, unsigned long long* counts) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    bool in_model = false, in_truth = false;
    if (i < n) {
        in_model = sdf_inside(model[i]);
        in_truth = sdf_inside(truth[i]);
    }
    const int both = __syncthreads_count(in_model && in_truth);
    const int either = __syncthreads_count(in_model || in_truth);
    if (threadIdx.x == 0) {
        atomicAdd(&counts[0], (unsigned long long)both);
        atomicAdd(&counts[1], (unsigned long long)either);
    }
}

// Grid-stride over a fixed grid: each thread's share and the trees are fixed
// by n, so the sum is the same every run.
__global__ void abs_difference_partials_kernel(const float* a, const float* b, uint32_t n, double* partials) {
    double local = 0;
    for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += kAbsDiffBlocks * kThreads) {
        local += fabs((double)a[i] - (double)b[i]);
    }
    const double total = block_sum<kThreads>(local);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void add_partials_kernel(const double* partials, double* sum) {
    double local = 0;
    for (uint32_t i = threadIdx.x; i < kAbsDiffBlocks; i += kThreads) local += partials[i];
    const double total = block_sum<kThreads>(local);
    if (threadIdx.x == 0) *sum += total;
}

} // namespace

void launch_iou_points(uint64_t key, uint64_t first, uint32_t n, float* points, cudaStream_t stream) {
    if (n == 0) return;
    iou_points_kernel<<<blocks_for(n), kThreads, 0, stream>>>(key, first, n, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_band_points(const SurfaceSamplerView& surface, uint64_t key, uint64_t first, uint32_t n, float band,
                        float* points, cudaStream_t stream) {
    if (n == 0) return;
    band_points_kernel<<<blocks_for(n), kThreads, 0, stream>>>(surface, key, first, n, band, points);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_count_inside(const float* model, const float* truth, uint32_t n, unsigned long long* counts,
                         cudaStream_t stream) {
    if (n == 0) return;
    count_inside_kernel<<<blocks_for(n), kThreads, 0, stream>>>(model, truth, n, counts);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_add_abs_difference(const float* a, const float* b, uint32_t n, double* partials, double* sum,
                               cudaStream_t stream) {
    if (n == 0) return;
    abs_difference_partials_kernel<<<kAbsDiffBlocks, kThreads, 0, stream>>>(a, b, n, partials);
    FUSEDNGP_GPU_CHECK_LAUNCH();
    add_partials_kernel<<<1, kThreads, 0, stream>>>(partials, sum);
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
