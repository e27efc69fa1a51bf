// Composite encoding: splits the input columns into consecutive groups, runs
// one nested encoding per group, and concatenates their outputs (and their
// parameter blocks) in order.
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>
#include <vector>

namespace fusedngp {

template <typename T>
class CompositeEncoding : public Encoding<T> {
public:
    // Nested encoding i reads the n_input_dims() columns after those of
    // encodings 0..i-1.
    explicit CompositeEncoding(std::vector<std::unique_ptr<Encoding<T>>> nested);

    std::string otype() const override { return "Composite"; }
    uint32_t n_input_dims() const override { return n_input_dims_; }
    uint32_t n_output_dims() const override { return n_output_dims_; }

    size_t n_params() const override { return n_params_; }
    // Nested layouts, names prefixed "nested<i>.", offsets shifted.
    std::vector<ParamTensor> param_layout() const override;
    // Nested encoding i is initialised with derive_seed(seed, i).
    void init_params(T* params, uint64_t seed) const override;

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

    size_t n_nested() const { return parts_.size(); }
    const Encoding<T>& nested(size_t i) const { return *parts_.at(i).encoding; }

private:
    struct Part {
        std::unique_ptr<Encoding<T>> encoding;
        uint32_t input_offset = 0;   // first input column
        uint32_t output_offset = 0;  // first output column
        size_t param_offset = 0;     // start of its parameter block
    };
    std::vector<Part> parts_;
    uint32_t n_input_dims_ = 0;
    uint32_t n_output_dims_ = 0;
    size_t n_params_ = 0;
};

// Field: nested, a non-empty array of encoding configs, each with
// n_dims_to_encode; at most one entry may omit it and take the remaining dims.
// The dims must add up to n_input_dims exactly.
template <typename T>
std::unique_ptr<Encoding<T>> create_composite_encoding(uint32_t n_input_dims, const json& config,
                                                       const std::string& path);

} // namespace fusedngp
