#include "model/model.h"

#include "core/rng.h"
#include "encodings/factory.h"
#include "networks/factory.h"

#include <algorithm>

namespace fusedngp {

template <typename T>
Model<T>::Model(uint32_t n_input_dims, uint32_t n_output_dims, const json& config, uint64_t seed) {
    require_object(config, "");
    if (!config.contains("encoding")) throw ConfigError("encoding", "missing section");
    if (!config.contains("network")) throw ConfigError("network", "missing section");
    encoding_ = create_encoding<T>(n_input_dims, config.at("encoding"), "encoding");
    network_ = create_network<T>(encoding_->n_output_dims(), n_output_dims, config.at("network"), "network");
    params_.assign(encoding_->n_params() + network_->n_params(), T(0));
    // Separate streams per component: changing the network keeps the encoding's init.
    encoding_->init_params(params_.data(), derive_seed(seed, 1));
    network_->init_params(params_.data() + encoding_->n_params(), derive_seed(seed, 2));
}

template <typename T>
std::vector<ParamGroup> Model<T>::param_groups() const {
    size_t row = 1;
    for (const auto& t : encoding_->param_layout()) row = std::max(row, t.row_size);
    std::vector<ParamGroup> groups;
    groups.push_back({"encoding", 0, encoding_->n_params(), row});
    groups.push_back({"network", encoding_->n_params(), network_->n_params(), 1});
    return groups;
}

template <typename T>
std::vector<NamedTensor> Model<T>::named_tensors() const {
    std::vector<NamedTensor> out;
    for (const auto& t : encoding_->param_layout()) out.push_back({"encoding." + t.name, t.offset, t.shape});
    size_t base = encoding_->n_params();
    for (const auto& t : network_->param_layout()) out.push_back({"network." + t.name, base + t.offset, t.shape});
    return out;
}

template <typename T>
void Model<T>::inference(const Matrix<T>& in, Matrix<T>& out, const T* params) const {
    const T* p = params ? params : params_.data();
    Matrix<T> encoded;
    encoding_->forward(p, in, encoded);
    network_->inference(p + encoding_->n_params(), encoded, out);
}

template <typename T>
void Model<T>::forward(const Matrix<T>& in, Matrix<T>& out) {
    encoding_->forward(params_.data(), in, encoded_);
    network_context_ = network_->forward(params_.data() + encoding_->n_params(), encoded_, out);
}

template <typename T>
void Model<T>::backward(const Matrix<T>& in, const Matrix<T>& dout, std::vector<T>& grads, Matrix<T>* din) {
    grads.assign(params_.size(), T(0));
    size_t ne = encoding_->n_params();
    bool need_encoding_input_grad = ne > 0 || din != nullptr;
    network_->backward(*network_context_, params_.data() + ne, encoded_, dout, grads.data() + ne,
                       need_encoding_input_grad ? &dencoded_ : nullptr);
    if (need_encoding_input_grad) {
        encoding_->backward(params_.data(), in, dencoded_, ne > 0 ? grads.data() : nullptr, din);
    }
}

template class Model<float>;
template class Model<double>;

} // namespace fusedngp
