// Parameter-free encodings: ports of src/encodings/{identity, frequency,
// triangle_wave, one_blob, spherical_harmonics}.cpp (docs/ENCODINGS.md).
// Identity/Frequency/TriangleWave/OneBlob run one thread per (sample, input
// dim), since each input dim owns a contiguous run of outputs;
// SphericalHarmonics runs one thread per sample (its forward writes rows out
// through shared memory).
//
// Compiled with --fmad=false (kernels/components/CMakeLists.txt): like the
// CPU build (ISO C++, no contraction), products are rounded before they are
// added; only the math library functions (sin, cos, erf, exp) differ from
// glibc's, by a few ulp.

#include "component_device.cuh"
#include "launch_simple_encodings.h"

#include <stdexcept>
#include <string>

namespace fusedngp::gpu {

namespace {

// ---- Identity, Frequency, TriangleWave, OneBlob ----------------------------

// Item i of batch * n_dims: sample i / n_dims, input dim i % n_dims.
struct ElementIndex {
    uint32_t sample, dim;
};

__device__ inline bool element_index(const SimpleEncodingArgs& a, uint32_t batch, ElementIndex& e) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t n = (size_t)batch * a.n_dims;
    if (i >= n) return false;
    const RowColumn rc = row_column(i, a.n_dims, n);
    e.sample = (uint32_t)rc.row;
    e.dim = rc.column;
    return true;
}

__global__ void identity_forward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, DeviceRows out, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const float x = in.data[(size_t)e.sample * in.stride + e.dim];
    out.data[(size_t)e.sample * out.stride + e.dim] = x * a.identity_scale + a.identity_offset;
}

__global__ void identity_backward_kernel(SimpleEncodingArgs a, ConstDeviceRows dout, DeviceRows din,
                                         uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    din.data[(size_t)e.sample * din.stride + e.dim] =
        dout.data[(size_t)e.sample * dout.stride + e.dim] * a.identity_scale;
}

__global__ void frequency_forward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, DeviceRows out, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t F = a.n_per_dim;
    const float x = in.data[(size_t)e.sample * in.stride + e.dim];
    float* y = out.data + (size_t)e.sample * out.stride + (size_t)e.dim * 2 * F;
    for (uint32_t f = 0; f < F; ++f) {
        float s, c;
        sincosf(a.angular_freq[f] * x, &s, &c);
        y[2 * f] = s;
        y[2 * f + 1] = c;
    }
}

__global__ void frequency_backward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, ConstDeviceRows dout,
                                          DeviceRows din, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t F = a.n_per_dim;
    const float x = in.data[(size_t)e.sample * in.stride + e.dim];
    const float* g = dout.data + (size_t)e.sample * dout.stride + (size_t)e.dim * 2 * F;
    float sum = 0.f;
    for (uint32_t f = 0; f < F; ++f) {
        float s, c;
        sincosf(a.angular_freq[f] * x, &s, &c);
        sum += a.angular_freq[f] * (g[2 * f] * c - g[2 * f + 1] * s);  // d sin = w cos, d cos = -w sin
    }
    din.data[(size_t)e.sample * din.stride + e.dim] = sum;
}

__device__ inline float fractional_part(float t) { return t - floorf(t); }

__global__ void triangle_wave_forward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, DeviceRows out,
                                             uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t F = a.n_per_dim;
    const float x = in.data[(size_t)e.sample * in.stride + e.dim];
    float* y = out.data + (size_t)e.sample * out.stride + (size_t)e.dim * F;
    for (uint32_t f = 0; f < F; ++f) y[f] = 4.f * fabsf(fractional_part(ldexpf(x, (int)f)) - 0.5f) - 1.f;
}

__global__ void triangle_wave_backward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, ConstDeviceRows dout,
                                              DeviceRows din, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t F = a.n_per_dim;
    const float x = in.data[(size_t)e.sample * in.stride + e.dim];
    const float* g = dout.data + (size_t)e.sample * dout.stride + (size_t)e.dim * F;
    float sum = 0.f;
    for (uint32_t f = 0; f < F; ++f) {
        const float slope = fractional_part(ldexpf(x, (int)f)) >= 0.5f ? 4.f : -4.f;  // right-hand slope at kinks
        sum += g[f] * ldexpf(slope, (int)f);
    }
    din.data[(size_t)e.sample * din.stride + e.dim] = sum;
}

constexpr float kInvSqrt2 = (float)0.70710678118654752440;

__global__ void one_blob_forward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, DeviceRows out, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t B = a.n_per_dim;
    const float u = in.data[(size_t)e.sample * in.stride + e.dim] * (float)B;
    float* y = out.data + (size_t)e.sample * out.stride + (size_t)e.dim * B;
    // Neighbouring bins share a boundary: one erf per boundary.
    float lower = erff((0.f - u) * kInvSqrt2);
    for (uint32_t b = 0; b < B; ++b) {
        const float upper = erff(((float)(b + 1) - u) * kInvSqrt2);
        y[b] = 0.5f * (upper - lower);
        lower = upper;
    }
}

__global__ void one_blob_backward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, ConstDeviceRows dout,
                                         DeviceRows din, uint32_t batch) {
    ElementIndex e;
    if (!element_index(a, batch, e)) return;
    const uint32_t B = a.n_per_dim;
    const float u = in.data[(size_t)e.sample * in.stride + e.dim] * (float)B;
    const float* g = dout.data + (size_t)e.sample * dout.stride + (size_t)e.dim * B;
    auto density = [u](uint32_t b) {
        const float t = (float)b - u;
        return expf(-0.5f * t * t);
    };
    float lower = density(0), sum = 0.f;
    for (uint32_t b = 0; b < B; ++b) {
        const float upper = density(b + 1);
        sum += g[b] * (lower - upper);
        lower = upper;
    }
    din.data[(size_t)e.sample * din.stride + e.dim] = a.one_blob_slope * sum;
}

// ---- SphericalHarmonics ----------------------------------------------------

// Forward-mode dual number with 3 partials (the CPU's Dual<float, 3>), so the
// same recurrence gives exact input gradients for every degree.
struct Dual3 {
    float value = 0.f;
    float grad[3] = {0.f, 0.f, 0.f};
    Dual3() = default;
    __device__ Dual3(float constant) : value(constant) {}  // NOLINT: mixes with literals, like the CPU Dual
};

__device__ inline Dual3 operator+(const Dual3& a, const Dual3& b) {
    Dual3 r(a.value + b.value);
    for (int i = 0; i < 3; ++i) r.grad[i] = a.grad[i] + b.grad[i];
    return r;
}
__device__ inline Dual3 operator-(const Dual3& a, const Dual3& b) {
    Dual3 r(a.value - b.value);
    for (int i = 0; i < 3; ++i) r.grad[i] = a.grad[i] - b.grad[i];
    return r;
}
__device__ inline Dual3 operator*(const Dual3& a, const Dual3& b) {
    Dual3 r(a.value * b.value);
    for (int i = 0; i < 3; ++i) r.grad[i] = a.grad[i] * b.value + a.value * b.grad[i];
    return r;
}
__device__ inline Dual3 operator*(float a, const Dual3& b) {
    Dual3 r(a * b.value);
    for (int i = 0; i < 3; ++i) r.grad[i] = a * b.grad[i];
    return r;
}
__device__ inline Dual3 operator/(const Dual3& a, float b) {
    Dual3 r(a.value / b);
    for (int i = 0; i < 3; ++i) r.grad[i] = a.grad[i] / b;
    return r;
}

// The CPU's evaluate_basis with the degree L fixed at compile time (so the
// small arrays stay in registers). emit(j, Y_j) receives output j.
template <int L, typename S, typename Emit>
__device__ inline void evaluate_sh_basis(const SimpleEncodingArgs& a, const S& x, const S& y, const S& z,
                                         Emit&& emit) {
    S c[L], s[L];  // (x + i y)^m = c[m] + i s[m]
    c[0] = S(1.f);
    s[0] = S(0.f);
#pragma unroll
    for (int m = 1; m < L; ++m) {
        c[m] = x * c[m - 1] - y * s[m - 1];
        s[m] = x * s[m - 1] + y * c[m - 1];
    }
#pragma unroll
    for (int m = 0; m < L; ++m) {
        S p_prev(0.f);
        S p(a.sh_legendre_diagonal[m]);
#pragma unroll
        for (int l = m; l < L; ++l) {
            if (l == m + 1) {
                S next = (float)(2 * m + 1) * z * p;
                p_prev = p;
                p = next;
            } else if (l > m + 1) {
                S next = ((float)(2 * l - 1) * z * p - (float)(l + m - 1) * p_prev) / (float)(l - m);
                p_prev = p;
                p = next;
            }
            if (m == 0) {
                emit(l * l + l, a.sh_normalisation[l * l + l] * p);
            } else {
                emit(l * l + l + m, a.sh_normalisation[l * l + l + m] * p * c[m]);
                emit(l * l + l - m, a.sh_normalisation[l * l + l - m] * p * s[m]);
            }
        }
    }
}

constexpr uint32_t kShForwardThreads = 128;

// A thread evaluates one sample into shared memory, then the block writes its
// rows out with consecutive threads on consecutive outputs. Written straight
// from each thread, every store instruction of a warp touched 32 rows (a
// sector each), 8x the memory transactions of the data.
template <int L>
__global__ void sh_forward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, DeviceRows out, uint32_t batch) {
    constexpr uint32_t kOut = L * L;
    constexpr uint32_t kPitch = kOut + 1;  // odd: a warp's rows start in distinct banks
    __shared__ float tile[kShForwardThreads * kPitch];
    const uint32_t first = blockIdx.x * kShForwardThreads;
    const uint32_t sample = first + threadIdx.x;
    if (sample < batch) {
        const float* v = in.data + (size_t)sample * in.stride;
        float* row = tile + threadIdx.x * kPitch;
        evaluate_sh_basis<L, float>(a, 2.f * v[0] - 1.f, 2.f * v[1] - 1.f, 2.f * v[2] - 1.f,
                                    [row](int j, float value) { row[j] = value; });
    }
    __syncthreads();
    const uint32_t rows = ::min(kShForwardThreads, batch - first);
    for (uint32_t k = threadIdx.x; k < rows * kOut; k += kShForwardThreads) {
        const uint32_t i = k / kOut, j = k % kOut;
        out.data[(size_t)(first + i) * out.stride + j] = tile[i * kPitch + j];
    }
}

template <int L>
__global__ void sh_backward_kernel(SimpleEncodingArgs a, ConstDeviceRows in, ConstDeviceRows dout, DeviceRows din,
                                   uint32_t batch) {
    const uint32_t sample = blockIdx.x * blockDim.x + threadIdx.x;
    if (sample >= batch) return;
    const float* v = in.data + (size_t)sample * in.stride;
    const float* g = dout.data + (size_t)sample * dout.stride;
    // Seed 2 = d(2x - 1)/dx: the partials are with respect to the raw input.
    Dual3 x(2.f * v[0] - 1.f), y(2.f * v[1] - 1.f), z(2.f * v[2] - 1.f);
    x.grad[0] = 2.f;
    y.grad[1] = 2.f;
    z.grad[2] = 2.f;
    float gx[3] = {0.f, 0.f, 0.f};
    evaluate_sh_basis<L, Dual3>(a, x, y, z, [&](int j, const Dual3& basis) {
        const float gj = g[j];
        for (int k = 0; k < 3; ++k) gx[k] += gj * basis.grad[k];
    });
    float* out = din.data + (size_t)sample * din.stride;
    for (int k = 0; k < 3; ++k) out[k] = gx[k];
}

template <typename Fn>
void dispatch_sh_degree(uint32_t degree, Fn&& fn) {
    switch (degree) {
        case 1: fn(std::integral_constant<int, 1>{}); return;
        case 2: fn(std::integral_constant<int, 2>{}); return;
        case 3: fn(std::integral_constant<int, 3>{}); return;
        case 4: fn(std::integral_constant<int, 4>{}); return;
        case 5: fn(std::integral_constant<int, 5>{}); return;
        case 6: fn(std::integral_constant<int, 6>{}); return;
        case 7: fn(std::integral_constant<int, 7>{}); return;
        case 8: fn(std::integral_constant<int, 8>{}); return;
        default: throw std::invalid_argument("SphericalHarmonics kernels: degree must be in [1, 8], got " +
                                             std::to_string(degree));
    }
}

} // namespace

void launch_simple_encoding_forward(const SimpleEncodingArgs& a, ConstDeviceRows in, DeviceRows out, uint32_t batch,
                                    cudaStream_t stream) {
    if (batch == 0) return;
    const unsigned int element_blocks = blocks_for((size_t)batch * a.n_dims);
    switch (a.kind) {
        case SimpleEncodingKind::Identity:
            identity_forward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, out, batch);
            break;
        case SimpleEncodingKind::Frequency:
            frequency_forward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, out, batch);
            break;
        case SimpleEncodingKind::TriangleWave:
            triangle_wave_forward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, out, batch);
            break;
        case SimpleEncodingKind::OneBlob:
            one_blob_forward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, out, batch);
            break;
        case SimpleEncodingKind::SphericalHarmonics:
            dispatch_sh_degree(a.sh_degree, [&](auto degree) {
                const unsigned int blocks = (unsigned int)((batch + kShForwardThreads - 1) / kShForwardThreads);
                sh_forward_kernel<decltype(degree)::value><<<blocks, kShForwardThreads, 0, stream>>>(a, in, out, batch);
            });
            break;
    }
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

void launch_simple_encoding_backward(const SimpleEncodingArgs& a, ConstDeviceRows in, ConstDeviceRows dout,
                                     DeviceRows din, uint32_t batch, cudaStream_t stream) {
    if (batch == 0) return;
    const unsigned int element_blocks = blocks_for((size_t)batch * a.n_dims);
    switch (a.kind) {
        case SimpleEncodingKind::Identity:
            identity_backward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, dout, din, batch);
            break;
        case SimpleEncodingKind::Frequency:
            frequency_backward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, dout, din, batch);
            break;
        case SimpleEncodingKind::TriangleWave:
            triangle_wave_backward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, dout, din, batch);
            break;
        case SimpleEncodingKind::OneBlob:
            one_blob_backward_kernel<<<element_blocks, kThreadsPerBlock, 0, stream>>>(a, in, dout, din, batch);
            break;
        case SimpleEncodingKind::SphericalHarmonics:
            dispatch_sh_degree(a.sh_degree, [&](auto degree) {
                sh_backward_kernel<decltype(degree)::value>
                    <<<blocks_for(batch), kThreadsPerBlock, 0, stream>>>(a, in, dout, din, batch);
            });
            break;
    }
    FUSEDNGP_GPU_CHECK_LAUNCH();
}

} // namespace fusedngp::gpu
