// The NeRF mode's kernels: training-ray generation and marching, the
// per-ray volume rendering + loss + backward, activations, the view renderer
// and the occupancy grid update. Every per-ray or per-cell formula is the CPU
// reference's host/device function (nerf/*.h); these kernels only map them
// over threads and place the results.
#include "nerf/launch_nerf.h"

#include "components/row_column.cuh"
#include "gpu/components/device_buffer.h"
#include "nerf/march_skip_mask.h"
#include "nerf/nerf_model_layout.h"
#include "nerf/training_rays.h"
#include "nerf/volume_rendering.h"

#include <algorithm>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace fusedngp::gpu {
namespace {

constexpr uint32_t kThreads = 128;
// Per-ray kernels: a step has ~10^4 rays, each a long dependent loop, so
// small blocks spread them over all SMs.
constexpr uint32_t kRayThreads = 64;

uint32_t blocks_for(size_t n, uint32_t threads = kThreads) { return (uint32_t)((n + threads - 1) / threads); }

constexpr uint32_t kFullMask = 0xFFFFFFFFu;
// Warp-per-ray kernels: 4 rays per block.
constexpr uint32_t kWarpRayThreads = 128;

uint32_t warp_blocks_for(uint32_t n_rays) { return (n_rays + kWarpRayThreads / 32 - 1) / (kWarpRayThreads / 32); }

// The current device's SM count, read once (one device per process).
uint32_t multiprocessor_count() {
    static const uint32_t count = [] {
        int device = 0, sms = 0;
        FUSEDNGP_GPU_CHECK(cudaGetDevice(&device));
        FUSEDNGP_GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        return (uint32_t)std::max(sms, 1);
    }();
    return count;
}

__device__ uint32_t warp_ray_index() { return (blockIdx.x * blockDim.x + threadIdx.x) / 32; }
__device__ uint32_t lane_index() { return threadIdx.x & 31u; }

__device__ void store_sample(const NerfSampleBuffers& s, uint32_t i, Vec3 p, Vec3 dir, float t, float dt) {
    s.positions[3 * (size_t)i + 0] = p.x;
    s.positions[3 * (size_t)i + 1] = p.y;
    s.positions[3 * (size_t)i + 2] = p.z;
    float* d = s.directions + (size_t)i * s.direction_stride;
    d[0] = 0.5f * (dir.x + 1.f);
    d[1] = 0.5f * (dir.y + 1.f);
    d[2] = 0.5f * (dir.z + 1.f);
    s.t[i] = t;
    s.dt[i] = dt;
}

// Marches a fixed-step ray (cone 0) with the calling warp, all 32 lanes with
// the same arguments: each round tests 32 consecutive lattice points, one per
// lane, so the bitfield reads of a ray overlap instead of following one
// another. Calls emit(i, p, t) on the lane holding sample i (< max_samples);
// returns the sample count. The samples are march_ray's: every lattice point
// whose tested cell is occupied (ray_marching_math.h). Starts at round
// `first_round` with `n` samples before it; where `round_masks` is given,
// round q's ballot (bit j: point 32 q + j emits) goes to round_masks[q] for
// q < kStoredRounds. With a skip mask (nerf/march_skip_mask.h), every 32nd
// round the lanes first look at the next 32 rounds, one each, and the rounds
// found empty are passed over (their stored ballot is 0).
constexpr uint32_t kStoredRounds = kNerfStoredMarchRounds;

template <typename Emit>
__device__ int warp_march_fixed_step(Vec3 origin, Vec3 dir, const nerf::MarchCursor& c, const uint8_t* bits,
                                     const uint8_t* skip_mask, const nerf::MarchSettings& m, Emit&& emit,
                                     uint32_t first_round = 0, int n = 0, uint32_t* round_masks = nullptr) {
    if (!(c.t <= c.t1)) return n;
    const uint32_t lane = lane_index();
    const uint32_t lanes_below = (1u << lane) - 1u;
    uint32_t empty_rounds = 0;  // bit j: round looked_from + j is empty
    uint32_t looked_from = first_round;
    for (uint32_t round = first_round, k0 = c.k + 32 * first_round;; ++round, k0 += 32) {
        if (skip_mask != nullptr) {
            if (round == looked_from + 32 || round == first_round) {
                const uint32_t kl = k0 + 32 * lane;
                const bool empty = nerf::lattice_t(c.t_start, kl + 31) <= c.t1 &&
                                   nerf::lattice_round_empty(skip_mask, origin, dir, c.t_start, kl, m.n_cascades);
                empty_rounds = __ballot_sync(kFullMask, empty);
                looked_from = round;
            }
            if ((empty_rounds >> (round - looked_from)) & 1u) {
                if (round_masks && round < kStoredRounds && lane == 0) round_masks[round] = 0;
                continue;
            }
        }
        const float t = nerf::lattice_t(c.t_start, k0 + lane);
        const bool inside = t <= c.t1;
        Vec3 p{0, 0, 0};
        bool occupied = false;
        if (inside) {
            p = nerf::ray_point(origin, dir, t);
            occupied = nerf::lattice_point_occupied(p, nerf::kMinStep, bits, m);
        }
        const uint32_t mask = __ballot_sync(kFullMask, occupied);
        if (round_masks && round < kStoredRounds && lane == 0) round_masks[round] = mask;
        const int i = n + __popc(mask & lanes_below);
        if (occupied && i < m.max_samples) emit(i, p, t);
        n += __popc(mask);
        if (n >= m.max_samples) return m.max_samples;
        if (__ballot_sync(kFullMask, inside) != kFullMask) return n;
    }
}

// ---- Training rays -------------------------------------------------------------
//
// A step's rays march in three launches: count (each ray's samples), an
// inclusive scan of the counts (each ray's end), write. Rays are kept in ray
// order while their samples fit the capacity: the rays dropped are the last
// ones, and every kept ray's samples are consecutive.

struct TrainingRay {
    Ray ray;
    float jitter = 0;
};

// Ray r of the step (nerf/training_rays.h); write_target also stores its
// target colour and background.
__device__ TrainingRay training_ray(const NerfTrainingRaysArgs& a, uint32_t r, bool write_target) {
    nerf::TrainingRayDraw d = nerf::draw_training_ray(a.key, a.step, r, a.n_frames, a.width, a.height);
    nerf::apply_training_background(a.background, d);
    if (write_target) {
        float target[3];
        const uint8_t* pixel = a.images + (((size_t)d.frame * a.height + d.y) * a.width + d.x) * 4;
        nerf::composite_pixel(pixel, d.background, target);
        for (int c = 0; c < 3; ++c) {
            a.ray_target[3 * r + c] = target[c];
            a.ray_background[3 * r + c] = d.background[c];
        }
    }
    float px = 0, py = 0;
    nerf::training_ray_pixel(d, a.snap_to_pixel_centers, &px, &py);
    return {camera_ray(a.cameras[d.frame], px, py), d.march_jitter};
}

// The bits training ray r marches: the probes (nerf/occlusion_mask.h) the
// full occupancy bits, the others the bits without the culled cells.
__device__ inline const uint8_t* training_ray_bits(const NerfTrainingRaysArgs& a, uint32_t r) {
    return a.grid.probe_bits != nullptr && nerf::occlusion_probe_ray(r) ? a.grid.probe_bits : a.grid.bits;
}

__global__ void count_training_rays_warp_kernel(const NerfTrainingRaysArgs a) {
    const uint32_t r = warp_ray_index();
    if (r >= a.n_rays) return;
    const TrainingRay tr = training_ray(a, r, lane_index() == 0);
    const nerf::MarchCursor c = nerf::march_start(tr.ray.origin, tr.ray.direction, a.grid.bounds, tr.jitter,
                                                  a.grid.march);
    uint32_t* masks = r < a.masked_rays ? a.round_masks + (size_t)r * kStoredRounds : nullptr;
    const int n = warp_march_fixed_step(tr.ray.origin, tr.ray.direction, c, training_ray_bits(a, r),
                                        a.grid.skip_mask, a.grid.march, [](int, Vec3, float) {}, 0, 0, masks);
    if (lane_index() == 0) a.ray_count[r] = (uint32_t)n;
}

// Cone marches (t advances by a recurrence): one ray per thread.
__global__ void count_training_rays_thread_kernel(const NerfTrainingRaysArgs a) {
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.n_rays) return;
    const TrainingRay tr = training_ray(a, r, true);
    a.ray_count[r] = (uint32_t)nerf::march_ray(tr.ray.origin, tr.ray.direction, a.grid.bounds, tr.jitter,
                                               training_ray_bits(a, r), a.grid.march, [](Vec3, float, float) {},
                                               a.grid.skip_mask);
}

// counters = {samples asked for, rays kept, samples kept} from the inclusive
// scan `ends` of n ray counts: rays are kept while their end fits the
// capacity, and no further than `rays_limit` (when given).
__global__ void reserve_ranges_kernel(const uint32_t* ends, uint32_t n, uint32_t capacity, const uint32_t* rays_limit,
                                      uint32_t* counters) {
    uint32_t lo = 0, hi = n;  // the first ray whose end passes the capacity
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (ends[mid] <= capacity) lo = mid + 1;
        else hi = mid;
    }
    const uint32_t kept = rays_limit ? ::min(lo, *rays_limit) : lo;
    counters[0] = ends[n - 1];
    counters[1] = kept;
    counters[2] = kept > 0 ? ends[kept - 1] : 0;
}

// Turns (count, end) of ray r into (first, count or kDroppedRay), for the
// whole warp; returns whether the ray is kept, its first sample and count.
// `first` holds the ends on entry (read by every lane before lane 0 writes).
__device__ bool place_ray(uint32_t r, const uint32_t* counters, uint32_t* first, uint32_t* count, uint32_t& base,
                          uint32_t& n) {
    n = count[r];
    base = first[r] - n;
    const bool kept = r < counters[1];
    __syncwarp();
    if (lane_index() == 0) {
        first[r] = kept ? base : 0;
        count[r] = kept ? n : kDroppedRay;
    }
    return kept;
}

__global__ void write_training_rays_warp_kernel(const NerfTrainingRaysArgs a) {
    const uint32_t r = warp_ray_index();
    if (r >= a.n_rays) return;
    uint32_t base = 0, n = 0;
    if (!place_ray(r, a.counters, a.ray_first, a.ray_count, base, n)) return;
    const TrainingRay tr = training_ray(a, r, false);
    const nerf::MarchCursor c = nerf::march_start(tr.ray.origin, tr.ray.direction, a.grid.bounds, tr.jitter,
                                                  a.grid.march);
    const Vec3 dir = tr.ray.direction;
    const auto store = [&](int i, Vec3 p, float t) {
        store_sample(a.samples, base + (uint32_t)i, p, dir, t, nerf::kMinStep);
    };
    if (r >= a.masked_rays || !(c.t <= c.t1)) {
        warp_march_fixed_step(tr.ray.origin, dir, c, training_ray_bits(a, r), a.grid.skip_mask, a.grid.march, store);
        return;
    }
    // The count's ballots of the first kStoredRounds rounds, lane q holding
    // round q's, and their inclusive prefix counts. Rounds past the ray's end
    // hold older masks; their bits come after its n samples and are not
    // emitted.
    const uint32_t lane = lane_index();
    const uint32_t mask = a.round_masks[(size_t)r * kStoredRounds + lane];
    const int count = __popc(mask);
    int through = count;
    for (int offset = 1; offset < 32; offset <<= 1) {
        const int v = __shfl_up_sync(kFullMask, through, offset);
        if (lane >= (uint32_t)offset) through += v;
    }
    const int stored = __shfl_sync(kFullMask, through, 31);
    // Sample i goes to lane i % 32, which finds its round (the first whose
    // prefix count passes i, by bisection over the lanes) and its bit there:
    // the stores spread over the warp instead of a lane storing a round's
    // samples one after another.
    const int placed = ::min(stored, (int)n);
    for (int i0 = 0; i0 < placed; i0 += 32) {
        const int i = i0 + (int)lane;
        int lo = 0, hi = 31;
        for (int step = 0; step < 5; ++step) {  // 32 lanes: five halvings leave lo == hi
            const int mid = (lo + hi) / 2;
            if (__shfl_sync(kFullMask, through, mid) > i) hi = mid;
            else lo = mid + 1;
        }
        uint32_t bits = __shfl_sync(kFullMask, mask, lo);
        const int before = __shfl_sync(kFullMask, through - count, lo);
        if (i < placed) {
            for (int skip = i - before; skip > 0; --skip) bits &= bits - 1;
            const float t = nerf::lattice_t(c.t_start, c.k + 32 * (uint32_t)lo + (uint32_t)__ffs(bits) - 1);
            store(i, nerf::ray_point(tr.ray.origin, dir, t), t);
        }
    }
    // A ray longer than the stored rounds marches on from there.
    if (stored < (int)n)
        warp_march_fixed_step(tr.ray.origin, dir, c, training_ray_bits(a, r), a.grid.skip_mask, a.grid.march, store,
                              kStoredRounds, stored);
}

__global__ void write_training_rays_thread_kernel(const NerfTrainingRaysArgs a) {
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.n_rays) return;
    const uint32_t n = a.ray_count[r];
    uint32_t i = a.ray_first[r] - n;
    const bool kept = r < a.counters[1];
    a.ray_first[r] = kept ? i : 0;
    a.ray_count[r] = kept ? n : kDroppedRay;
    if (!kept) return;
    const TrainingRay tr = training_ray(a, r, false);
    nerf::march_ray(tr.ray.origin, tr.ray.direction, a.grid.bounds, tr.jitter, training_ray_bits(a, r), a.grid.march,
                    [&](Vec3 p, float t, float dt) { store_sample(a.samples, i++, p, tr.ray.direction, t, dt); },
                    a.grid.skip_mask);
}

// Positions past the kept samples (to the capacity) -> the centre of the
// unit cube. The density pass that follows runs over the whole capacity (its
// batch is set on the host before the count is known); there the unused
// rows, left over from earlier steps and scattered over the hash tables,
// would cost as much as the rest. One point keeps their reads in cache.
__global__ void park_unused_positions_kernel(float* positions, uint32_t capacity, const uint32_t* counters) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= capacity || i < counters[2]) return;
    positions[3 * (size_t)i + 0] = 0.5f;
    positions[3 * (size_t)i + 1] = 0.5f;
    positions[3 * (size_t)i + 2] = 0.5f;
}

// ---- Compaction -----------------------------------------------------------------

// OcclusionMask::note_sample for the n marched samples of ray r with its
// warp (the first `used` seen). Consecutive samples mostly share a cell: a
// lane whose cell and flag its left neighbour also has leaves the atomics
// to it.
__device__ void note_occlusion(const NerfCompactArgs& a, uint32_t r, uint32_t n, uint32_t used) {
    const uint32_t f = a.ray_first[r];
    const uint32_t lane = lane_index();
    for (uint32_t j0 = 0; j0 < n; j0 += 32) {
        const uint32_t j = j0 + lane;
        uint32_t cell = nerf::kNoGridCell;
        if (j < n) {
            const float* p = a.in.positions + 3 * (size_t)(f + j);
            cell = nerf::marched_cell({p[0], p[1], p[2]}, a.in.dt[f + j], a.n_cascades);
        }
        const bool seen = j < used;
        const uint32_t left_cell = __shfl_up_sync(kFullMask, cell, 1);
        const bool left_seen = __shfl_up_sync(kFullMask, (uint32_t)seen, 1) != 0;
        if (cell == nerf::kNoGridCell || (lane > 0 && left_cell == cell && left_seen == seen)) continue;
        const uint32_t bit = 1u << (cell & 31u);
        atomicOr(a.visited + (cell >> 5), bit);
        if (seen) atomicOr(a.seen + (cell >> 5), bit);
    }
}

// samples_used (volume_rendering.h) of ray r with its warp: the lanes load
// and exponentiate 32 samples at once, then every lane runs the same
// sequential transmittance product over them (the CPU's order of operations).
__global__ void count_compacted_kernel(const NerfCompactArgs a) {
    const uint32_t r = warp_ray_index();
    if (r >= a.n_rays) return;
    const uint32_t lane = lane_index();
    const uint32_t n = a.ray_count[r];
    uint32_t used = 0;
    if (n != kDroppedRay) {
        const uint32_t f = a.ray_first[r];
        const float min_transmittance = nerf::kDefaultMinTransmittance;
        float trans = 1.f;
        bool done = false;
        for (uint32_t j0 = 0; j0 < n && !done; j0 += 32) {
            const uint32_t j = j0 + lane;
            const float sigma = j < n ? nerf::trunc_exp(a.density_out[(size_t)(f + j) * a.density_stride]) : 0.f;
            const float e = j < n ? nerf::scalar_exp(-sigma * a.in.dt[f + j]) : 1.f;
            const uint32_t m = ::min(32u, n - j0);
            for (uint32_t q = 0; q < m; ++q) {
                const float e_q = __shfl_sync(kFullMask, e, q);
                if (!(trans >= min_transmittance)) {
                    done = true;
                    break;
                }
                trans *= e_q;
                ++used;
            }
        }
    }
    if (lane == 0) a.out_count[r] = used;
    if (a.visited != nullptr && n != kDroppedRay) note_occlusion(a, r, n, used);
}

// A kept sample's position, direction, t and dt: marched row `from` to
// compacted row `to`.
__device__ inline void copy_sample_fields(const NerfCompactArgs& a, size_t from, size_t to) {
    for (int c = 0; c < 3; ++c) {
        a.out.positions[3 * to + c] = a.in.positions[3 * from + c];
        a.out.directions[to * a.out.direction_stride + c] = a.in.directions[from * a.in.direction_stride + c];
    }
    a.out.t[to] = a.in.t[from];
    a.out.dt[to] = a.in.dt[from];
}

// Rays marched but dropped have a count of 0 and lie past the march's kept
// rays, which bound the compacted ones (reserve_ranges_kernel's rays_limit).
__global__ void copy_compacted_kernel(const NerfCompactArgs a) {
    const uint32_t r = warp_ray_index();
    if (r >= a.n_rays) return;
    uint32_t base = 0, n = 0;
    if (!place_ray(r, a.counters, a.out_first, a.out_count, base, n)) return;
    const uint32_t from0 = a.ray_first[r];
    for (uint32_t j = lane_index(); j < n; j += 32) copy_sample_fields(a, from0 + j, base + j);
    if (a.in_encoded == nullptr) return;
    // A ray's kept samples are consecutive rows on both sides: one block.
    const size_t d = a.encoded_dims;
    const float* src = a.in_encoded + (size_t)from0 * d;
    float* dst = a.out_encoded + (size_t)base * d;
    const size_t count = (size_t)n * d;
    // A ray keeps ~8 rows of 32 floats: as float4s that is two rounds of the
    // warp instead of eight (the scalar copy took about a fifth of the
    // compaction's time on the H100).
    if (count % 4 == 0 && ((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15u) == 0) {
        const float4* src4 = reinterpret_cast<const float4*>(src);
        float4* dst4 = reinterpret_cast<float4*>(dst);
        for (size_t k = lane_index(); k < count / 4; k += 32) dst4[k] = src4[k];
        return;
    }
    for (size_t k = lane_index(); k < count; k += 32) dst[k] = src[k];
}

// The row-parallel copy (NerfCompactArgs::source_row): the ray's warp places
// it and writes where each kept sample comes from.
__global__ void map_compacted_kernel(const NerfCompactArgs a) {
    const uint32_t r = warp_ray_index();
    if (r >= a.n_rays) return;
    uint32_t base = 0, n = 0;
    if (!place_ray(r, a.counters, a.out_first, a.out_count, base, n)) return;
    const uint32_t from0 = a.ray_first[r];
    for (uint32_t j = lane_index(); j < n; j += 32) a.source_row[base + j] = from0 + j;
}

// Thread k: float4 k % quads of kept row k / quads of the encoding (quads = 0:
// none), and the row's first thread also its position, direction, t and dt.
__global__ void copy_compacted_rows_kernel(const NerfCompactArgs a, uint32_t quads) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t per_row = quads > 0 ? quads : 1;
    const uint32_t to = k / per_row, q = k - to * per_row;
    if (to >= a.counters[2]) return;
    const uint32_t from = a.source_row[to];
    if (quads > 0) {
        const float4* src = reinterpret_cast<const float4*>(a.in_encoded) + (size_t)from * quads;
        reinterpret_cast<float4*>(a.out_encoded)[(size_t)to * quads + q] = src[q];
    }
    if (q == 0) copy_sample_fields(a, from, to);
}

__global__ void copy_columns_kernel(const float* src, uint32_t src_stride, float* dst, uint32_t dst_stride,
                                    uint32_t dst_offset, uint32_t cols, uint32_t n) {
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)n * cols;
    if (k >= total) return;
    const RowColumn rc = row_column(k, cols, total);
    dst[rc.row * dst_stride + dst_offset + rc.column] = src[rc.row * src_stride + rc.column];
}

__device__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

__global__ void activations_kernel(const float* density_out, uint32_t density_stride, const float* colour_raw,
                                   float* sigma, float* rgb, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    sigma[i] = nerf::trunc_exp(density_out[(size_t)i * density_stride]);
    for (int c = 0; c < 3; ++c) rgb[3 * (size_t)i + c] = sigmoid(colour_raw[3 * (size_t)i + c]);
}

__global__ void sigma_kernel(const float* density_out, uint32_t density_stride, float* sigma, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sigma[i] = nerf::trunc_exp(density_out[(size_t)i * density_stride]);
}

// Ray r's render_ray, loss and render_ray_backward with its warp (the
// per-ray formulas of volume_rendering.h, 32 samples at a time). Every lane
// runs the sequential transmittance product over a round's samples through
// shuffles, in the CPU's order, and keeps T_i of its own sample; the colour
// sums and the prefix sums of the backward are warp reductions and scans
// (fp32 rounding apart from the CPU's sequential sums). A thread per ray left
// ~9 warps per SM, each waiting on a chain of dependent loads.
struct WarpRaySample {
    float sigma = 0.f, dt = 0.f, e = 1.f, rgb[3] = {0.f, 0.f, 0.f};
    float trans = 0.f;  // T before this sample (valid where used)
    bool used = false;
};

// Loads lane's sample j0 + lane of the ray (rows f..f+n) and runs the
// transmittance product of samples j0..j0+31 from `trans`: updates trans,
// sets done once a sample found T below the threshold.
__device__ WarpRaySample warp_ray_round(const NerfRayLossArgs& a, uint32_t f, uint32_t n, uint32_t j0, float& trans,
                                        bool& done) {
    const uint32_t lane = lane_index(), j = j0 + lane;
    WarpRaySample s;
    if (j < n) {
        s.sigma = a.sigma[f + j];
        s.dt = a.dt[f + j];
        s.e = nerf::scalar_exp(-s.sigma * s.dt);
        for (int c = 0; c < 3; ++c) s.rgb[c] = a.rgb[3 * (size_t)(f + j) + c];
    }
    const uint32_t m = ::min(32u, n - j0);
    for (uint32_t q = 0; q < m; ++q) {
        if (!(trans >= nerf::kDefaultMinTransmittance)) {
            done = true;
            break;
        }
        const float e_q = __shfl_sync(kFullMask, s.e, q);
        if (lane == q) {
            s.trans = trans;
            s.used = true;
        }
        trans *= e_q;
    }
    return s;
}

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

__device__ float warp_inclusive_scan(float v) {
    const uint32_t lane = lane_index();
    for (int offset = 1; offset < 32; offset <<= 1) {
        const float u = __shfl_up_sync(kFullMask, v, offset);
        if (lane >= (uint32_t)offset) v += u;
    }
    return v;
}

// Every lane returns the ray's term of the mean loss.
__device__ float warp_ray_loss_and_gradient(const NerfRayLossArgs& a, uint32_t r) {
    const uint32_t f = a.ray_first[r], n = a.ray_count[r];
    // Forward: render_ray.
    float rgb[3] = {0.f, 0.f, 0.f};
    float trans = 1.f;
    bool done = false;
    for (uint32_t j0 = 0; j0 < n && !done; j0 += 32) {
        const WarpRaySample s = warp_ray_round(a, f, n, j0, trans, done);
        const float w = s.used ? s.trans - s.trans * s.e : 0.f;
        for (int c = 0; c < 3; ++c) rgb[c] += warp_sum(w * s.rgb[c]);
    }
    const float trans_end = trans;
    const float* bg = a.ray_background + 3 * r;
    for (int c = 0; c < 3; ++c) rgb[c] += trans_end * bg[c];
    // Loss and dL/drgb of the ray.
    const float inv_n = 1.f / (3.f * (float)::max(a.counters[1], 1u));
    float loss = 0.f, g[3];
    for (int c = 0; c < 3; ++c) {
        const float target = a.ray_target[3 * r + c];
        loss += nerf::ray_loss_value(a.loss, rgb[c], target);
        g[c] = nerf::ray_loss_gradient(a.loss, rgb[c], target) * inv_n;
    }
    // Backward: render_ray_backward (dL/ddepth = dL/dopacity = 0 here).
    float prefix[3] = {0.f, 0.f, 0.f};
    trans = 1.f;
    done = false;
    for (uint32_t j0 = 0; j0 < n; j0 += 32) {
        const WarpRaySample s = warp_ray_round(a, f, n, j0, trans, done);
        const float next = s.trans * s.e;
        const float w = s.used ? s.trans - next : 0.f;
        float d_sigma = 0.f;
        for (int c = 0; c < 3; ++c) {
            const float scan = warp_inclusive_scan(w * s.rgb[c]);
            const float behind = rgb[c] - (prefix[c] + scan);
            d_sigma += g[c] * (next * s.rgb[c] - behind);
            prefix[c] += __shfl_sync(kFullMask, scan, 31);
        }
        const uint32_t j = j0 + lane_index();
        if (j < n) {
            a.d_sigma[f + j] = s.used ? s.dt * d_sigma : 0.f;
            for (int c = 0; c < 3; ++c) a.d_rgb[3 * (size_t)(f + j) + c] = s.used ? g[c] * w : 0.f;
        }
    }
    return loss * inv_n;
}

// Warps take rays grid-stride; the loss sum is added once per block (one
// double atomic per ray on a single address serialised ~36 k of them).
__global__ void ray_loss_kernel(const NerfRayLossArgs a) {
    __shared__ float block_loss[kWarpRayThreads / 32];
    const uint32_t warps = gridDim.x * (blockDim.x / 32);
    float loss = 0.f;
    for (uint32_t r = warp_ray_index(); r < a.n_rays; r += warps) {
        if (a.ray_count[r] != kDroppedRay) loss += warp_ray_loss_and_gradient(a, r);
    }
    if (lane_index() == 0) block_loss[threadIdx.x / 32] = loss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0.f;
        for (uint32_t w = 0; w < blockDim.x / 32; ++w) sum += block_loss[w];
        atomicAdd(a.loss_sum, (double)sum);
    }
}

__global__ void colour_raw_gradient_kernel(const float* rgb, const float* d_rgb, float* d_colour_raw, uint32_t n) {
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= 3 * (size_t)n) return;
    const float y = rgb[k];
    d_colour_raw[k] = d_rgb[k] * y * (1.f - y);
}

__global__ void density_gradient_kernel(const float* d_colour_in, uint32_t colour_in_stride, uint32_t feature_offset,
                                        const float* density_out, const float* d_sigma, float* d_density_out,
                                        uint32_t n) {
    constexpr uint32_t kOut = nerf::kDensityOutputs;
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= (size_t)n * kOut) return;
    const size_t i = k / kOut, j = k % kOut;
    float g = d_colour_in[i * colour_in_stride + feature_offset + j];
    if (j == 0) g += d_sigma[i] * nerf::trunc_exp_grad(density_out[i * kOut]);
    d_density_out[k] = g;
}

// ---- View rendering ---------------------------------------------------------------

__device__ Ray view_ray(const NerfViewRays& v, uint32_t i) {
    const uint32_t p = v.first_pixel + i;
    const uint32_t w = v.camera.intrinsics.width;
    return camera_ray(v.camera, (float)(p % w) + 0.5f, (float)(p / w) + 0.5f);
}

__global__ void start_view_kernel(const NerfViewRays v, const NerfMarchView g, NerfViewRayState* state) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= v.n_rays) return;
    const Ray ray = view_ray(v, i);
    NerfViewRayState s;
    s.cursor = nerf::march_start(ray.origin, ray.direction, g.bounds, 0.f, g.march);
    state[i] = s;
}

__global__ void count_view_round_kernel(const NerfViewRays v, const NerfMarchView g,
                                        const NerfViewRayState* __restrict__ state, uint32_t max_per_ray,
                                        uint32_t* counts) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= v.n_rays) return;
    if (state[i].done) {
        counts[i] = 0;
        return;
    }
    const Ray ray = view_ray(v, i);
    nerf::MarchCursor c = state[i].cursor;
    counts[i] = (uint32_t)nerf::march_segment(ray.origin, ray.direction, c, (int)max_per_ray, g.bits, g.march,
                                              [](Vec3, float, float) {}, g.skip_mask);
}

__global__ void march_view_round_kernel(const NerfViewRays v, const NerfMarchView g, NerfViewRayState* state,
                                        uint32_t max_per_ray, const uint32_t* offsets, uint32_t ray_begin,
                                        uint32_t ray_end, const NerfSampleBuffers s) {
    const uint32_t i = ray_begin + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ray_end || state[i].done) return;
    const Ray ray = view_ray(v, i);
    uint32_t k = offsets[i] - offsets[ray_begin];
    nerf::march_segment(ray.origin, ray.direction, state[i].cursor, (int)max_per_ray, g.bits, g.march,
                        [&](Vec3 p, float t, float dt) { store_sample(s, k++, p, ray.direction, t, dt); },
                        g.skip_mask);
}

__global__ void composite_view_round_kernel(const uint32_t* offsets, uint32_t ray_begin, uint32_t ray_end,
                                            const float* sigma, const float* rgb, const float* t, const float* dt,
                                            const NerfMarchView g, NerfViewRayState* state) {
    const uint32_t i = ray_begin + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ray_end || state[i].done) return;
    const uint32_t f = offsets[i] - offsets[ray_begin], n = offsets[i + 1] - offsets[i];
    const float min_transmittance = nerf::kDefaultMinTransmittance;
    nerf::RayAccumulator<float> acc = state[i].acc;
    for (uint32_t j = f; j < f + n && !acc.terminated(min_transmittance); ++j)
        acc.add(sigma[j], dt[j], rgb + 3 * (size_t)j, t + j);
    state[i].acc = acc;
    if (acc.terminated(min_transmittance) || nerf::march_finished(state[i].cursor, g.march)) state[i].done = 1;
}

__global__ void finish_view_kernel(const NerfViewRayState* __restrict__ state, uint32_t n_rays, Vec3 background,
                                   float* rgb_out, float* depth_out, float min_depth_opacity) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rays) return;
    const float bg[3] = {background.x, background.y, background.z};
    const nerf::RayResult<float> res = state[i].acc.finish(bg);
    if (depth_out) {
        depth_out[i] = res.opacity > min_depth_opacity ? res.depth / res.opacity : 0.f;
        return;
    }
    for (int c = 0; c < 3; ++c) rgb_out[3 * (size_t)i + c] = res.rgb[c];
}

// ---- Occupancy grid -------------------------------------------------------------------

__global__ void grid_samples_kernel(uint64_t key, uint64_t update, int cascade, bool warmup, const uint32_t* occupied,
                                    const uint32_t* n_occupied, uint32_t* cells, float* points, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // Four numbers per sample: the cell draw and a jitter per axis.
    const uint64_t base = ((update * nerf::kMaxCascades + (uint64_t)cascade) * nerf::kGridCells + i) * 4;
    uint32_t cell = i;
    if (!warmup) {
        const float u = counter_uniform01(key, base);
        const uint32_t n_occ = *n_occupied;
        const bool from_occupied = i >= n / 2 && n_occ > 0;
        cell = from_occupied ? occupied[nerf::scale_to_index(u, n_occ)] : nerf::scale_to_index(u, nerf::kGridCells);
    }
    cells[i] = cell;
    const Box3 box = nerf::cell_box(cascade, nerf::morton3_decode(cell));
    const float side = nerf::cascade_scale(cascade) / (float)nerf::kGridResolution;
    for (int a = 0; a < 3; ++a) points[3 * (size_t)i + a] = box.lo[a] + counter_uniform01(key, base + 1 + a) * side;
}

__global__ void grid_scatter_max_kernel(const uint32_t* cells, const float* values, uint32_t n, int cascade,
                                        float* fresh) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // Non-negative floats order like their bit patterns as ints.
    const float v = fmaxf(values[i], 0.f);
    atomicMax(reinterpret_cast<int*>(fresh + (size_t)cascade * nerf::kGridCells + cells[i]), __float_as_int(v));
}

__global__ void grid_decay_kernel(float* density, const float* fresh, float decay, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    density[i] = fmaxf(decay * density[i], fresh[i]);
}

// As the CPU grid: the mean in double, rounded to float once.
__global__ void grid_threshold_kernel(const double* sum, float* threshold) {
    *threshold = fminf(nerf::kOccupancyDensity, (float)(*sum / (double)nerf::kGridCells));
}

__global__ void grid_bits_kernel(const float* density, const float* threshold, size_t n_bytes, uint8_t* bits) {
    const size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_bytes) return;
    const float th = *threshold;
    uint8_t byte = 0;
    for (int k = 0; k < 8; ++k)
        if (density[8 * b + k] > th) byte |= (uint8_t)(1u << k);
    bits[b] = byte;
}

// OcclusionMask::update (when `apply`) or clear_marks, then the training
// march's bits: a byte of each bitfield (8 cells) and its 8 counters per thread.
__global__ void occlusion_update_kernel(const uint8_t* occupied, uint8_t* culled, uint8_t* visited, uint8_t* seen,
                                        uint8_t* recent, uint8_t* training_bits, size_t n_bytes, bool apply) {
    const size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_bytes) return;
    uint8_t c = culled[b];
    if (apply) {
        uint8_t r[8];
        uint2 packed = reinterpret_cast<const uint2*>(recent)[b];  // 8 bytes, 8-aligned
        memcpy(r, &packed, 8);
        c = nerf::next_culled_cells(c, visited[b], seen[b], r);
        memcpy(&packed, r, 8);
        reinterpret_cast<uint2*>(recent)[b] = packed;
    }
    culled[b] = c;
    visited[b] = 0;
    seen[b] = 0;
    training_bits[b] = nerf::training_march_cells(occupied[b], c);
}

__global__ void skip_mask_kernel(const uint8_t* bits, uint32_t n_blocks, uint8_t* skip_mask) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_blocks) skip_mask[i] = nerf::skip_mask_byte(bits, i);
}

// One thread per 2x2x2 block of coarse cells: the block is one byte of the
// bitfield (Morton order, even start 32), so no two threads write a byte.
__global__ void grid_pool_kernel(uint8_t* bits, int cascade) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 32u * 32u * 32u) return;
    const uint32_t x = 32 + 2 * (i % 32), y = 32 + 2 * ((i / 32) % 32), z = 32 + 2 * (i / 1024);
    for (uint32_t c = 0; c < 8; ++c)
        nerf::pool_cascade_bit(bits, cascade, nerf::Cell3{x + (c & 1), y + ((c >> 1) & 1), z + (c >> 2)});
}

struct ToDouble {
    __host__ __device__ double operator()(float v) const { return (double)v; }
};

struct CellOccupied {
    const uint8_t* bits;
    uint32_t base;
    __device__ bool operator()(uint32_t cell) const { return nerf::grid_bit(bits, base + cell); }
};

} // namespace

size_t nerf_ray_scan_temp_bytes(uint32_t max_rays) {
    size_t bytes = 0;
    FUSEDNGP_GPU_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, (const uint32_t*)nullptr, (uint32_t*)nullptr,
                                                     (int)max_rays));
    return bytes;
}

namespace {

// ends = inclusive scan of counts, then the counters (reserve_ranges_kernel).
void reserve_ranges(const uint32_t* counts, uint32_t* ends, uint32_t n, uint32_t capacity, const uint32_t* rays_limit,
                    uint32_t* counters, void* temp, size_t temp_bytes, cudaStream_t stream) {
    FUSEDNGP_GPU_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, counts, ends, (int)n, stream));
    reserve_ranges_kernel<<<1, 1, 0, stream>>>(ends, n, capacity, rays_limit, counters);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

} // namespace

void launch_nerf_training_rays(const NerfTrainingRaysArgs& a, cudaStream_t stream) {
    if (a.n_rays == 0) return;
    const bool warp = nerf::fixed_step(a.grid.march);
    if (warp) count_training_rays_warp_kernel<<<warp_blocks_for(a.n_rays), kWarpRayThreads, 0, stream>>>(a);
    else count_training_rays_thread_kernel<<<blocks_for(a.n_rays, kRayThreads), kRayThreads, 0, stream>>>(a);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
    reserve_ranges(a.ray_count, a.ray_first, a.n_rays, a.samples.capacity, nullptr, a.counters, a.scan_temp,
                   a.scan_temp_bytes, stream);
    if (warp) write_training_rays_warp_kernel<<<warp_blocks_for(a.n_rays), kWarpRayThreads, 0, stream>>>(a);
    else write_training_rays_thread_kernel<<<blocks_for(a.n_rays, kRayThreads), kRayThreads, 0, stream>>>(a);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
    park_unused_positions_kernel<<<blocks_for(a.samples.capacity), kThreads, 0, stream>>>(a.samples.positions,
                                                                                        a.samples.capacity, a.counters);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_compact_rays(const NerfCompactArgs& a, cudaStream_t stream) {
    if (a.n_rays == 0) return;
    count_compacted_kernel<<<warp_blocks_for(a.n_rays), kWarpRayThreads, 0, stream>>>(a);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
    reserve_ranges(a.out_count, a.out_first, a.n_rays, a.out.capacity, a.rays_limit, a.counters, a.scan_temp,
                   a.scan_temp_bytes, stream);
    // Row-parallel where the encoding (if copied) goes as float4s.
    const bool quad_rows = a.in_encoded == nullptr ||
                           (a.encoded_dims % 4 == 0 &&
                            ((reinterpret_cast<uintptr_t>(a.in_encoded) | reinterpret_cast<uintptr_t>(a.out_encoded)) &
                             15u) == 0);
    if (a.source_row == nullptr || !quad_rows) {
        copy_compacted_kernel<<<warp_blocks_for(a.n_rays), kWarpRayThreads, 0, stream>>>(a);
        FUSEDNGP_GPU_CHECK(cudaGetLastError());
        return;
    }
    map_compacted_kernel<<<warp_blocks_for(a.n_rays), kWarpRayThreads, 0, stream>>>(a);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
    const uint32_t quads = a.in_encoded ? a.encoded_dims / 4 : 0;
    copy_compacted_rows_kernel<<<blocks_for((size_t)a.out.capacity * std::max(quads, 1u)), kThreads, 0, stream>>>(
        a, quads);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_copy_columns(const float* src, uint32_t src_stride, float* dst, uint32_t dst_stride, uint32_t dst_offset,
                         uint32_t cols, uint32_t n, cudaStream_t stream) {
    if (n == 0) return;
    copy_columns_kernel<<<blocks_for((size_t)n * cols), kThreads, 0, stream>>>(src, src_stride, dst, dst_stride,
                                                                              dst_offset, cols, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_activations(const float* density_out, uint32_t density_stride, const float* colour_raw, float* sigma,
                             float* rgb, uint32_t n, cudaStream_t stream) {
    if (n == 0) return;
    activations_kernel<<<blocks_for(n), kThreads, 0, stream>>>(density_out, density_stride, colour_raw, sigma, rgb, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_sigma(const float* density_out, uint32_t density_stride, float* sigma, uint32_t n,
                       cudaStream_t stream) {
    if (n == 0) return;
    sigma_kernel<<<blocks_for(n), kThreads, 0, stream>>>(density_out, density_stride, sigma, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_ray_loss(const NerfRayLossArgs& args, cudaStream_t stream) {
    if (args.n_rays == 0) return;
    // 48 warps per SM (40 registers a thread: 12 blocks of 128 fit) take the
    // step's ~3-4 x 10^4 rays in turn: a ray is a few dependent global loads,
    // so the kernel is bound by latency; 16 warps per SM took 52 us a lego step
    // (H100), ~18 rays a warp.
    const uint32_t blocks = std::min(warp_blocks_for(args.n_rays), 12u * multiprocessor_count());
    ray_loss_kernel<<<blocks, kWarpRayThreads, 0, stream>>>(args);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_colour_raw_gradient(const float* rgb, const float* d_rgb, float* d_colour_raw, uint32_t n,
                                     cudaStream_t stream) {
    if (n == 0) return;
    colour_raw_gradient_kernel<<<blocks_for(3 * (size_t)n), kThreads, 0, stream>>>(rgb, d_rgb, d_colour_raw, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_density_gradient(const float* d_colour_in, uint32_t colour_in_stride, uint32_t feature_offset,
                                  const float* density_out, const float* d_sigma, float* d_density_out, uint32_t n,
                                  cudaStream_t stream) {
    if (n == 0) return;
    density_gradient_kernel<<<blocks_for((size_t)n * nerf::kDensityOutputs), kThreads, 0, stream>>>(
        d_colour_in, colour_in_stride, feature_offset, density_out, d_sigma, d_density_out, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_start_view(const NerfViewRays& rays, const NerfMarchView& grid, NerfViewRayState* state,
                            cudaStream_t stream) {
    if (rays.n_rays == 0) return;
    start_view_kernel<<<blocks_for(rays.n_rays, kRayThreads), kRayThreads, 0, stream>>>(rays, grid, state);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_count_view_round(const NerfViewRays& rays, const NerfMarchView& grid, const NerfViewRayState* state,
                                  uint32_t max_per_ray, uint32_t* counts, cudaStream_t stream) {
    if (rays.n_rays == 0) return;
    count_view_round_kernel<<<blocks_for(rays.n_rays, kRayThreads), kRayThreads, 0, stream>>>(rays, grid, state,
                                                                                            max_per_ray, counts);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_march_view_round(const NerfViewRays& rays, const NerfMarchView& grid, NerfViewRayState* state,
                                  uint32_t max_per_ray, const uint32_t* offsets, uint32_t ray_begin, uint32_t ray_end,
                                  const NerfSampleBuffers& samples, cudaStream_t stream) {
    if (ray_end <= ray_begin) return;
    march_view_round_kernel<<<blocks_for(ray_end - ray_begin, kRayThreads), kRayThreads, 0, stream>>>(
        rays, grid, state, max_per_ray, offsets, ray_begin, ray_end, samples);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_composite_view_round(const uint32_t* offsets, uint32_t ray_begin, uint32_t ray_end,
                                      const float* sigma, const float* rgb, const float* t, const float* dt,
                                      const NerfMarchView& grid, NerfViewRayState* state, cudaStream_t stream) {
    if (ray_end <= ray_begin) return;
    composite_view_round_kernel<<<blocks_for(ray_end - ray_begin, kRayThreads), kRayThreads, 0, stream>>>(
        offsets, ray_begin, ray_end, sigma, rgb, t, dt, grid, state);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_finish_view(const NerfViewRayState* state, uint32_t n_rays, Vec3 background, float* rgb_out,
                             float* depth_out, float min_depth_opacity, cudaStream_t stream) {
    if (n_rays == 0) return;
    finish_view_kernel<<<blocks_for(n_rays, kRayThreads), kRayThreads, 0, stream>>>(state, n_rays, background,
                                                                                    rgb_out, depth_out,
                                                                                    min_depth_opacity);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_samples(uint64_t key, uint64_t update, int cascade, bool warmup, const uint32_t* occupied,
                              const uint32_t* n_occupied, uint32_t* cells, float* points, cudaStream_t stream) {
    const uint32_t n = warmup ? nerf::kGridCells : nerf::kGridCells / 2;
    grid_samples_kernel<<<blocks_for(n), kThreads, 0, stream>>>(key, update, cascade, warmup, occupied, n_occupied,
                                                                 cells, points, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_scatter_max(const uint32_t* cells, const float* values, uint32_t n, int cascade, float* fresh,
                                  cudaStream_t stream) {
    if (n == 0) return;
    grid_scatter_max_kernel<<<blocks_for(n), kThreads, 0, stream>>>(cells, values, n, cascade, fresh);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_decay(float* density, const float* fresh, float decay, size_t n, cudaStream_t stream) {
    grid_decay_kernel<<<blocks_for(n), kThreads, 0, stream>>>(density, fresh, decay, n);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_threshold(const double* cascade0_sum, float* threshold, cudaStream_t stream) {
    grid_threshold_kernel<<<1, 1, 0, stream>>>(cascade0_sum, threshold);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_bits(const float* density, const float* threshold, size_t n_cells, uint8_t* bits,
                           cudaStream_t stream) {
    grid_bits_kernel<<<blocks_for(n_cells / 8), kThreads, 0, stream>>>(density, threshold, n_cells / 8, bits);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_occlusion_update(const uint8_t* occupied, uint8_t* culled, uint8_t* visited, uint8_t* seen,
                                  uint8_t* recent, uint8_t* training_bits, size_t n_cells, bool apply,
                                  cudaStream_t stream) {
    const size_t n_bytes = n_cells / 8;
    occlusion_update_kernel<<<blocks_for(n_bytes), kThreads, 0, stream>>>(occupied, culled, visited, seen, recent,
                                                                          training_bits, n_bytes, apply);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_skip_mask(const uint8_t* bits, int n_cascades, uint8_t* skip_mask, cudaStream_t stream) {
    const uint32_t n = (uint32_t)n_cascades * nerf::kSkipBlocks;
    skip_mask_kernel<<<blocks_for(n), kThreads, 0, stream>>>(bits, n, skip_mask);
    FUSEDNGP_GPU_CHECK(cudaGetLastError());
}

void launch_nerf_grid_pool(uint8_t* bits, int n_cascades, cudaStream_t stream) {
    // Finest first: each launch reads the bits the previous one finished.
    for (int k = 1; k < n_cascades; ++k) {
        grid_pool_kernel<<<blocks_for(32u * 32u * 32u), kThreads, 0, stream>>>(bits, k);
        FUSEDNGP_GPU_CHECK(cudaGetLastError());
    }
}

void nerf_occupied_cells(const uint8_t* bits, int cascade, uint32_t* out, uint32_t* n_out, void* temp,
                         size_t& temp_bytes, cudaStream_t stream) {
    thrust::counting_iterator<uint32_t> cells(0);
    const CellOccupied pred{bits, (uint32_t)cascade * nerf::kGridCells};
    FUSEDNGP_GPU_CHECK(cub::DeviceSelect::If(temp, temp_bytes, cells, out, n_out, (int)nerf::kGridCells, pred, stream));
}

void nerf_sum(const float* values, size_t n, double* sum, void* temp, size_t& temp_bytes, cudaStream_t stream) {
    const thrust::transform_iterator<ToDouble, const float*> in(values, ToDouble{});
    FUSEDNGP_GPU_CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, sum, (int)n, stream));
}

void nerf_exclusive_sum(const uint32_t* counts, uint32_t* offsets, uint32_t n, void* temp, size_t& temp_bytes,
                        cudaStream_t stream) {
    FUSEDNGP_GPU_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, offsets, (int)n, stream));
}

} // namespace fusedngp::gpu
