// Launchers of the NeRF kernels (kernels/nerf/nerf_kernels.cu), private to
// them and to their host users (src/gpu/nerf, engine/nerf_cuda_trainer).
// Plain types only, so the .cu needs neither Eigen nor JSON. Each kernel's
// per-ray or per-cell math is the CPU reference's own host/device code
// (nerf/ray_marching_math.h, volume_rendering.h, training_rays.h, ray_loss.h).
#pragma once

#include "nerf/occlusion_mask.h"
#include "nerf/ray_loss.h"
#include "nerf/ray_marching_math.h"
#include "nerf/training_rays.h"
#include "nerf/volume_rendering.h"
#include "render/camera.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fusedngp::gpu {

// A ray whose samples did not fit the step's sample buffer (ray_count).
constexpr uint32_t kDroppedRay = 0xFFFFFFFFu;

// What a march reads: the occupancy bits, the box rays are clipped to, the
// step rule.
struct NerfMarchView {
    const uint8_t* bits = nullptr;
    Box3 bounds;
    nerf::MarchSettings march;
    // Training marches that cull occluded cells (nerf/occlusion_mask.h):
    // `bits` without the culled cells, and here the full bits, which the
    // probe rays march. Null: every ray marches `bits`.
    const uint8_t* probe_bits = nullptr;
    // Optional: the grid's march skip mask (nerf/march_skip_mask.h), built
    // from the full bits (so it also covers the culled training bits): every
    // march passes empty space a block at a time with it, and the
    // fixed-step warp march rules out empty rounds.
    const uint8_t* skip_mask = nullptr;
};

// Per-sample outputs of a march. directions holds (dir + 1) / 2 in columns
// 0..2 of rows `direction_stride` floats apart (the colour model's input).
struct NerfSampleBuffers {
    float* positions = nullptr;   // [capacity][3]
    float* directions = nullptr;  // [capacity][direction_stride]
    uint32_t direction_stride = 3;
    float* t = nullptr;           // [capacity]
    float* dt = nullptr;          // [capacity]
    uint32_t capacity = 0;
};

// The count pass stores this many rounds' ballots (32 lattice points each)
// of a ray marched by a warp, so the write pass needs no second march.
constexpr uint32_t kNerfStoredMarchRounds = 32;

struct NerfTrainingRaysArgs {
    uint64_t key = 0, step = 0;
    uint32_t n_rays = 0;
    const Camera* cameras = nullptr;  // [n_frames]
    uint32_t n_frames = 0;
    const uint8_t* images = nullptr;  // [n_frames][height][width][4]
    uint32_t width = 0, height = 0;
    bool snap_to_pixel_centers = true;  // nerf/training_rays.h training_ray_pixel
    nerf::TrainingBackground background;
    NerfMarchView grid;
    NerfSampleBuffers samples;
    uint32_t* ray_first = nullptr;    // [n_rays]
    uint32_t* ray_count = nullptr;    // [n_rays], kDroppedRay when dropped
    float* ray_target = nullptr;      // [n_rays][3]
    float* ray_background = nullptr;  // [n_rays][3]
    // Written: [0] samples asked for (may exceed capacity), [1] rays kept,
    // [2] samples kept.
    uint32_t* counters = nullptr;
    // Rays r < masked_rays keep their march's ballots at round_masks + r *
    // kNerfStoredMarchRounds (fixed step); the others march twice.
    uint32_t* round_masks = nullptr;
    uint32_t masked_rays = 0;
    void* scan_temp = nullptr;  // nerf_ray_scan_temp_bytes(n_rays) bytes
    size_t scan_temp_bytes = 0;
};

// Scratch bytes the launches below need for up to max_rays rays.
size_t nerf_ray_scan_temp_bytes(uint32_t max_rays);

// Draws the step's rays (nerf/training_rays.h), marches them and writes their
// samples into consecutive ranges of the buffers, in ray order; the rays
// whose range would pass the capacity (the last ones) are dropped. A fixed
// step (cone 0) marches each ray with a warp, 32 lattice points at a time;
// a cone, each ray with a thread. Positions past the kept samples, up to the
// capacity, are set to (0.5, 0.5, 0.5): a density pass over the whole
// capacity then reads one cell there.
void launch_nerf_training_rays(const NerfTrainingRaysArgs& args, cudaStream_t stream);

struct NerfCompactArgs {
    uint32_t n_rays = 0;
    const uint32_t* ray_first = nullptr;  // marched samples of each ray
    const uint32_t* ray_count = nullptr;  // kDroppedRay: dropped when marching
    // The density model's outputs on the marched samples (rows of
    // density_stride floats): sigma = trunc_exp(row[0]), taken here rather
    // than in a pass of its own.
    const float* density_out = nullptr;
    uint32_t density_stride = 0;
    NerfSampleBuffers in, out;
    uint32_t* out_first = nullptr;
    uint32_t* out_count = nullptr;
    // The march's rays kept (its counters[1]): the rays dropped when
    // marching are the ones from there on.
    const uint32_t* rays_limit = nullptr;
    // Written: [0] samples asked for, [1] rays kept, [2] samples kept.
    uint32_t* counters = nullptr;
    void* scan_temp = nullptr;
    size_t scan_temp_bytes = 0;
    // Optional: rows of encoded_dims floats per sample (the density model's
    // encoding of the marched samples, from the inference that gave sigma),
    // copied along with the samples, so the training forward need not run
    // the encoding again on the kept ones.
    const float* in_encoded = nullptr;
    float* out_encoded = nullptr;
    uint32_t encoded_dims = 0;
    // Optional scratch, out.capacity entries: each kept sample's marched row,
    // so the copy runs a thread per row (and float4 of encoding) instead of
    // a warp per ray (~7 kept samples: most lanes idle).
    uint32_t* source_row = nullptr;
    // Optional (culling occluded cells, nerf/occlusion_mask.h): bitfields in
    // the occupancy grid's layout, as 32-bit words; every marched sample of
    // a kept ray sets its cell's bit in `visited`, and in `seen` when the ray
    // composites it. n_cascades: the grid's.
    uint32_t* visited = nullptr;
    uint32_t* seen = nullptr;
    int n_cascades = 1;
};

// Compaction (instant-ngp's): per ray, the samples render_ray would composite
// (volume_rendering.h samples_used, early termination) are copied into
// consecutive ranges of `out`, in ray order; rays whose range would pass its
// capacity, or that were dropped when marching, are dropped (out_count
// kDroppedRay).
void launch_nerf_compact_rays(const NerfCompactArgs& args, cudaStream_t stream);

// dst[i][offset + j] = src[i][j], j < cols, for i < n (strided rows).
void launch_copy_columns(const float* src, uint32_t src_stride, float* dst, uint32_t dst_stride, uint32_t dst_offset,
                         uint32_t cols, uint32_t n, cudaStream_t stream);

// sigma[i] = trunc_exp(density_out[i][0]), rgb[i][c] = sigmoid(colour_raw[i][c]).
void launch_nerf_activations(const float* density_out, uint32_t density_stride, const float* colour_raw, float* sigma,
                             float* rgb, uint32_t n, cudaStream_t stream);

// sigma[i] = trunc_exp(density_out[i][0]) (the occupancy grid's density).
void launch_nerf_sigma(const float* density_out, uint32_t density_stride, float* sigma, uint32_t n,
                       cudaStream_t stream);

struct NerfRayLossArgs {
    uint32_t n_rays = 0;
    const uint32_t* ray_first = nullptr;
    const uint32_t* ray_count = nullptr;
    const float* ray_target = nullptr;
    const float* ray_background = nullptr;
    const float* sigma = nullptr;  // [capacity]
    const float* rgb = nullptr;    // [capacity][3]
    const float* dt = nullptr;
    nerf::RayLoss loss;
    const uint32_t* counters = nullptr;  // [1]: rays kept: the mean's divisor is 3 * that
    float* d_sigma = nullptr;     // [capacity], zeroed by the caller
    float* d_rgb = nullptr;       // [capacity][3], zeroed by the caller
    double* loss_sum = nullptr;   // += sum of the kept rays' mean loss terms
};

// Per ray: volume rendering, the loss against the target and its backward
// (render_ray, ray_loss_*, render_ray_backward), writing dL/dsigma and
// dL/drgb of the ray's samples.
void launch_nerf_ray_loss(const NerfRayLossArgs& args, cudaStream_t stream);

// d_colour_raw[i][c] = d_rgb[i][c] * rgb (1 - rgb) (through the sigmoid).
void launch_nerf_colour_raw_gradient(const float* rgb, const float* d_rgb, float* d_colour_raw, uint32_t n,
                                     cudaStream_t stream);

// d_density_out[i][j] = d_colour_in[i][feature_offset + j] (the density
// outputs' part of the colour model's input gradient) plus, for j = 0,
// d_sigma[i] * trunc_exp_grad(density_out[i][0]).
void launch_nerf_density_gradient(const float* d_colour_in, uint32_t colour_in_stride, uint32_t feature_offset,
                                  const float* density_out, const float* d_sigma, float* d_density_out, uint32_t n,
                                  cudaStream_t stream);

// ---- Rendering (inference) --------------------------------------------------

struct NerfViewRays {
    Camera camera;
    uint32_t first_pixel = 0;  // rays are pixels first_pixel .. first_pixel + n_rays - 1, row-major
    uint32_t n_rays = 0;
};

// A view renders in rounds, so rays stop marching once they are opaque
// (early termination): each round every ray that is still going marches up
// to max_per_ray more samples from where it stopped, both networks run on
// them, and each ray composites them onto its running sum (RayAccumulator:
// exactly render_ray's arithmetic). A ray is done when its transmittance
// drops below render_ray's threshold or its march ends.
struct NerfViewRayState {
    nerf::MarchCursor cursor;
    nerf::RayAccumulator<float> acc;
    uint32_t done = 0;
};

// Every ray's state at its march's start (pixel centres, no jitter).
void launch_nerf_start_view(const NerfViewRays& rays, const NerfMarchView& grid, NerfViewRayState* state,
                            cudaStream_t stream);
// counts[i] = samples ray i marches this round (0 once done).
void launch_nerf_count_view_round(const NerfViewRays& rays, const NerfMarchView& grid, const NerfViewRayState* state,
                                  uint32_t max_per_ray, uint32_t* counts, cudaStream_t stream);
// Writes the round's samples of rays [ray_begin, ray_end) at offsets[i] -
// offsets[ray_begin] and advances their cursors.
void launch_nerf_march_view_round(const NerfViewRays& rays, const NerfMarchView& grid, NerfViewRayState* state,
                                  uint32_t max_per_ray, const uint32_t* offsets, uint32_t ray_begin, uint32_t ray_end,
                                  const NerfSampleBuffers& samples, cudaStream_t stream);
// Composites the round's samples of rays [ray_begin, ray_end) (sigma, rgb, t,
// dt at the same offsets) and marks the rays that are done.
void launch_nerf_composite_view_round(const uint32_t* offsets, uint32_t ray_begin, uint32_t ray_end,
                                      const float* sigma, const float* rgb, const float* t, const float* dt,
                                      const NerfMarchView& grid, NerfViewRayState* state, cudaStream_t stream);
// rgb_out[i] (RGB floats) = the ray's result on `background`; with depth_out,
// depth_out[i] = its depth / opacity where the opacity passes
// min_depth_opacity, else 0 (and no colour).
void launch_nerf_finish_view(const NerfViewRayState* state, uint32_t n_rays, Vec3 background, float* rgb_out,
                             float* depth_out, float min_depth_opacity, cudaStream_t stream);

// ---- Occupancy grid -----------------------------------------------------------

// The cells and points of one update for cascade k (nerf/occupancy_grid.h):
// warm-up: n = 128^3 cells in order; else n = 128^3 / 2: first half uniform,
// second half uniform over `occupied` (its count at *n_occupied; uniform over
// all cells when 0). Points are jittered in their cells. Counter-based draws
// keyed by (key, update index).
void launch_nerf_grid_samples(uint64_t key, uint64_t update, int cascade, bool warmup, const uint32_t* occupied,
                              const uint32_t* n_occupied, uint32_t* cells, float* points, cudaStream_t stream);
// fresh[cascade * 128^3 + cells[i]] = max(fresh, values[i]) (values >= 0).
void launch_nerf_grid_scatter_max(const uint32_t* cells, const float* values, uint32_t n, int cascade, float* fresh,
                                  cudaStream_t stream);
// density = max(decay * density, fresh) over n cells.
void launch_nerf_grid_decay(float* density, const float* fresh, float decay, size_t n, cudaStream_t stream);
// *threshold = min(kOccupancyDensity, *cascade0_sum / 128^3).
void launch_nerf_grid_threshold(const double* cascade0_sum, float* threshold, cudaStream_t stream);
// bits of every cell: density > *threshold.
void launch_nerf_grid_bits(const float* density, const float* threshold, size_t n_cells, uint8_t* bits,
                           cudaStream_t stream);
// pool_cascade_bits: cascade k's inner octant ORs cascade k-1's bytes, k = 1 .. n-1.
// The march skip mask of n_cascades cascades' bits (nerf/march_skip_mask.h).
void launch_nerf_skip_mask(const uint8_t* bits, int n_cascades, uint8_t* skip_mask, cudaStream_t stream);

void launch_nerf_grid_pool(uint8_t* bits, int n_cascades, cudaStream_t stream);
// The occluded-cell mask at an occupancy update (nerf/occlusion_mask.h), over
// bitfields of n_cells bits and `recent`, a counter byte per cell (8-byte
// aligned): with `apply`, the update rule (next_culled_cells); then visited =
// seen = 0 and training_bits = occupied & ~culled.
void launch_nerf_occlusion_update(const uint8_t* occupied, uint8_t* culled, uint8_t* visited, uint8_t* seen,
                                  uint8_t* recent, uint8_t* training_bits, size_t n_cells, bool apply,
                                  cudaStream_t stream);
// Morton indices (within cascade k) of its occupied cells, compacted; *n_out
// their count. `temp` / `temp_bytes`: CUB scratch (query with temp = null).
void nerf_occupied_cells(const uint8_t* bits, int cascade, uint32_t* out, uint32_t* n_out, void* temp,
                         size_t& temp_bytes, cudaStream_t stream);
// *sum = sum of values[0..n) in double (CUB; deterministic for a given n).
void nerf_sum(const float* values, size_t n, double* sum, void* temp, size_t& temp_bytes, cudaStream_t stream);
// offsets = exclusive prefix sum of counts[0..n) (CUB).
void nerf_exclusive_sum(const uint32_t* counts, uint32_t* offsets, uint32_t n, void* temp, size_t& temp_bytes,
                        cudaStream_t stream);

} // namespace fusedngp::gpu
