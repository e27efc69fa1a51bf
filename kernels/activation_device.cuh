// Device versions of the activation functions (fp32 math), plus helpers that
// apply an activation to packed fp16 tensor-core fragments. Values and
// derivatives are written in terms of the pre-activation x, like the CPU
// engine, because the kernels store pre-activations for backward (sine and
// SiLU cannot be differentiated from their output alone).
#pragma once

#include "networks/activation.h"

#include <cuda_fp16.h>
#include <cstdint>

namespace fusedngp::gpu::detail {

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

__device__ __forceinline__ float activation_value(Activation a, float x) {
    switch (a) {
    case Activation::None: return x;
    case Activation::ReLU: return fmaxf(x, 0.f);
    case Activation::LeakyReLU: return x > 0.f ? x : 0.01f * x;
    case Activation::Exponential: return expf(x);
    case Activation::Sine: return sinf(x);
    case Activation::Sigmoid: return sigmoid(x);
    case Activation::Squareplus: return 0.5f * (x + sqrtf(x * x + 4.f));
    // log1p(exp(x)) overflows for large x, where softplus(x) == x in fp32.
    case Activation::Softplus: return x > 20.f ? x : log1pf(expf(x));
    case Activation::Tanh: return tanhf(x);
    case Activation::SiLU: return x * sigmoid(x);
    }
    return x;
}

__device__ __forceinline__ float activation_derivative(Activation a, float x) {
    switch (a) {
    case Activation::None: return 1.f;
    case Activation::ReLU: return x > 0.f ? 1.f : 0.f;
    case Activation::LeakyReLU: return x > 0.f ? 1.f : 0.01f;
    case Activation::Exponential: return expf(x);
    case Activation::Sine: return cosf(x);
    case Activation::Sigmoid: { float s = sigmoid(x); return s * (1.f - s); }
    case Activation::Squareplus: return 0.5f * (1.f + x * rsqrtf(x * x + 4.f));
    case Activation::Softplus: return sigmoid(x);
    case Activation::Tanh: { float t = tanhf(x); return 1.f - t * t; }
    case Activation::SiLU: { float s = sigmoid(x); return s * (1.f + x * (1.f - s)); }
    }
    return 1.f;
}

__device__ __forceinline__ uint32_t as_u32(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 as_half2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }

// The kernels call activations from many unrolled places; inlining the full
// switch at each would multiply code size (and compile time) by the number of
// call sites. So ReLU and None, the common cases, are inlined and everything
// else goes through one out-of-line function per operation.
static __device__ __noinline__ float2 activation_value_pair_slow(Activation a, float2 x) {
    return make_float2(activation_value(a, x.x), activation_value(a, x.y));
}
static __device__ __noinline__ float2 activation_derivative_pair_slow(Activation a, float2 x) {
    return make_float2(activation_derivative(a, x.x), activation_derivative(a, x.y));
}
static __device__ __noinline__ uint32_t activation_half2_slow(Activation a, uint32_t v) {
    const float2 f = activation_value_pair_slow(a, __half22float2(as_half2(v)));
    return as_u32(__float22half2_rn(f));
}

__device__ __forceinline__ float2 activation_value_pair(Activation a, float2 x) {
    if (a == Activation::None) return x;
    if (a == Activation::ReLU) return make_float2(fmaxf(x.x, 0.f), fmaxf(x.y, 0.f));
    return activation_value_pair_slow(a, x);
}
__device__ __forceinline__ float2 activation_derivative_pair(Activation a, float2 x) {
    if (a == Activation::None) return make_float2(1.f, 1.f);
    if (a == Activation::ReLU) return make_float2(x.x > 0.f ? 1.f : 0.f, x.y > 0.f ? 1.f : 0.f);
    return activation_derivative_pair_slow(a, x);
}

// Applies `a` to every half of the packed registers. Called on operand
// fragments right after they are loaded from shared memory; the branch is
// warp-uniform.
template <int N>
__device__ __forceinline__ void activate_fragments(Activation a, uint32_t (&regs)[N]) {
    if (a == Activation::None) return;
    if (a == Activation::ReLU) {
        const __half2 zero = __float2half2_rn(0.f);
#pragma unroll
        for (int i = 0; i < N; ++i) regs[i] = as_u32(__hmax2(as_half2(regs[i]), zero));
        return;
    }
#pragma unroll
    for (int i = 0; i < N; ++i) regs[i] = activation_half2_slow(a, regs[i]);
}

} // namespace fusedngp::gpu::detail
