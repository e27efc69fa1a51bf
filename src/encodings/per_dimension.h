// Loop scaffolding for encodings that turn each input coordinate into K
// features on its own (Frequency, TriangleWave, OneBlob):
//   out[d*K .. d*K+K)  = encode(x_d)
//   dL/dx_d            = backprop(x_d, dL/dout[d*K .. d*K+K))
// Rows are independent, so the batch loop is parallel without changing results.
#pragma once

#include "core/common.h"

namespace fusedngp {

// `encode(T x, T* y)` writes the K features of one coordinate.
template <typename T, typename EncodeFn>
void encode_each_dimension(const Matrix<T>& in, uint32_t n_dims, uint32_t k, Matrix<T>& out, EncodeFn encode) {
    const int64_t batch = in.rows();
    const int64_t width = (int64_t)n_dims * k;
    out.resize(batch, width);
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* x = in.data() + i * n_dims;
        T* y = out.data() + i * width;
        for (uint32_t d = 0; d < n_dims; ++d) encode(x[d], y + (int64_t)d * k);
    }
}

// `backprop(T x, const T* g)` returns dL/dx from the K output gradients g.
template <typename T, typename BackpropFn>
void backprop_each_dimension(const Matrix<T>& in, const Matrix<T>& dout, uint32_t n_dims, uint32_t k,
                             Matrix<T>& din, BackpropFn backprop) {
    const int64_t batch = in.rows();
    const int64_t width = (int64_t)n_dims * k;
    din.resize(batch, n_dims);
#pragma omp parallel for schedule(static) if (batch >= 256)
    for (int64_t i = 0; i < batch; ++i) {
        const T* x = in.data() + i * n_dims;
        const T* g = dout.data() + i * width;
        T* gx = din.data() + i * n_dims;
        for (uint32_t d = 0; d < n_dims; ++d) gx[d] = backprop(x[d], g + (int64_t)d * k);
    }
}

} // namespace fusedngp
