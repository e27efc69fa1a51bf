#include "encodings/composite.h"

#include "core/rng.h"
#include "encodings/encoding_checks.h"
#include "encodings/factory.h"

namespace fusedngp {

template <typename T>
CompositeEncoding<T>::CompositeEncoding(std::vector<std::unique_ptr<Encoding<T>>> nested) {
    for (auto& encoding : nested) {
        Part part;
        part.input_offset = n_input_dims_;
        part.output_offset = n_output_dims_;
        part.param_offset = n_params_;
        n_input_dims_ += encoding->n_input_dims();
        n_output_dims_ += encoding->n_output_dims();
        n_params_ += encoding->n_params();
        part.encoding = std::move(encoding);
        parts_.push_back(std::move(part));
    }
}

template <typename T>
std::vector<ParamTensor> CompositeEncoding<T>::param_layout() const {
    std::vector<ParamTensor> layout;
    for (size_t i = 0; i < parts_.size(); ++i) {
        for (ParamTensor t : parts_[i].encoding->param_layout()) {
            t.name = "nested" + std::to_string(i) + "." + t.name;
            t.offset += parts_[i].param_offset;
            layout.push_back(t);
        }
    }
    return layout;
}

template <typename T>
void CompositeEncoding<T>::init_params(T* params, uint64_t seed) const {
    for (size_t i = 0; i < parts_.size(); ++i) {
        parts_[i].encoding->init_params(params + parts_[i].param_offset, derive_seed(seed, i));
    }
}

template <typename T>
void CompositeEncoding<T>::forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_input_dims_, "Composite");
    out.resize(in.rows(), n_output_dims_);
    Matrix<T> part_in, part_out;
    for (const Part& p : parts_) {
        const Encoding<T>& e = *p.encoding;
        part_in = in.middleCols(p.input_offset, e.n_input_dims());
        e.forward(params ? params + p.param_offset : nullptr, part_in, part_out);
        out.middleCols(p.output_offset, e.n_output_dims()) = part_out;
    }
}

template <typename T>
void CompositeEncoding<T>::backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                                    Matrix<T>* din) const {
    require_input_width(in, n_input_dims_, "Composite");
    require_same_shape(in, dout, n_output_dims_, "Composite");
    if (din) din->resize(in.rows(), n_input_dims_);
    Matrix<T> part_in, part_dout, part_din;
    for (const Part& p : parts_) {
        const Encoding<T>& e = *p.encoding;
        part_in = in.middleCols(p.input_offset, e.n_input_dims());
        part_dout = dout.middleCols(p.output_offset, e.n_output_dims());
        e.backward(params ? params + p.param_offset : nullptr, part_in, part_dout,
                   dparams ? dparams + p.param_offset : nullptr, din ? &part_din : nullptr);
        if (din) din->middleCols(p.input_offset, e.n_input_dims()) = part_din;
    }
}

template <typename T>
std::string CompositeEncoding<T>::describe() const {
    std::string text = "Composite(";
    for (size_t i = 0; i < parts_.size(); ++i) text += (i ? " + " : "") + parts_[i].encoding->describe();
    return text + ")";
}

namespace {

std::string nested_path(const std::string& path, size_t i) {
    return join_path(path, "nested") + "[" + std::to_string(i) + "]";
}

// Dims per nested entry, with the one entry that omits n_dims_to_encode
// taking the rest. Errors name `<path>.nested[i].n_dims_to_encode`.
std::vector<uint32_t> split_input_dims(uint32_t n_input_dims, const json& nested, const std::string& path) {
    std::vector<uint32_t> dims(nested.size(), 0);
    int rest_entry = -1;
    uint64_t explicit_sum = 0;
    for (size_t i = 0; i < nested.size(); ++i) {
        const std::string entry_path = nested_path(path, i);
        require_object(nested[i], entry_path);
        if (!nested[i].contains("n_dims_to_encode")) {
            if (rest_entry >= 0) {
                throw ConfigError(join_path(entry_path, "n_dims_to_encode"),
                                  "missing; only one nested encoding may omit it (" +
                                      nested_path(path, (size_t)rest_entry) + " already takes the remaining dims)");
            }
            rest_entry = (int)i;
            continue;
        }
        dims[i] = get_size(nested[i], entry_path, "n_dims_to_encode", 1);
        explicit_sum += dims[i];
        if (explicit_sum > n_input_dims) {
            throw ConfigError(join_path(entry_path, "n_dims_to_encode"),
                              "is " + std::to_string(dims[i]) + ": nested encodings up to here take " +
                                  std::to_string(explicit_sum) + " dims, but the input has only " +
                                  std::to_string(n_input_dims));
        }
    }
    if (rest_entry >= 0) {
        if (explicit_sum == n_input_dims) {
            throw ConfigError(join_path(nested_path(path, (size_t)rest_entry), "n_dims_to_encode"),
                              "missing, and no input dims are left for this entry (the others take all " +
                                  std::to_string(n_input_dims) + ")");
        }
        dims[(size_t)rest_entry] = n_input_dims - (uint32_t)explicit_sum;
    } else if (explicit_sum != n_input_dims) {
        throw ConfigError(join_path(nested_path(path, nested.size() - 1), "n_dims_to_encode"),
                          "nested encodings take " + std::to_string(explicit_sum) + " dims in total, but the input has " +
                              std::to_string(n_input_dims) + "; the sum must match exactly");
    }
    return dims;
}

} // namespace

template <typename T>
std::unique_ptr<Encoding<T>> create_composite_encoding(uint32_t n_input_dims, const json& config,
                                                       const std::string& path) {
    auto it = config.find("nested");
    if (it == config.end() || !it->is_array() || it->empty()) {
        throw ConfigError(join_path(path, "nested"), "must be a non-empty array of encoding configs");
    }
    const std::vector<uint32_t> dims = split_input_dims(n_input_dims, *it, path);
    std::vector<std::unique_ptr<Encoding<T>>> nested;
    for (size_t i = 0; i < dims.size(); ++i) {
        nested.push_back(create_encoding<T>(dims[i], (*it)[i], nested_path(path, i)));
    }
    return std::make_unique<CompositeEncoding<T>>(std::move(nested));
}

template class CompositeEncoding<float>;
template class CompositeEncoding<double>;
template std::unique_ptr<Encoding<float>> create_composite_encoding<float>(uint32_t, const json&, const std::string&);
template std::unique_ptr<Encoding<double>> create_composite_encoding<double>(uint32_t, const json&,
                                                                             const std::string&);

} // namespace fusedngp
