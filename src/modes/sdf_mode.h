// SDF mode: learn a mesh's signed distance field, (x, y, z) -> distance,
// negative inside, in the unit cube the mesh is normalised into.
//
// Data flow: load_sdf_scene reads and checks the mesh and maps it into the
// unit cube (UnitCubeTransform, kept in snapshots so exported meshes come
// back in the input's coordinates). SdfTrainingData draws instant-ngp's
// sample mix (geometry/sdf_sampling.h) with ground-truth distances from the
// mesh's BVH (geometry/signed_distance.h); the CUDA backend draws the same
// mix on the device. Metrics: geometry/sdf_metrics.h. See docs/SDF.md.
#pragma once

#include "backends/training_data.h"
#include "core/json_fields.h"
#include "geometry/mesh_checks.h"
#include "geometry/sdf_field.h"
#include "geometry/sdf_metrics.h"
#include "geometry/sdf_sampling.h"
#include "geometry/signed_distance.h"
#include "geometry/surface_sampler.h"
#include "geometry/triangle_mesh.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// The mesh's largest extent in the unit cube. Below 1 (instant-ngp uses 1)
// so the surface never touches the cube's faces: the field is learned on
// both sides of it everywhere, marching cubes over the cube closes the mesh,
// and sphere tracing sees all of it. IoU does not depend on the margin.
constexpr float kSdfUnitCubeFill = 0.9f;

struct SdfScene {
    std::string path;
    TriangleMesh mesh;             // in unit-cube coordinates, degenerate triangles removed
    UnitCubeTransform transform;   // input coordinates -> unit cube
    MeshReport report;             // of the input mesh
    size_t removed_triangles = 0;  // degenerate ones dropped at load
};

// Loads, checks and normalises a mesh (.obj .ply .stl .off). Throws
// InputError naming the file for unreadable or unusable meshes; appends one
// line per recoverable problem (holes, dropped triangles) to `warnings`.
SdfScene load_sdf_scene(const std::string& path, std::vector<std::string>* warnings = nullptr);

class SdfTrainingData : public TrainingData {
public:
    // Throws InputError when sampling.target_sign is "pseudo_normal" and the
    // mesh is not closed and consistently oriented.
    SdfTrainingData(SdfScene scene, const SdfSamplingSettings& sampling, uint32_t sign_rays = 7);
    uint32_t n_input_dims() const override { return 3; }
    uint32_t n_output_dims() const override { return 1; }
    // A batch of the sample mix with ground-truth distances (host). Uses
    // the rng for the batch's seed, so it is deterministic in its state.
    void sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const override;

    const SdfScene& scene() const { return scene_; }
    const GroundTruthSdf& truth() const { return *truth_; }
    const SurfaceSampler& surface() const { return *surface_; }
    const SdfSamplingSettings& sampling() const { return sampling_; }
    // The sign the training targets use: sampling.target_sign resolved
    // against the mesh ("auto" is PseudoNormal where the mesh has them).
    SignMethod target_sign() const { return target_sign_; }

private:
    SdfScene scene_;
    SdfSamplingSettings sampling_;
    std::unique_ptr<GroundTruthSdf> truth_;
    std::unique_ptr<SurfaceSampler> surface_;
    SignMethod target_sign_ = SignMethod::RayVote;
};

// "ray_vote" or "pseudo_normal", for summaries and logs.
const char* sign_method_name(SignMethod sign);

// The sampling settings from a config's "sampling" section (defaults when absent).
SdfSamplingSettings sdf_sampling_from_config(const json& config);

// Chamfer distance and normal consistency between the input mesh and an
// extracted one (both in unit-cube coordinates), with the BVHs of both.
ChamferResult mesh_chamfer(const TriangleMesh& input, const GroundTruthSdf& input_truth, const TriangleMesh& extracted,
                           const GroundTruthSdf& extracted_truth, uint32_t n_samples, uint64_t seed);

// What snapshots and weight files record about the scene: source, triangle
// count, the unit-cube transform and the input's bounds.
json sdf_mode_info(const SdfScene& scene);
// The transform back from sdf_mode_info's JSON. Throws InputError naming `source`.
UnitCubeTransform unit_cube_transform_from_info(const json& info, const std::string& source);

} // namespace fusedngp
