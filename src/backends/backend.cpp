#include "backends/backend.h"

#include "backends/cpu_backend.h"
#include "core/errors.h"

namespace fusedngp {

std::vector<std::string> available_backends() {
    // The CUDA backend registers itself here once it exists (GPU engine issue).
    return {"cpu"};
}

std::unique_ptr<Backend> create_backend(const std::string& name, const json& config,
                                        const TrainingData& data, uint64_t seed) {
    if (equals_ignore_case(name, "cpu")) return std::make_unique<CpuBackend>(config, data, seed);
    if (equals_ignore_case(name, "cuda")) {
        throw InputError("the cuda backend is not available in this build (no CUDA training engine yet); use --backend cpu");
    }
    throw ConfigError("backend", "unknown backend \"" + name + "\"; allowed: cpu, cuda");
}

} // namespace fusedngp
