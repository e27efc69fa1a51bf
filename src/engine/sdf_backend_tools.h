// The SDF mode's heavy operations on a trained model, on the GPU when the
// backend is the CUDA one (device renderer, device marching cubes, IoU on
// 2^24 points with the BVH on the device) and on the host otherwise
// (the CPU twins). The CLI and the desktop app call these; neither needs to
// know which backend runs.
#pragma once

#include "backends/backend.h"
#include "geometry/marching_cubes.h"
#include "geometry/sdf_metrics.h"
#include "modes/sdf_mode.h"
#include "render/sdf_render.h"

#include <memory>
#include <string>

namespace fusedngp {

// The backend's model as a host field (chunked backend inference).
SdfBatchFn host_field(Backend& backend);

// Sphere-traced image of the model (inference parameters).
Image render_sdf_model(Backend& backend, const Camera& camera, SdfRenderMode mode,
                       const SphereTraceSettings& settings = {});

// Marching cubes of the model over the unit cube, in unit-cube coordinates.
TriangleMesh extract_sdf_model_mesh(Backend& backend, const IsosurfaceSettings& settings);

// Quality of the model against the mesh's ground truth (docs/SDF.md, "Metrics").
struct SdfQuality {
    IouResult iou;
    std::string iou_method;
    double mean_abs_error_near_surface = 0;
    uint64_t band_points = 0;
};

// Evaluates a backend's model against its training data's ground truth.
// The points (and the truth at them) are fixed at construction, so repeated
// evaluations during training compare like with like and the truth is
// computed once. On the CUDA backend everything runs on the device.
class SdfEvaluator {
public:
    virtual ~SdfEvaluator() = default;
    virtual SdfQuality evaluate(Backend& backend) = 0;
};

// n_iou_points 0: 2^24 on the GPU, 2^18 on the CPU. `backend` picks the path
// (it must train on `data`; the evaluator keeps a reference to `data`).
std::unique_ptr<SdfEvaluator> make_sdf_evaluator(Backend& backend, const SdfTrainingData& data,
                                                 uint64_t n_iou_points = 0, uint64_t seed = 7);

// A backend that only runs inference (a trained model loaded from a file),
// with the shape-only data it refers to (declared first: destroyed last).
struct InferenceBackend {
    std::unique_ptr<TrainingData> data;
    std::unique_ptr<Backend> backend;
    Backend& operator*() const { return *backend; }
    Backend* operator->() const { return backend.get(); }
};

// "cpu", "cuda" or "" (the best available), with `params` set.
InferenceBackend make_inference_backend(const std::string& name, const json& config, uint32_t n_input_dims,
                                        uint32_t n_output_dims, const std::vector<float>& params);
// The same from a snapshot's whole training state (the inference parameters
// are then the state's EMA average where the optimizer keeps one).
InferenceBackend make_inference_backend(const std::string& name, const json& config, uint32_t n_input_dims,
                                        uint32_t n_output_dims, const TrainingState& state);

} // namespace fusedngp
