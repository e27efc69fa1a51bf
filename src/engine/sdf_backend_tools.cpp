#include "engine/sdf_backend_tools.h"

#include "backends/shape_only_data.h"
#include "core/errors.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_bvh.h"
#include "gpu/geometry/marching_cubes_device.h"
#include "gpu/geometry/sdf_metrics_device.h"
#include "gpu/geometry/sdf_sampling_device.h"
#include "gpu/render/sdf_render_device.h"
#endif

#include <algorithm>

namespace fusedngp {
namespace {

#ifdef FUSEDNGP_HAVE_CUDA
CudaBackend* as_cuda(Backend& backend) { return dynamic_cast<CudaBackend*>(&backend); }

gpu::DeviceSdfFn device_field(CudaBackend& cuda) {
    return [&cuda](const float* d_points, uint32_t n, float* d_values, cudaStream_t stream) {
        cuda.inference_device(d_points, n, d_values, stream);
    };
}

// Brackets a run of device inference calls with the inference parameters.
struct DeviceInferenceScope {
    explicit DeviceInferenceScope(CudaBackend& c) : cuda(c) { cuda.begin_device_inference(); }
    ~DeviceInferenceScope() { cuda.end_device_inference(); }
    CudaBackend& cuda;
};
#endif

std::string iou_method(uint64_t n_points, const char* where, uint32_t sign_rays) {
    return std::to_string(n_points) + " uniform points in the unit cube (" + where +
           "), inside = value < 0; truth: BVH distance with a " + std::to_string(sign_rays) + "-ray winding vote";
}

// The truth at the evaluation points never changes: a field that remembers
// its answers per call (the metrics call it in the same order every time,
// with the same points; a call with other points is computed afresh).
class RememberingField {
public:
    explicit RememberingField(SdfBatchFn field) : field_(std::move(field)) {}
    void rewind() { next_ = 0; }
    SdfBatchFn fn() {
        return [this](const Matrix<float>& points, Matrix<float>& values) {
            if (next_ < calls_.size() && calls_[next_].first == points) {
                values = calls_[next_++].second;
                return;
            }
            field_(points, values);
            if (next_ < calls_.size()) calls_.resize(next_);
            calls_.emplace_back(points, values);
            ++next_;
        };
    }

private:
    SdfBatchFn field_;
    std::vector<std::pair<Matrix<float>, Matrix<float>>> calls_;
    size_t next_ = 0;
};

// Both evaluators report the same fields.
SdfQuality quality_of(const IouResult& iou, const std::string& iou_method, const BandErrorResult& band) {
    SdfQuality q;
    q.iou = iou;
    q.iou_method = iou_method;
    q.mean_abs_error_near_surface = band.mean_abs_error;
    q.band_points = band.n_points;
    return q;
}

// Host path: the truth at the fixed points is computed once.
class HostSdfEvaluator : public SdfEvaluator {
public:
    HostSdfEvaluator(const SdfTrainingData& data, uint64_t n_points, uint64_t seed)
        : data_(data), truth_(data.truth().field()), n_points_(n_points), seed_(seed),
          method_(iou_method(n_points, "CPU", data.truth().sign_rays())) {}

    SdfQuality evaluate(Backend& backend) override {
        truth_.rewind();
        const IouResult iou = sdf_iou(host_field(backend), truth_.fn(), n_points_, seed_);
        return quality_of(iou, method_, sdf_band_error(data_.surface(), host_field(backend), truth_.fn(), kBandPoints, seed_));
    }

private:
    static constexpr uint64_t kBandPoints = 1 << 16;
    const SdfTrainingData& data_;
    RememberingField truth_;
    uint64_t n_points_, seed_;
    std::string method_;
};

#ifdef FUSEDNGP_HAVE_CUDA
// Device path: IoU on 2^24 points and the band error, the truth from the BVH on the device.
class DeviceSdfEvaluator : public SdfEvaluator {
public:
    DeviceSdfEvaluator(const SdfTrainingData& data, uint64_t n_points, uint64_t seed)
        : data_(data), bvh_(data.truth().bvh()), surface_(data.surface()), n_points_(n_points), seed_(seed),
          method_(iou_method(n_points, "GPU", data.truth().sign_rays())) {}

    SdfQuality evaluate(Backend& backend) override {
        CudaBackend& cuda = *as_cuda(backend);
        DeviceInferenceScope scope(cuda);
        const gpu::DeviceSdfFn truth = bvh_.field(data_.truth().sign_rays());
        const IouResult iou = gpu::device_sdf_iou(device_field(cuda), truth, n_points_, seed_, cuda.stream());
        return quality_of(iou, method_,
                          gpu::device_sdf_band_error(surface_, device_field(cuda), truth, kBandPoints, seed_, cuda.stream()));
    }

private:
    static constexpr uint64_t kBandPoints = 1 << 20;
    const SdfTrainingData& data_;
    gpu::DeviceBvh bvh_;
    gpu::DeviceSdfSampler surface_;
    uint64_t n_points_, seed_;
    std::string method_;
};
#endif

} // namespace

SdfBatchFn host_field(Backend& backend) {
    return [&backend](const Matrix<float>& points, Matrix<float>& values) { backend.inference(points, values); };
}

Image render_sdf_model(Backend& backend, const Camera& camera, SdfRenderMode mode, const SphereTraceSettings& settings) {
#ifdef FUSEDNGP_HAVE_CUDA
    if (CudaBackend* cuda = as_cuda(backend)) {
        gpu::DeviceSdfRenderer renderer;
        DeviceInferenceScope scope(*cuda);
        return renderer.render_to_image(camera, device_field(*cuda), mode, settings, cuda->stream());
    }
#endif
    return render_sdf(camera, host_field(backend), mode, settings);
}

TriangleMesh extract_sdf_model_mesh(Backend& backend, const IsosurfaceSettings& settings) {
#ifdef FUSEDNGP_HAVE_CUDA
    if (CudaBackend* cuda = as_cuda(backend)) {
        DeviceInferenceScope scope(*cuda);
        return gpu::extract_isosurface_device(device_field(*cuda), settings, cuda->stream());
    }
#endif
    return extract_isosurface(host_field(backend), settings);
}

std::unique_ptr<SdfEvaluator> make_sdf_evaluator(Backend& backend, const SdfTrainingData& data, uint64_t n_iou_points,
                                                 uint64_t seed) {
#ifdef FUSEDNGP_HAVE_CUDA
    if (as_cuda(backend)) {
        return std::make_unique<DeviceSdfEvaluator>(data, n_iou_points ? n_iou_points : (1ull << 24), seed);
    }
#endif
    (void)backend;
    return std::make_unique<HostSdfEvaluator>(data, n_iou_points ? n_iou_points : (1ull << 18), seed);
}

namespace {

InferenceBackend make_shaped_backend(const std::string& name, const json& config, uint32_t n_input_dims,
                                     uint32_t n_output_dims) {
    InferenceBackend b;
    b.data = std::make_unique<ShapeOnlyData>(n_input_dims, n_output_dims);
    b.backend = create_backend(name.empty() ? available_backends().front() : name, config, *b.data, 0);
    return b;
}

} // namespace

InferenceBackend make_inference_backend(const std::string& name, const json& config, uint32_t n_input_dims,
                                        uint32_t n_output_dims, const std::vector<float>& params) {
    InferenceBackend b = make_shaped_backend(name, config, n_input_dims, n_output_dims);
    b.backend->set_params(params);
    return b;
}

InferenceBackend make_inference_backend(const std::string& name, const json& config, uint32_t n_input_dims,
                                        uint32_t n_output_dims, const TrainingState& state) {
    InferenceBackend b = make_shaped_backend(name, config, n_input_dims, n_output_dims);
    b.backend->load_state(state);
    return b;
}

} // namespace fusedngp
