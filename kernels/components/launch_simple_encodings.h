// Host entry points of the parameter-free encodings: Identity, Frequency,
// TriangleWave, OneBlob and SphericalHarmonics. docs/ENCODINGS.md is the
// specification; every constant is computed on the host exactly as the CPU
// encoding computes it and passed in by value.
#pragma once

#include "gpu/components/device_rows.h"

#include <cuda_runtime_api.h>

#include <cstdint>

#if defined(__CUDACC__)
#define FUSEDNGP_COMPONENTS_HD __host__ __device__
#else
#define FUSEDNGP_COMPONENTS_HD
#endif

namespace fusedngp::gpu {

enum class SimpleEncodingKind : uint32_t { Identity, Frequency, TriangleWave, OneBlob, SphericalHarmonics };

struct SimpleEncodingArgs {
    static constexpr uint32_t kMaxFrequencies = 64;
    static constexpr uint32_t kMaxShDegree = 8;

    SimpleEncodingKind kind = SimpleEncodingKind::Identity;
    uint32_t n_dims = 0;        // input width (3 for SphericalHarmonics)
    uint32_t n_per_dim = 0;     // Frequency: frequencies F; TriangleWave: F; OneBlob: bins B
    uint32_t sh_degree = 0;     // SphericalHarmonics
    float identity_scale = 1.f, identity_offset = 0.f;
    float one_blob_slope = 0.f;                       // (float)(B / sqrt(2 pi))
    float angular_freq[kMaxFrequencies] = {};         // Frequency: (float)(pi * 2^f)
    float sh_normalisation[kMaxShDegree * kMaxShDegree] = {};  // per output: K_l^m (* sqrt 2 for m != 0)
    float sh_legendre_diagonal[kMaxShDegree] = {};    // (float)P_m^m = (-1)^m (2m-1)!!

    FUSEDNGP_COMPONENTS_HD uint32_t n_output_dims() const {
        switch (kind) {
            case SimpleEncodingKind::Frequency: return n_dims * 2 * n_per_dim;
            case SimpleEncodingKind::TriangleWave:
            case SimpleEncodingKind::OneBlob: return n_dims * n_per_dim;
            case SimpleEncodingKind::SphericalHarmonics: return sh_degree * sh_degree;
            case SimpleEncodingKind::Identity: break;
        }
        return n_dims;
    }
};

// out: batch x n_output_dims, overwritten.
void launch_simple_encoding_forward(const SimpleEncodingArgs& args, ConstDeviceRows in, DeviceRows out,
                                    uint32_t batch, cudaStream_t stream);
// din: batch x n_dims, overwritten with dL/din.
void launch_simple_encoding_backward(const SimpleEncodingArgs& args, ConstDeviceRows in, ConstDeviceRows dout,
                                     DeviceRows din, uint32_t batch, cudaStream_t stream);

} // namespace fusedngp::gpu
