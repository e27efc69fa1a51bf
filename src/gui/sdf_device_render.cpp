#include "gui/sdf_device_render.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#include "gpu/cuda_check.h"
#include "gpu/geometry/marching_cubes_device.h"
#include "gpu/render/sdf_render_device.h"

#include <cuda_runtime_api.h>

#include <chrono>
#endif

namespace fusedngp {

#ifdef FUSEDNGP_HAVE_CUDA

namespace {

// The inference parameters (EMA average) stay in place for a whole frame's
// (or extraction's) many batched calls; the bracket closes even on a throw.
class InferenceBracket {
public:
    explicit InferenceBracket(CudaBackend& backend) : backend_(backend) { backend_.begin_device_inference(); }
    ~InferenceBracket() { backend_.end_device_inference(); }
    InferenceBracket(const InferenceBracket&) = delete;
    InferenceBracket& operator=(const InferenceBracket&) = delete;

private:
    CudaBackend& backend_;
};

gpu::DeviceSdfFn model_field(CudaBackend& cuda) {
    return [&cuda](const float* d_points, uint32_t n, float* d_values, cudaStream_t stream) {
        cuda.inference_device(d_points, n, d_values, stream);
    };
}

// One renderer keeps its ray buffers between frames; the UI thread is the
// only caller. Never freed: at exit the CUDA runtime may already be gone.
gpu::DeviceSdfRenderer& view_renderer() {
    static auto* renderer = new gpu::DeviceSdfRenderer();
    return *renderer;
}

} // namespace

DeviceRenderResult render_sdf_beside_training(Backend& backend, const Camera& camera, SdfRenderMode mode,
                                              const SphereTraceSettings& settings, float* d_rgba, double& render_ms) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) return DeviceRenderResult::Unavailable;
    const auto start = std::chrono::steady_clock::now();
    DisplayCopies::Lease model = cuda->display_lease();
    if (!model) return DeviceRenderResult::NotReady;
    const cudaStream_t stream = cuda->display_stream();
    auto field = [&model](const float* d_points, uint32_t n, float* d_values, cudaStream_t s) {
        model.inference(d_points, n, d_values, s);
    };
    view_renderer().render(camera, field, mode, settings, d_rgba, stream);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));  // GL reads the PBO once it is unmapped
    render_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return DeviceRenderResult::Drawn;
}

bool extract_isosurface_on_device(Backend& backend, const IsosurfaceSettings& settings, TriangleMesh& mesh) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) return false;
    InferenceBracket bracket(*cuda);
    mesh = gpu::extract_isosurface_device(model_field(*cuda), settings, cuda->stream());
    return true;
}

#else

DeviceRenderResult render_sdf_beside_training(Backend&, const Camera&, SdfRenderMode, const SphereTraceSettings&,
                                              float*, double&) {
    return DeviceRenderResult::Unavailable;
}
bool extract_isosurface_on_device(Backend&, const IsosurfaceSettings&, TriangleMesh&) { return false; }

#endif

} // namespace fusedngp
