#include "gpu/components/gpu_simple_encodings.h"

#include "core/math_constants.h"
#include "encodings/frequency.h"
#include "encodings/identity.h"
#include "encodings/one_blob.h"
#include "encodings/spherical_harmonics.h"
#include "encodings/triangle_wave.h"
#include "launch_simple_encodings.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace fusedngp::gpu {

namespace {

constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// IdentityEncoding keeps scale and offset private; both are recovered
// exactly: y(0) = 0 * scale + offset = offset, and dL/dx = 1 * scale.
void read_identity(const Encoding<float>& cpu, SimpleEncodingArgs& a) {
    const Matrix<float> zero = Matrix<float>::Zero(1, cpu.n_input_dims());
    const Matrix<float> ones = Matrix<float>::Ones(1, cpu.n_output_dims());
    Matrix<float> y, dx;
    cpu.forward(nullptr, zero, y);
    cpu.backward(nullptr, zero, ones, nullptr, &dx);
    a.identity_offset = y(0, 0);
    a.identity_scale = dx(0, 0);
}

void fill_frequencies(SimpleEncodingArgs& a) {
    if (a.n_per_dim == 0 || a.n_per_dim > SimpleEncodingArgs::kMaxFrequencies) {
        throw std::invalid_argument("GPU Frequency encoding: 1..64 frequencies supported, got " +
                                    std::to_string(a.n_per_dim));
    }
    // The CPU constructor's expression: pi * 2^f in double, rounded once.
    for (uint32_t f = 0; f < a.n_per_dim; ++f) a.angular_freq[f] = (float)std::ldexp(kPi, (int)f);
}

double factorial(uint32_t n) {
    double r = 1;
    for (uint32_t i = 2; i <= n; ++i) r *= i;
    return r;
}

// The CPU SphericalHarmonicsEncoding's constants, same expressions.
void fill_spherical_harmonics(uint32_t degree, SimpleEncodingArgs& a) {
    if (degree == 0 || degree > SimpleEncodingArgs::kMaxShDegree) {
        throw std::invalid_argument("GPU SphericalHarmonics: degree 1..8 supported, got " + std::to_string(degree));
    }
    a.sh_degree = degree;
    for (int l = 0; l < (int)degree; ++l) {
        for (int m = -l; m <= l; ++m) {
            const uint32_t am = (uint32_t)std::abs(m);
            double k = std::sqrt((2 * l + 1) / (4 * kPi) * factorial(l - am) / factorial(l + am));
            if (m != 0) k *= std::sqrt(2.0);
            a.sh_normalisation[l * l + l + m] = (float)k;
        }
    }
    for (uint32_t m = 0; m < degree; ++m) {
        double diagonal = 1;  // (-1)^m (2m-1)!!
        for (uint32_t k = 1; k <= m; ++k) diagonal *= -(double)(2 * k - 1);
        a.sh_legendre_diagonal[m] = (float)diagonal;
    }
}

// Fills `a` from the CPU encoding; false when it is none of the five types.
bool describe_kernel_args(const Encoding<float>& cpu, SimpleEncodingArgs& a) {
    a.n_dims = cpu.n_input_dims();
    if (dynamic_cast<const IdentityEncoding<float>*>(&cpu)) {
        a.kind = SimpleEncodingKind::Identity;
        read_identity(cpu, a);
    } else if (dynamic_cast<const FrequencyEncoding<float>*>(&cpu)) {
        a.kind = SimpleEncodingKind::Frequency;
        a.n_per_dim = cpu.n_output_dims() / (2 * a.n_dims);
        fill_frequencies(a);
    } else if (dynamic_cast<const TriangleWaveEncoding<float>*>(&cpu)) {
        a.kind = SimpleEncodingKind::TriangleWave;
        a.n_per_dim = cpu.n_output_dims() / a.n_dims;
        if (a.n_per_dim > 64) throw std::invalid_argument("GPU TriangleWave encoding: at most 64 frequencies");
    } else if (dynamic_cast<const OneBlobEncoding<float>*>(&cpu)) {
        a.kind = SimpleEncodingKind::OneBlob;
        a.n_per_dim = cpu.n_output_dims() / a.n_dims;
        a.one_blob_slope = (float)((double)a.n_per_dim * kInvSqrt2Pi);
    } else if (auto* sh = dynamic_cast<const SphericalHarmonicsEncoding<float>*>(&cpu)) {
        a.kind = SimpleEncodingKind::SphericalHarmonics;
        fill_spherical_harmonics(sh->degree(), a);
    } else {
        return false;
    }
    return true;
}

} // namespace

bool GpuParameterFreeEncoding::supports(const Encoding<float>& cpu) {
    SimpleEncodingArgs probe;
    return describe_kernel_args(cpu, probe);
}

GpuParameterFreeEncoding::GpuParameterFreeEncoding(const Encoding<float>& cpu)
    : otype_(cpu.otype()),
      describe_(cpu.describe()),
      n_input_dims_(cpu.n_input_dims()),
      n_output_dims_(cpu.n_output_dims()),
      args_(std::make_unique<SimpleEncodingArgs>()) {
    if (!describe_kernel_args(cpu, *args_)) {
        throw std::invalid_argument("GpuParameterFreeEncoding: no GPU kernel for encoding " + cpu.otype());
    }
    if (args_->n_output_dims() != n_output_dims_) {
        throw std::logic_error("GpuParameterFreeEncoding: " + otype_ + " output width mismatch (" +
                               std::to_string(args_->n_output_dims()) + " vs CPU " +
                               std::to_string(n_output_dims_) + ")");
    }
}

GpuParameterFreeEncoding::~GpuParameterFreeEncoding() = default;

bool GpuParameterFreeEncoding::copies_input() const {
    return args_->kind == SimpleEncodingKind::Identity && args_->identity_scale == 1.f &&
           args_->identity_offset == 0.f;
}

void GpuParameterFreeEncoding::forward(ConstDeviceRows in, DeviceRows out, uint32_t batch,
                                       cudaStream_t stream) const {
    launch_simple_encoding_forward(*args_, in, out, batch, stream);
}

void GpuParameterFreeEncoding::backward(ConstDeviceRows in, ConstDeviceRows dout, float*, DeviceRows din,
                                        uint32_t batch, cudaStream_t stream, bool) const {
    if (din.data) launch_simple_encoding_backward(*args_, in, dout, din, batch, stream);
}

} // namespace fusedngp::gpu
