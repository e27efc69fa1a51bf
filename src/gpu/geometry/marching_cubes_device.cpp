// The device isosurface extraction's slab loop: the steps of
// geometry/marching_cubes.cpp's loop, each a kernel
// (kernels/geometry/marching_cubes_kernels.h), with CUB scans for the slots.
#include "gpu/geometry/marching_cubes_device.h"

#include "geometry/marching_cubes_kernels.h"

#include <algorithm>
#include <array>

namespace fusedngp::gpu {
namespace {

// Points per field call: large batches, bounded scratch.
constexpr uint32_t kPointsPerCall = 1u << 22;

template <typename T>
void grow(DeviceBuffer<T>& buffer, size_t count) {
    if (buffer.size() < count) buffer.resize(count);
}

uint32_t read_back(const uint32_t* d_value, cudaStream_t stream) {
    uint32_t value = 0;
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(&value, d_value, sizeof(value), cudaMemcpyDeviceToHost, stream));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    return value;
}

// Appends `count` elements from device memory to a host vector (asynchronous:
// the caller synchronises before touching the vector again).
template <typename Host, typename Device>
void append_download(std::vector<Host>& host, const Device* device, uint32_t count, cudaStream_t stream) {
    static_assert(sizeof(Host) == sizeof(Device), "host and device element layouts differ");
    const size_t at = host.size();
    host.resize(at + count);
    if (count) FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(host.data() + at, device, sizeof(Host) * count, cudaMemcpyDeviceToHost, stream));
}

// The buffers of the slab loop, grown to the largest slab.
struct SlabBuffers {
    DeviceBuffer<float> values[2];  // this slab's planes and the previous slab's
    DeviceBuffer<float> points;
    DeviceBuffer<uint8_t> masks, scratch;
    DeviceBuffer<uint32_t> point_counts, point_offsets, cell_counts, cell_offsets;
    DeviceBuffer<Vec3> positions, normals;
    DeviceBuffer<iso::Triangle> triangles;
};

// Evaluates planes [first, last] into `values` (plane `first` at index 0).
void evaluate_planes(const DeviceSdfFn& field, const IsosurfaceSettings& settings, uint32_t first, uint32_t last, float* values,
                     DeviceBuffer<float>& points, cudaStream_t stream) {
    const uint32_t res = settings.resolution, plane = (res + 1) * (res + 1);
    const uint32_t planes_per_call = std::max(1u, kPointsPerCall / plane);
    grow(points, (size_t)3 * plane * std::min(planes_per_call, last - first + 1));
    for (uint32_t k0 = first; k0 <= last; k0 += planes_per_call) {
        const uint32_t k1 = std::min(k0 + planes_per_call - 1, last), count = plane * (k1 - k0 + 1);
        iso_kernels::lattice_points(settings.box.lo, settings.box.hi, res, k0, count, points.data(), stream);
        field(points.data(), count, values + (size_t)plane * (k0 - first), stream);
    }
}

// The slab's value planes: the overlap with the previous slab copied on the
// device, the rest evaluated.
void fill_slab_values(const DeviceSdfFn& field, const IsosurfaceSettings& settings, const IsosurfaceSlab& slab,
                      const DeviceBuffer<float>& previous, uint32_t previous_lo, DeviceBuffer<float>& values,
                      DeviceBuffer<float>& points, cudaStream_t stream) {
    const size_t plane = (size_t)(settings.resolution + 1) * (settings.resolution + 1);
    grow(values, plane * slab.n_planes());
    const size_t carried = plane * (slab.first_new_plane - slab.plane_lo);
    if (carried) {
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(values.data(), previous.data() + plane * (slab.plane_lo - previous_lo),
                                           carried * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
    if (slab.first_new_plane <= slab.plane_hi) {
        evaluate_planes(field, settings, slab.first_new_plane, slab.plane_hi, values.data() + carried, points, stream);
    }
}

} // namespace

TriangleMesh extract_isosurface_device(const DeviceSdfFn& field, const IsosurfaceSettings& settings, cudaStream_t stream) {
    static_assert(sizeof(iso::Triangle) == sizeof(std::array<uint32_t, 3>), "Triangle must match TriangleMesh's layout");
    const std::vector<IsosurfaceSlab> slabs = plan_isosurface_slabs(settings);
    const uint32_t res = settings.resolution;
    SlabBuffers b;
    TriangleMesh mesh;
    int current = 0;
    uint32_t previous_lo = 0;
    for (const IsosurfaceSlab& slab : slabs) {
        current = 1 - current;
        fill_slab_values(field, settings, slab, b.values[1 - current], previous_lo, b.values[current], b.points, stream);
        previous_lo = slab.plane_lo;
        const iso::SlabValues s{b.values[current].data(), res, slab.plane_lo, slab.plane_hi, settings.box.lo, settings.box.hi,
                                settings.level};

        // Vertices: classify the points, scan their counts, emit the owned points' vertices.
        const uint32_t classified = slab.points_classified(res), owned = slab.points_owned(res);
        grow(b.masks, classified);
        grow(b.point_counts, (size_t)classified + 1);
        grow(b.point_offsets, (size_t)classified + 1);
        iso_kernels::classify_points(s, slab.z0, classified, b.masks.data(), b.point_counts.data(), stream);
        iso_kernels::exclusive_sum(b.point_counts.data(), b.point_offsets.data(), classified + 1, b.scratch, stream);
        const uint32_t n_vertices = read_back(b.point_offsets.data() + owned, stream);
        grow(b.positions, n_vertices);
        grow(b.normals, n_vertices);
        if (n_vertices) {
            iso_kernels::point_vertices(s, slab.z0, owned, b.masks.data(), b.point_offsets.data(), b.positions.data(),
                                        b.normals.data(), stream);
        }

        // Triangles: count per cell, scan, emit with global vertex ids (the
        // next slab's first plane gets the ids this slab's scan gave it).
        const uint32_t n_cells = slab.cells(res);
        grow(b.cell_counts, (size_t)n_cells + 1);
        grow(b.cell_offsets, (size_t)n_cells + 1);
        iso_kernels::cell_counts(s, slab.z0, n_cells, b.cell_counts.data(), stream);
        iso_kernels::exclusive_sum(b.cell_counts.data(), b.cell_offsets.data(), n_cells + 1, b.scratch, stream);
        const uint32_t n_triangles = read_back(b.cell_offsets.data() + n_cells, stream);
        grow(b.triangles, n_triangles);
        const iso::VertexIds ids{b.masks.data(), b.point_offsets.data(), (uint32_t)mesh.vertices.size(), slab.z0};
        if (n_triangles) {
            iso_kernels::cell_triangles(s, ids, n_cells, b.cell_counts.data(), b.cell_offsets.data(), b.triangles.data(), stream);
        }

        append_download(mesh.vertices, b.positions.data(), n_vertices, stream);
        append_download(mesh.normals, b.normals.data(), n_vertices, stream);
        append_download(mesh.triangles, b.triangles.data(), n_triangles, stream);
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));  // the host vectors and the buffers are reused next
    }
    return mesh;
}

} // namespace fusedngp::gpu
