#include "gpu/cublas_mlp.h"

#include "cublas_mlp_kernels.h"
#include "gpu/cublaslt_library.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>

namespace fusedngp::gpu {
namespace {

// cuBLAS's recommended workspace on Hopper; lets the heuristic pick split-K
// kernels for the weight-gradient GEMMs (k = batch, small m and n).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

void lt_check(cublasStatus_t status, const char* expr, const char* file, int line) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr +
                             " failed: " + cublaslt().status_string(status));
}
#define FUSEDNGP_LT_CHECK(expr) lt_check((expr), #expr, __FILE__, __LINE__)

bool is_relu(Activation a) { return a == Activation::ReLU; }

} // namespace

// ---- cuBLASLt plans -----------------------------------------------------------------------

// D (m x n, column-major, ld = ldd) = alpha * op(A) op(B) with op(A) m x k and
// op(B) k x n; A, B fp16, fp32 compute and scale, D fp16 or fp32.
struct CublasMlp::Gemm {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};

    Gemm(cublasLtHandle_t lt, bool trans_a, bool trans_b, uint64_t m, uint64_t n, uint64_t k, uint64_t lda,
         uint64_t ldb, uint64_t ldd, cudaDataType_t d_type, cublasLtEpilogue_t epilogue) {
        try {
            FUSEDNGP_LT_CHECK(cublaslt().desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
            const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
            FUSEDNGP_LT_CHECK(cublaslt().desc_set_attribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
            FUSEDNGP_LT_CHECK(cublaslt().desc_set_attribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
            FUSEDNGP_LT_CHECK(
                cublaslt().desc_set_attribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
            FUSEDNGP_LT_CHECK(cublaslt().layout_create(&a, CUDA_R_16F, trans_a ? k : m, trans_a ? m : k, lda));
            FUSEDNGP_LT_CHECK(cublaslt().layout_create(&b, CUDA_R_16F, trans_b ? n : k, trans_b ? k : n, ldb));
            FUSEDNGP_LT_CHECK(cublaslt().layout_create(&d, d_type, m, n, ldd));

            cublasLtMatmulPreference_t pref = nullptr;
            FUSEDNGP_LT_CHECK(cublaslt().preference_create(&pref));
            FUSEDNGP_LT_CHECK(cublaslt().preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                   &kWorkspaceBytes, sizeof(kWorkspaceBytes)));
            cublasLtMatmulHeuristicResult_t result{};
            int found = 0;
            const cublasStatus_t st = cublaslt().algo_get_heuristic(lt, op, a, b, d, d, pref, 1, &result, &found);
            cublaslt().preference_destroy(pref);
            FUSEDNGP_LT_CHECK(st);
            if (found == 0) {
                throw std::runtime_error("CublasMlp: cuBLASLt has no algorithm for a " + std::to_string(m) + " x " +
                                         std::to_string(n) + " x " + std::to_string(k) + " GEMM");
            }
            algo = result.algo;
        } catch (...) {
            release();
            throw;
        }
    }
    ~Gemm() { release(); }
    Gemm(const Gemm&) = delete;
    Gemm& operator=(const Gemm&) = delete;

    void release() {
        if (d) cublaslt().layout_destroy(d);
        if (b) cublaslt().layout_destroy(b);
        if (a) cublaslt().layout_destroy(a);
        if (op) cublaslt().desc_destroy(op);
        a = b = d = nullptr;
        op = nullptr;
    }
};

struct CublasMlp::BatchPlans {
    std::vector<std::unique_ptr<Gemm>> forward;   // per layer: Z_l = W_l H_{l-1}
    std::vector<std::unique_ptr<Gemm>> dweights;  // per layer: dW_l^T = H_{l-1} delta_l^T
    std::vector<std::unique_ptr<Gemm>> dinput;    // per layer: dH_{l-1} = W_l^T delta_l (layer 0: fp32 dL/dx)
};

const CublasMlp::BatchPlans& CublasMlp::plans_for(uint32_t batch) const {
    auto it = plans_.find(batch);
    if (it != plans_.end()) return *it->second;
    // A handful of batch sizes in practice; bound the cache anyway.
    if (plans_.size() >= 32) plans_.clear();
    auto plans = std::make_unique<BatchPlans>();
    for (uint32_t l = 0; l < n_layers(); ++l) {
        const uint32_t fi = fan_in_pad(l), fo = fan_out_pad(l);
        const bool last = l + 1 == n_layers();
        // The caller's W_l [fo][fi] row-major is a column-major fi x fo matrix.
        const cublasLtEpilogue_t fwd_epilogue =
            !last && is_relu(config_.hidden_activation) ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
        plans->forward.push_back(std::make_unique<Gemm>(lt_, true, false, fo, batch, fi, fi, fi, fo,
                                                        last ? CUDA_R_32F : CUDA_R_16F, fwd_epilogue));
        plans->dweights.push_back(std::make_unique<Gemm>(lt_, false, true, fi, fo, batch, fi, fo, fi, CUDA_R_32F,
                                                         CUBLASLT_EPILOGUE_DEFAULT));
        plans->dinput.push_back(std::make_unique<Gemm>(lt_, false, false, fi, batch, fo, fi, fo, fi,
                                                       l == 0 ? CUDA_R_32F : CUDA_R_16F, CUBLASLT_EPILOGUE_DEFAULT));
    }
    return *plans_.emplace(batch, std::move(plans)).first->second;
}

void CublasMlp::matmul(const Gemm& g, float alpha, const void* a, const void* b, void* d, cudaStream_t stream) const {
    const float beta = 0.f;
    FUSEDNGP_LT_CHECK(cublaslt().matmul(lt_, g.op, &alpha, a, g.a, b, g.b, &beta, d, g.d, d, g.d, &g.algo,
                                     workspace_.as<void>(), workspace_.bytes(), stream));
}

// ---- Construction, sizes -----------------------------------------------------------------

CublasMlp::CublasMlp(const GpuMlpConfig& config, uint32_t max_batch) : config_(config) {
    if (config.n_input_dims == 0 || config.n_output_dims == 0 || config.width == 0 || config.n_hidden_layers == 0)
        throw std::invalid_argument("CublasMlp: n_input_dims, n_output_dims, width and n_hidden_layers must be positive");
    width_pad_ = round_up8(config.width);
    n_in_pad_ = round_up8(config.n_input_dims);
    n_out_pad_ = round_up8(config.n_output_dims);
    FUSEDNGP_LT_CHECK(cublaslt().create(&lt_));
    try {
        workspace_ = DeviceMemory(kWorkspaceBytes);
        master_ = DeviceMemory(n_params() * sizeof(float));
        weights_ = DeviceMemory(padded_offset(n_layers()) * sizeof(__half));
        wgrad_ = DeviceMemory(padded_offset(n_layers()) * sizeof(float));
        // The padding of the fp16 weights must read as zero before the first
        // set_params (the conversion rewrites it anyway).
        FUSEDNGP_CUDA_CHECK(cudaMemset(weights_.as<void>(), 0, weights_.bytes()));
        reserve(max_batch);
    } catch (...) {
        cublaslt().destroy(lt_);
        throw;
    }
}

CublasMlp::~CublasMlp() {
    plans_.clear();
    if (lt_) cublaslt().destroy(lt_);
}

uint32_t CublasMlp::fan_in_pad(uint32_t l) const { return l == 0 ? n_in_pad_ : width_pad_; }
uint32_t CublasMlp::fan_out_pad(uint32_t l) const { return l == config_.n_hidden_layers ? n_out_pad_ : width_pad_; }

size_t CublasMlp::param_offset(uint32_t l) const {
    size_t o = 0;
    for (uint32_t j = 0; j < l; ++j) o += (size_t)fan_in(j) * fan_out(j);
    return o;
}
size_t CublasMlp::padded_offset(uint32_t l) const {
    size_t o = 0;
    for (uint32_t j = 0; j < l; ++j) o += (size_t)fan_in_pad(j) * fan_out_pad(j);
    return o;
}
size_t CublasMlp::n_params() const { return param_offset(n_layers()); }

bool CublasMlp::stores_pre_activation() const {
    return config_.hidden_activation != Activation::ReLU && config_.hidden_activation != Activation::None;
}

void CublasMlp::reserve(uint32_t max_batch) {
    if (max_batch <= max_batch_) return;
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());  // buffers in use by queued work must not be freed under it
    const size_t b = max_batch;
    auto halves = [&](size_t cols) { return DeviceMemory(b * cols * sizeof(__half)); };
    auto floats = [&](size_t cols) { return DeviceMemory(b * cols * sizeof(float)); };
    // Release the old buffers first so growing needs no room for both.
    x_ = {};
    h_.clear();
    z_.clear();
    z_out_ = {};
    delta_[0] = {};
    delta_[1] = {};
    din_ = {};
    inf_x_ = {};
    inf_h_[0] = {};
    inf_h_[1] = {};
    inf_z_out_ = {};
    max_batch_ = 0;

    x_ = halves(n_in_pad_);
    for (uint32_t l = 0; l < config_.n_hidden_layers; ++l) {
        h_.push_back(halves(width_pad_));
        if (stores_pre_activation()) z_.push_back(halves(width_pad_));
    }
    z_out_ = floats(n_out_pad_);
    delta_[0] = halves(std::max(width_pad_, n_out_pad_));
    delta_[1] = halves(std::max(width_pad_, n_out_pad_));
    din_ = floats(n_in_pad_);
    inf_x_ = halves(n_in_pad_);
    inf_h_[0] = halves(width_pad_);
    inf_h_[1] = halves(width_pad_);
    inf_z_out_ = floats(n_out_pad_);
    max_batch_ = max_batch;
}

void CublasMlp::check_batch(uint32_t batch, const char* call) const {
    if (batch > max_batch_) {
        throw std::invalid_argument(std::string("CublasMlp::") + call + ": batch " + std::to_string(batch) +
                                    " exceeds the reserved " + std::to_string(max_batch_) +
                                    " (call reserve() outside the hot path)");
    }
}

// ---- Parameters ----------------------------------------------------------------------------

void CublasMlp::set_params(const float* host_params) {
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(master_.as<float>(), host_params, n_params() * sizeof(float), cudaMemcpyHostToDevice));
    set_params_device(master_.as<float>(), nullptr);
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
}

void CublasMlp::set_params_device(const float* d_params, cudaStream_t stream) {
    if (d_params != master_.as<float>())
        FUSEDNGP_CUDA_CHECK(cudaMemcpyAsync(master_.as<float>(), d_params, n_params() * sizeof(float),
                                            cudaMemcpyDeviceToDevice, stream));
    for (uint32_t l = 0; l < n_layers(); ++l) {
        FUSEDNGP_CUDA_CHECK(launch_weights_to_half_padded(master_.as<float>() + param_offset(l), fan_out(l), fan_in(l),
                                                          fan_out_pad(l), fan_in_pad(l),
                                                          weights_.as<__half>() + padded_offset(l), stream));
    }
}

void CublasMlp::set_loss_scale(float scale) {
    if (!(scale > 0.f)) throw std::invalid_argument("CublasMlp: loss scale must be positive");
    loss_scale_ = scale;
}

// ---- Passes ------------------------------------------------------------------------------------

void CublasMlp::run_forward(__half* x, __half* const* h, __half* const* z, float* z_out, const float* d_in,
                            uint32_t batch, cudaStream_t stream) const {
    const BatchPlans& plans = plans_for(batch);
    FUSEDNGP_CUDA_CHECK(launch_rows_to_half_padded(d_in, batch, config_.n_input_dims, n_in_pad_,
                                                   x, stream));
    const __half* input = x;
    const Activation f = config_.hidden_activation;
    for (uint32_t l = 0; l < config_.n_hidden_layers; ++l) {
        const __half* w = weights_.as<__half>() + padded_offset(l);
        const size_t n = (size_t)batch * width_pad_;
        if (z != nullptr && stores_pre_activation()) {
            matmul(*plans.forward[l], 1.f, w, input, z[l], stream);
            FUSEDNGP_CUDA_CHECK(launch_activation_half(f, z[l], h[l], n, stream));
        } else {
            // ReLU comes from the GEMM's epilogue, None needs nothing; other
            // activations (inference only) are applied in place.
            matmul(*plans.forward[l], 1.f, w, input, h[l], stream);
            if (f != Activation::ReLU && f != Activation::None)
                FUSEDNGP_CUDA_CHECK(launch_activation_half(f, h[l], h[l], n, stream));
        }
        input = h[l];
    }
    const uint32_t D = config_.n_hidden_layers;
    matmul(*plans.forward[D], 1.f, weights_.as<__half>() + padded_offset(D), input, z_out, stream);
}

void CublasMlp::inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const {
    if (batch == 0) return;
    check_batch(batch, "inference");
    // Hidden layers ping-pong between two buffers.
    std::vector<__half*> h(config_.n_hidden_layers);
    for (uint32_t l = 0; l < config_.n_hidden_layers; ++l) h[l] = inf_h_[l % 2].as<__half>();
    run_forward(inf_x_.as<__half>(), h.data(), nullptr, inf_z_out_.as<float>(), d_in, batch, stream);
    FUSEDNGP_CUDA_CHECK(launch_output_activation(config_.output_activation, inf_z_out_.as<float>(), batch,
                                                 config_.n_output_dims, n_out_pad_, d_out, stream));
}

void CublasMlp::forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) {
    if (batch == 0) return;
    check_batch(batch, "forward");
    std::vector<__half*> h(config_.n_hidden_layers), z(config_.n_hidden_layers, nullptr);
    for (uint32_t l = 0; l < config_.n_hidden_layers; ++l) {
        h[l] = h_[l].as<__half>();
        if (stores_pre_activation()) z[l] = z_[l].as<__half>();
    }
    run_forward(x_.as<__half>(), h.data(), z.data(), z_out_.as<float>(), d_in, batch, stream);
    if (d_out != nullptr)
        FUSEDNGP_CUDA_CHECK(launch_output_activation(config_.output_activation, z_out_.as<float>(), batch,
                                                     config_.n_output_dims, n_out_pad_, d_out, stream));
}

void CublasMlp::backward(const float* /*d_in: stored by forward*/, const float* d_dout, float* d_din,
                         float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate) {
    if (batch == 0) {
        if (d_dweights != nullptr && !accumulate)
            FUSEDNGP_CUDA_CHECK(cudaMemsetAsync(d_dweights, 0, n_params() * sizeof(float), stream));
        return;
    }
    check_batch(batch, "backward");
    const BatchPlans& plans = plans_for(batch);
    const float inv_scale = 1.f / loss_scale_;
    const uint32_t D = config_.n_hidden_layers;
    const Activation f = config_.hidden_activation;

    // delta_D = scale * dL/dy * g'(z_out), fp16.
    int cur = 0;
    FUSEDNGP_CUDA_CHECK(launch_output_delta(config_.output_activation, z_out_.as<float>(), d_dout, batch,
                                            config_.n_output_dims, n_out_pad_, loss_scale_, delta_[cur].as<__half>(),
                                            stream));
    for (uint32_t l = D + 1; l-- > 0;) {
        const __half* delta = delta_[cur].as<__half>();
        const __half* input = l == 0 ? x_.as<__half>() : h_[l - 1].as<__half>();
        const __half* w = weights_.as<__half>() + padded_offset(l);
        if (d_dweights != nullptr)
            matmul(*plans.dweights[l], inv_scale, input, delta, wgrad_.as<float>() + padded_offset(l), stream);
        if (l == 0) {
            if (d_din != nullptr) {
                matmul(*plans.dinput[0], inv_scale, w, delta, din_.as<float>(), stream);
                FUSEDNGP_CUDA_CHECK(launch_unpad_rows(din_.as<float>(), batch, config_.n_input_dims, n_in_pad_, false,
                                                      d_din, stream));
            }
            break;
        }
        __half* next = delta_[1 - cur].as<__half>();
        matmul(*plans.dinput[l], 1.f, w, delta, next, stream);
        if (f != Activation::None) {
            const bool relu = f == Activation::ReLU;
            const __half* pre = relu ? h_[l - 1].as<__half>() : z_[l - 1].as<__half>();
            FUSEDNGP_CUDA_CHECK(launch_hidden_delta(f, pre, relu, next, (size_t)batch * width_pad_, stream));
        }
        cur = 1 - cur;
    }
    if (d_dweights != nullptr) {
        for (uint32_t l = 0; l <= D; ++l) {
            FUSEDNGP_CUDA_CHECK(launch_unpad_rows(wgrad_.as<float>() + padded_offset(l), fan_out(l), fan_in(l),
                                                  fan_in_pad(l), accumulate, d_dweights + param_offset(l), stream));
        }
    }
}

std::string CublasMlp::describe() const {
    std::ostringstream os;
    os << "CublasMlp " << config_.n_input_dims << " -> " << config_.n_hidden_layers << " x " << config_.width << " -> "
       << config_.n_output_dims << " (activations " << (int)config_.hidden_activation << "/"
       << (int)config_.output_activation << "; padded " << n_in_pad_ << "/" << width_pad_ << "/" << n_out_pad_
       << "), cuBLASLt fp16 GEMMs with fp32 accumulation"
       << (is_relu(config_.hidden_activation) ? " and ReLU epilogue" : "") << ", max batch " << max_batch_;
    return os.str();
}

} // namespace fusedngp::gpu
