#include "engine/nerf_training_factory.h"

#include "core/errors.h"
#include "engine/engine_info.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#include "engine/nerf_cuda_trainer.h"
#endif

namespace fusedngp {

std::unique_ptr<nerf::NerfTraining> create_nerf_training(const std::string& backend, const NerfDataset& dataset,
                                                         const json& config,
                                                         const nerf::NerfTrainerSettings& settings) {
    if (equals_ignore_case(backend, "cpu")) return std::make_unique<nerf::CpuNerfTraining>(dataset, config, settings);
    if (equals_ignore_case(backend, "cuda")) {
#ifdef FUSEDNGP_HAVE_CUDA
        if (!cuda_device_available())
            throw InputError("--backend cuda: " + cuda_device_description() + " on this machine; use --backend cpu");
        return std::make_unique<NerfCudaTrainer>(dataset, config, settings);
#else
        throw InputError("--backend cuda: this build has no CUDA support (built without nvcc)");
#endif
    }
    throw ConfigError("backend", "unknown backend \"" + backend + "\" (cpu or cuda)");
}

} // namespace fusedngp
