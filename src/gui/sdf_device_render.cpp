#include "gui/sdf_device_render.h"

#if defined(FUSEDNGP_HAVE_CUDA) && __has_include("gpu/render/sdf_render_device.h")
#define FUSEDNGP_GUI_DEVICE_SDF_RENDER 1
#include "engine/cuda_backend.h"
#include "gpu/render/sdf_render_device.h"

#include <cuda_runtime_api.h>
#endif

namespace fusedngp {

#ifdef FUSEDNGP_GUI_DEVICE_SDF_RENDER

bool render_sdf_on_device(Backend& backend, const Camera& camera, SdfRenderMode mode,
                          const SphereTraceSettings& settings, float* d_rgba) {
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) return false;
    // One renderer keeps its ray buffers between frames (they grow to the
    // largest frame seen); the UI thread is the only caller. Never freed: at
    // exit the CUDA runtime may already be gone.
    static auto* renderer = new gpu::DeviceSdfRenderer();
    // The inference parameters (EMA average) stay in place for the whole
    // frame's many batched calls; the bracket closes even when a call throws.
    struct InferenceBracket {
        CudaBackend& backend;
        explicit InferenceBracket(CudaBackend& b) : backend(b) { backend.begin_device_inference(); }
        ~InferenceBracket() { backend.end_device_inference(); }
    } bracket(*cuda);
    gpu::DeviceSdfFn field = [cuda](const float* d_points, uint32_t n, float* d_values, cudaStream_t stream) {
        cuda->inference_device(d_points, n, d_values, stream);
    };
    renderer->render_rgba(camera, field, mode, settings, d_rgba, cuda->stream());
    cudaStreamSynchronize(cuda->stream());  // GL reads the PBO once it is unmapped
    return true;
}

#else

bool render_sdf_on_device(Backend&, const Camera&, SdfRenderMode, const SphereTraceSettings&, float*) { return false; }

#endif

} // namespace fusedngp
