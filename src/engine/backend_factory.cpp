// The backend registry. It lives in fusedngp_engine, not fusedngp_core, so the
// core never depends on CUDA: with CUDA this library also holds CudaBackend.
#include "backends/backend.h"
#include "backends/cpu_backend.h"
#include "core/errors.h"
#include "engine/engine_info.h"

#include <cstdint>
#include <string>

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#endif

namespace fusedngp {

std::vector<std::string> available_backends() {
#ifdef FUSEDNGP_HAVE_CUDA
    if (cuda_device_available()) return {"cuda", "cpu"};
#endif
    return {"cpu"};
}

std::unique_ptr<Backend> create_backend(const std::string& name, const json& config, const TrainingData& data,
                                        uint64_t seed) {
    if (equals_ignore_case(name, "cpu")) return std::make_unique<CpuBackend>(config, data, seed);
    if (equals_ignore_case(name, "cuda")) {
#ifdef FUSEDNGP_HAVE_CUDA
        if (!cuda_device_available()) {
            throw InputError("--backend cuda: " + cuda_device_description() + " on this machine; use --backend cpu");
        }
        return std::make_unique<CudaBackend>(config, data, seed, loss_scale_settings_from_environment());
#else
        throw InputError("--backend cuda: this build has no CUDA backend (configured with FUSEDNGP_CUDA=OFF or "
                         "without nvcc); use --backend cpu");
#endif
    }
    throw ConfigError("backend", "unknown backend \"" + name + "\"; allowed: cpu, cuda");
}

EngineInfo engine_info() {
    EngineInfo info;
#ifdef FUSEDNGP_HAVE_CUDA
    info.device = cuda_device_description();
    info.kernels = {
        "FullyFusedMLP: widths 16, 32, 64, 128, 256; 1-16 hidden layers; fp16 tensor cores, fp32 accumulation",
        "CublasMLP (alias CutlassMLP): any width and depth; cuBLASLt fp16 GEMMs, fp32 accumulation; "
        "network.otype Auto times both at the first training batch",
        "encodings: HashGrid/DenseGrid/TiledGrid (fp16 tables, fp32 master), Frequency, TriangleWave, OneBlob, "
        "SphericalHarmonics, Identity, Composite",
        "losses: all CPU losses; optimizers: Adam, SGD, EMA, ExponentialDecay, Composite",
    };
#else
    info.device = "none (CPU-only build)";
#endif
    return info;
}

} // namespace fusedngp
