// The backend registry. It lives in fusedngp_engine, not fusedngp_core, so the
// core never depends on CUDA: with CUDA this library also holds CudaBackend.
#include "backends/backend.h"
#include "backends/cpu_backend.h"
#include "core/errors.h"
#include "engine/engine_info.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#endif

namespace fusedngp {

#ifdef FUSEDNGP_HAVE_CUDA
// FUSEDNGP_LOSS_SCALE=S[:G] sets the CUDA backend's initial loss scale S (and
// growth interval G, steps): a knob for precision experiments, not a config
// field, since tiny-cuda-nn's schema has none. Bad values are an error.
LossScaleSettings loss_scale_settings_from_environment() {
    LossScaleSettings s;
    const char* env = std::getenv("FUSEDNGP_LOSS_SCALE");
    if (!env || !*env) return s;
    char* end = nullptr;
    const double scale = std::strtod(env, &end);
    bool ok = end != env && scale >= 1.0 && scale <= 65536.0;
    if (ok && *end == ':') {
        const char* growth_text = end + 1;
        const unsigned long growth = std::strtoul(growth_text, &end, 10);
        ok = end != growth_text && growth > 0 && growth <= UINT32_MAX;
        s.growth_interval = (uint32_t)growth;
    }
    if (!ok || *end != 0) {
        throw InputError(std::string("FUSEDNGP_LOSS_SCALE=\"") + env +
                         "\": expected a loss scale in [1, 65536], optionally followed by :growth_interval_steps");
    }
    s.initial = (float)scale;
    s.max_scale = std::max(s.max_scale, s.initial);
    s.min_scale = std::min(s.min_scale, s.initial);
    return s;
}
#endif

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
