#include "modes/sdf_mode.h"

#include "core/errors.h"
#include "geometry/mesh_io.h"
#include "geometry/vec3_json.h"

#include <cmath>

namespace fusedngp {

SdfScene load_sdf_scene(const std::string& path, std::vector<std::string>* warnings) {
    SdfScene scene;
    scene.path = path;
    scene.mesh = load_mesh(path);
    scene.removed_triangles = remove_degenerate_triangles(scene.mesh);
    if (scene.mesh.triangles.empty()) {
        throw InputError(path + ": every triangle is degenerate (zero area or repeated vertices): nothing to learn");
    }
    scene.report = analyse_mesh(scene.mesh);
    if (warnings && scene.removed_triangles > 0) {
        warnings->push_back(path + ": dropped " + std::to_string(scene.removed_triangles) +
                            " degenerate triangle(s) (zero area or repeated vertices)");
    }
    if (warnings && !scene.report.watertight()) {
        warnings->push_back(path + ": the mesh is not watertight (" + std::to_string(scene.report.boundary_edges) +
                            " boundary edges, " + std::to_string(scene.report.non_manifold_edges) +
                            " non-manifold edges); training anyway, the inside is decided by a vote of rays");
    }
    scene.transform = fit_unit_cube(scene.report.bounds, kSdfUnitCubeFill);
    apply_transform(scene.mesh, scene.transform, true);
    return scene;
}

SdfTrainingData::SdfTrainingData(SdfScene scene, const SdfSamplingSettings& sampling, uint32_t sign_rays)
    : scene_(std::move(scene)), sampling_(sampling),
      truth_(std::make_unique<GroundTruthSdf>(
          scene_.mesh, sign_rays, sampling_.target_sign == "ray_vote" ? PseudoNormals::Skip : PseudoNormals::Build)),
      surface_(std::make_unique<SurfaceSampler>(scene_.mesh)) {
    sampling_.validate();
    if (sampling_.target_sign == "pseudo_normal" && !truth_->has_pseudo_normals()) {
        throw InputError(scene_.path + ": sampling.target_sign \"pseudo_normal\" needs a closed, consistently oriented mesh (" +
                         truth_->no_pseudo_normals_reason() + "); use \"ray_vote\" or \"auto\"");
    }
    if (sampling_.target_sign != "ray_vote" && truth_->has_pseudo_normals()) target_sign_ = SignMethod::PseudoNormal;
}

void SdfTrainingData::sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const {
    // One draw of the generator per batch seeds the counter-based sampler,
    // so the batch depends on the rng's state alone (resume is exact).
    const uint64_t batch_seed = rng.next_u64();
    generate_sdf_batch(*surface_, sampling_, batch_seed, 0, batch, truth_->field(target_sign_), inputs, targets);
}

ChamferResult mesh_chamfer(const TriangleMesh& input, const GroundTruthSdf& input_truth, const TriangleMesh& extracted,
                           const GroundTruthSdf& extracted_truth, uint32_t n_samples, uint64_t seed) {
    auto closest_on = [](const GroundTruthSdf& truth) -> ClosestFn {
        return [&truth](const std::vector<Vec3>& points, std::vector<float>& distances, std::vector<Vec3>& normals) {
            truth.closest(points, distances, normals);
        };
    };
    return chamfer_distance(input, closest_on(input_truth), extracted, closest_on(extracted_truth), n_samples, seed);
}

const char* sign_method_name(SignMethod sign) { return sign == SignMethod::PseudoNormal ? "pseudo_normal" : "ray_vote"; }

SdfSamplingSettings sdf_sampling_from_config(const json& config) {
    auto it = config.find("sampling");
    if (it == config.end()) return SdfSamplingSettings{};
    return SdfSamplingSettings::from_json(*it);
}

namespace {

Vec3 vec3_from(const json& j, const char* field, const std::string& source) {
    if (!j.is_array() || j.size() != 3 || !j[0].is_number() || !j[1].is_number() || !j[2].is_number()) {
        throw InputError(source + ": SDF scene description: \"" + std::string(field) + "\" must be 3 numbers");
    }
    return Vec3{j[0].get<float>(), j[1].get<float>(), j[2].get<float>()};
}

} // namespace

json sdf_mode_info(const SdfScene& scene) {
    return json{{"source", scene.path},
                {"triangles", scene.mesh.triangles.size()},
                {"vertices", scene.mesh.vertices.size()},
                {"watertight", scene.report.watertight()},
                {"bounds_lo", vec3_json(scene.report.bounds.lo)},
                {"bounds_hi", vec3_json(scene.report.bounds.hi)},
                // unit = (input - center) * scale + 0.5
                {"unit_cube_center", vec3_json(scene.transform.center)},
                {"unit_cube_scale", scene.transform.scale}};
}

UnitCubeTransform unit_cube_transform_from_info(const json& info, const std::string& source) {
    if (!info.is_object() || !info.contains("unit_cube_center") || !info.contains("unit_cube_scale")) {
        throw InputError(source + ": no SDF scene description (unit_cube_center, unit_cube_scale) in the metadata");
    }
    UnitCubeTransform t;
    t.center = vec3_from(info["unit_cube_center"], "unit_cube_center", source);
    const json& s = info["unit_cube_scale"];
    if (!s.is_number() || !(s.get<double>() > 0) || !std::isfinite(s.get<double>())) {
        throw InputError(source + ": SDF scene description: \"unit_cube_scale\" must be a positive number");
    }
    t.scale = s.get<float>();
    return t;
}

} // namespace fusedngp
