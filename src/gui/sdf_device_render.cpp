#include "gui/sdf_device_render.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
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

} // namespace

bool render_sdf_on_device(Backend& backend, const Camera& camera, SdfRenderMode mode,
                          const SphereTraceSettings& settings, float* d_rgba, double& render_ms) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) return false;
    cudaStreamSynchronize(cuda->stream());  // the queued steps first: the session's pacing counts them
    const auto start = std::chrono::steady_clock::now();
    // One renderer keeps its ray buffers between frames; the UI thread is the
    // only caller. Never freed: at exit the CUDA runtime may already be gone.
    static auto* renderer = new gpu::DeviceSdfRenderer();
    InferenceBracket bracket(*cuda);
    renderer->render(camera, model_field(*cuda), mode, settings, d_rgba, cuda->stream());
    cudaStreamSynchronize(cuda->stream());  // GL reads the PBO once it is unmapped
    render_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return true;
}

bool extract_isosurface_on_device(Backend& backend, const IsosurfaceSettings& settings, TriangleMesh& mesh) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) return false;
    InferenceBracket bracket(*cuda);
    mesh = gpu::extract_isosurface_device(model_field(*cuda), settings, cuda->stream());
    return true;
}

#else

bool render_sdf_on_device(Backend&, const Camera&, SdfRenderMode, const SphereTraceSettings&, float*, double&) {
    return false;
}
bool extract_isosurface_on_device(Backend&, const IsosurfaceSettings&, TriangleMesh&) { return false; }

#endif

} // namespace fusedngp
