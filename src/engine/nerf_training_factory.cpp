#include "engine/nerf_training_factory.h"

#include "core/errors.h"
#include "engine/engine_info.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#endif

namespace fusedngp {

std::unique_ptr<nerf::NerfTraining> create_nerf_training(const std::string& backend, const NerfDataset& dataset,
                                                         const json& config,
                                                         const nerf::NerfTrainerSettings& settings) {
    if (equals_ignore_case(backend, "cpu")) return std::make_unique<nerf::CpuNerfTraining>(dataset, config, settings);
    if (equals_ignore_case(backend, "cuda")) {
#ifdef FUSEDNGP_HAVE_CUDA
        if (!cuda_device_available()) throw InputError("--backend cuda: no CUDA device (" + cuda_device_description() + ")");
        throw InputError("--backend cuda: the NeRF mode's CUDA trainer is not built yet; use --backend cpu");
#else
        throw InputError("--backend cuda: this build has no CUDA support (built without nvcc)");
#endif
    }
    throw ConfigError("backend", "unknown backend \"" + backend + "\" (cpu or cuda)");
}

} // namespace fusedngp
