#include "losses/factory.h"

#include "losses/basic_losses.h"
#include "losses/cross_entropy.h"
#include "losses/relative_losses.h"

namespace fusedngp {

namespace {

const std::vector<std::string>& loss_otypes() {
    static const std::vector<std::string> otypes = {"L2",   "L1",    "RelativeL2", "RelativeL1", "RelativeL2Luminance",
                                                    "MAPE", "SMAPE", "Huber",      "CrossEntropy"};
    return otypes;
}

} // namespace

template <typename T>
std::unique_ptr<Loss<T>> create_loss(const json& config, const std::string& path) {
    const std::string otype = match_choice(get_otype(config, path), loss_otypes(), join_path(path, "otype"));
    if (otype == "L2") return std::make_unique<L2Loss<T>>();
    if (otype == "L1") return std::make_unique<L1Loss<T>>();
    if (otype == "RelativeL2") return std::make_unique<RelativeL2Loss<T>>();
    if (otype == "RelativeL1") return std::make_unique<RelativeL1Loss<T>>();
    if (otype == "RelativeL2Luminance") return std::make_unique<RelativeL2LuminanceLoss<T>>();
    if (otype == "MAPE") return std::make_unique<MapeLoss<T>>();
    if (otype == "SMAPE") return std::make_unique<SmapeLoss<T>>();
    if (otype == "CrossEntropy") return std::make_unique<CrossEntropyLoss<T>>();
    // Huber: the only loss with a field. Not in tiny-cuda-nn; PyTorch's name and default.
    const double delta = get_number(config, path, "huber_delta", HuberLoss<T>::kDefaultDelta);
    if (!(delta > 0)) throw ConfigError(join_path(path, "huber_delta"), "must be > 0, got " + std::to_string(delta));
    return std::make_unique<HuberLoss<T>>((T)delta);
}

template std::unique_ptr<Loss<float>> create_loss<float>(const json&, const std::string&);
template std::unique_ptr<Loss<double>> create_loss<double>(const json&, const std::string&);

} // namespace fusedngp
