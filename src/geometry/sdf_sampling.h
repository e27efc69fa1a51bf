// The SDF mode's training batches: where the points go (uniform in the unit
// cube, on the mesh's surface, near it) and their ground-truth targets.
//
// Defaults are instant-ngp's (testbed_sdf.cu, generate_training_samples_sdf):
// 1/8 of the batch uniform, 4/8 exactly on the surface, 3/8 on the surface
// moved per axis by noise of standard deviation |(0.5, 0.5, 0.5)| / 1024 =
// sqrt(3)/2048 ~ 8.46e-4 of the unit cube. instant-ngp draws that noise
// from a logistic distribution and its uniform points from the mesh's box;
// we draw Gaussians (Box-Muller) and use the whole unit cube, where the
// renderer and marching cubes look. A second, larger offset scale is
// available (large_offset_fraction, off by default).
//
// Points of step `step` are a pure function of (seed, step, settings, mesh):
// geometry/sdf_sampling_math.h. gpu::DeviceSdfSampler draws the same points.
#pragma once

#include "core/common.h"
#include "core/json_fields.h"
#include "geometry/sdf_field.h"
#include "geometry/sdf_sampling_math.h"
#include "geometry/surface_sampler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

struct SdfSamplingSettings {
    float uniform_fraction = 0.125f;       // of the batch: uniform in the unit cube
    float surface_fraction = 0.5f;         // of the batch: exactly on the surface
    float large_offset_fraction = 0.f;     // of the batch: surface + N(0, surface_offset_large^2) per axis
    // The rest of the batch, 1 - the three above: surface + N(0, surface_offset_small^2) per axis.
    float surface_offset_small = 0.8660254f / 1024.f;  // unit-cube lengths
    float surface_offset_large = 1.f / 128.f;
    // How the targets' signs are decided: "ray_vote" (the metrics' ground
    // truth: survives holes and overlapping shells), "pseudo_normal" (closed,
    // consistently oriented meshes: the closest feature's pseudo-normal,
    // checked by one ray, the vote where they disagree; 2 BVH traversals a
    // point instead of 8: SignMethod in geometry/bvh_queries.h) or "auto"
    // (pseudo_normal where the mesh is closed and consistently oriented).
    std::string target_sign = "auto";

    float small_offset_fraction() const { return 1.f - uniform_fraction - surface_fraction - large_offset_fraction; }
    // Whether the batch has points on or near the surface (needs a mesh).
    bool uses_surface() const { return uniform_fraction < 1.f; }

    // Throws ConfigError naming `path`.field: fractions outside [0, 1] or
    // summing past 1, negative or non-finite offsets.
    void validate(const std::string& path = "sampling") const;
    // Missing keys keep their defaults; a key of the wrong type or value
    // throws ConfigError with its path ("sampling.uniform_fraction").
    static SdfSamplingSettings from_json(const json& j, const std::string& path = "sampling");
    json to_json() const;
    // The keys from_json reads (for the config's unused-field warnings).
    static const std::vector<std::string>& json_keys();
};

// Sample counts of a batch: the boundaries are the cumulative fractions
// times `batch`, rounded to nearest, so the counts always add up to `batch`.
// Validates the settings (ConfigError).
SdfSampleLayout sdf_sample_layout(const SdfSamplingSettings& settings, uint32_t batch);

// points becomes batch x 3 (unit cube coordinates), in the layout's order
// [uniform | surface | small offset | large offset]. Throws InputError when
// the settings ask for surface points and `surface` is empty.
void generate_sdf_positions(const SurfaceSampler& surface, const SdfSamplingSettings& settings, uint64_t seed,
                            uint64_t step, uint32_t batch, Matrix<float>& points);

// generate_sdf_positions, then targets (batch x 1) = truth(points), except
// for the points exactly on the surface, whose target is 0 without asking
// the truth (half the batch by default: the ground truth is most of a step).
void generate_sdf_batch(const SurfaceSampler& surface, const SdfSamplingSettings& settings, uint64_t seed,
                        uint64_t step, uint32_t batch, const SdfBatchFn& truth, Matrix<float>& points,
                        Matrix<float>& targets);

} // namespace fusedngp
