// What Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) needs from us before a
// fused MLP kernel is built on it (docs/HOPPER_WGMMA.md): the shared-memory
// matrix descriptor, the operand layouts (no swizzle and 128-byte swizzle,
// K-major and MN-major), A from shared memory or from registers, the
// accumulator fragment layout and the fence / commit / wait protocol. Each
// mode computes D[64*WG x N] = A[64*WG x 256] * B[256 x N] (fp16 in, fp32
// accumulate; N = 64, 128, 256; WG warpgroups share B) and is compared with a
// host reference element by element, so a wrong descriptor field or layout is
// a mismatch, never a pass. The inputs are multiples of 1/8 in [-1, 1]: every
// product and partial sum is exact in fp32, so a correct result has error 0
// and a misplaced element is off by at least 1/64. A negative control (a
// descriptor with its two strides swapped) must fail, or the checker is broken.
//
//   wgmma_probe check   every mode at N = 64, 128, 256 (one block each);
//                       exit 0 only if all pass and the negative control fails
//   wgmma_probe time    the same kernels on many blocks, the K loop repeated
//                       from shared memory: TFLOP/s per mode and N, beside a
//                       plain mma.sync (ldmatrix) kernel on the same data
// Build: nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo bench/wgmma_probe.cu
// (-arch=sm_90a with nvcc 13.0 also ran a plain sm_90 pass that rejects wgmma.)
// One device call: bench/wgmma_probe_run.sh OUTDIR.
#include "../kernels/wgmma_device.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

// The layouts, descriptor, fragment maps and wgmma wrappers under test.
using namespace fusedngp::gpu::wgmma;

constexpr int kK = 256;                 // reduction depth of every probe GEMM
constexpr int kKSteps = kK / 16;        // one wgmma covers k16
constexpr int kChainWidth = 64;         // the chain mode's second layer is [N -> 64]
constexpr float kAccumulatorPoison = 4096.f;  // no correct |D| reaches it (|D| <= 256)

void check_cuda(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
}

// ---------------------------------------------------------------------------
// Kernel plumbing shared by every mode.
// ---------------------------------------------------------------------------
// The host prepares the exact shared-memory image (layouts and swizzle
// applied); each block copies it with ordinary 16-byte stores. Ordinary
// stores are the generic proxy and wgmma reads through the async proxy, so
// each writing thread fences the proxies before the barrier.
__device__ __forceinline__ uint8_t* load_shared_image(uint8_t* smem_raw, const uint4* image, int image_bytes) {
    const uint32_t misalignment = shared_address(smem_raw) & 1023u;
    uint8_t* smem = smem_raw + ((1024u - misalignment) & 1023u);  // the swizzle atoms need 1024-byte alignment
    uint4* dst = reinterpret_cast<uint4*>(smem);
    for (int i = threadIdx.x; i < image_bytes / 16; i += blockDim.x) dst[i] = image[i];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    return smem;
}

__device__ __forceinline__ uint32_t load_half_pair(const __half* p) { return *reinterpret_cast<const uint32_t*>(p); }

// All kKSteps A fragments of this thread's rows, straight from row-major A in
// global memory (what an MLP layer holds after the previous one).
__device__ __forceinline__ void load_a_fragments(const __half* a_rowmajor, int row_base, int thread,
                                                 uint32_t (&a)[kKSteps][4]) {
#pragma unroll
    for (int s = 0; s < kKSteps; ++s)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const RowCol p = a_fragment_position(thread, r);
            a[s][r] = load_half_pair(a_rowmajor + size_t(row_base + p.row) * kK + 16 * s + p.col);
        }
}

template <int NREG>
__device__ __forceinline__ void poison_accumulators(float (&d)[NREG]) {
#pragma unroll
    for (int i = 0; i < NREG; ++i) d[i] = kAccumulatorPoison;  // the first k-step's scale-d = 0 must discard it
}

// The one place that maps accumulator registers to D's (row, column).
template <int NREG>
__device__ __forceinline__ void store_accumulators(const float (&d)[NREG], float* d_out, int row_base, int thread,
                                                   int width) {
#pragma unroll
    for (int i = 0; i < NREG; ++i) {
        const RowCol p = accumulator_position(thread, i);
        d_out[size_t(row_base + p.row) * width + p.col] = d[i];
    }
}

// ---------------------------------------------------------------------------
// The wgmma probe kernel: one mode, N, and WARPGROUPS warpgroups (each owns 64
// rows of A and D; all read the same B).
// ---------------------------------------------------------------------------
enum class Mode {
    SsInterleave,            // A, B from smem, K-major, no swizzle
    SsSw128,                 // A, B from smem, K-major, 128B swizzle
    RsInterleave,            // A from registers, B K-major no swizzle
    RsSw128,                 // A from registers, B K-major 128B swizzle
    RsSw128BMnMajor,         // A from registers, B MN-major 128B swizzle (imm-trans-b = 1)
    SsSw128MnMajor,          // A and B from smem, both MN-major 128B (imm-trans-a = imm-trans-b = 1):
                             // the wgmma training kernel's dW = delta^T h from row-major activation images
    SsSw128AMnMajor,         // A MN-major (trans-a), B K-major 128B: the kernel's narrow dW (x^T, dL/dy^T as B)
    NegativeSwappedStrides,  // SsInterleave with B's LBO and SBO swapped: must FAIL
};

struct ModeTraits {
    bool a_from_smem;
    Layout a_layout;
    Layout b_layout;
    int trans_b;
    bool swap_b_strides;
    int trans_a = 0;  // SS only: 1 = A MN-major
};

__host__ __device__ constexpr ModeTraits mode_traits(Mode mode) {
    switch (mode) {
    case Mode::SsInterleave: return {true, Layout::InterleaveK, Layout::InterleaveK, 0, false};
    case Mode::SsSw128: return {true, Layout::Sw128K, Layout::Sw128K, 0, false};
    case Mode::RsInterleave: return {false, Layout::InterleaveK, Layout::InterleaveK, 0, false};
    case Mode::RsSw128: return {false, Layout::Sw128K, Layout::Sw128K, 0, false};
    case Mode::RsSw128BMnMajor: return {false, Layout::Sw128K, Layout::Sw128MN, 1, false};
    case Mode::SsSw128MnMajor: return {true, Layout::Sw128MN, Layout::Sw128MN, 1, false, 1};
    case Mode::SsSw128AMnMajor: return {true, Layout::Sw128MN, Layout::Sw128K, 0, false, 1};
    case Mode::NegativeSwappedStrides: return {true, Layout::InterleaveK, Layout::InterleaveK, 0, true};
    }
    return {true, Layout::InterleaveK, Layout::InterleaveK, 0, false};
}

__host__ __device__ constexpr int a_tile_bytes() { return kWarpgroupRows * kK * 2; }
// Image: [A tile of warpgroup 0, 1, ...] (smem modes only) [B tile].
__host__ __device__ constexpr int b_region_offset(Mode mode, int warpgroups) {
    return mode_traits(mode).a_from_smem ? warpgroups * a_tile_bytes() : 0;
}

__device__ __forceinline__ DescriptorFields b_descriptor_fields(ModeTraits t) {
    DescriptorFields f = descriptor_fields(t.b_layout, kK);
    if (t.swap_b_strides) return {f.stride_byte_offset, f.leading_byte_offset, f.swizzle_code};
    return f;
}

// The K loop, repeated `reps` times (1 for the check): per repetition one
// fence, kKSteps wgmma into the same accumulators, one commit group; up to
// one group stays in flight across repetitions.
template <int N, Mode MODE>
__device__ __forceinline__ void k_loop_a_from_smem(float (&d)[N / 2], uint32_t a_tile, uint32_t b_tile, int reps) {
    constexpr ModeTraits t = mode_traits(MODE);
    const uint64_t desc_a = make_descriptor(a_tile, descriptor_fields(t.a_layout, kK));
    const uint64_t desc_b = make_descriptor(b_tile, b_descriptor_fields(t));
    for (int rep = 0; rep < reps; ++rep) {
        wgmma_fence();
#pragma unroll
        for (int s = 0; s < kKSteps; ++s)
            wgmma_ss<t.trans_a, t.trans_b>(d, desc_a + (kstep_offset(t.a_layout, s, kWarpgroupRows) >> 4),
                                desc_b + (kstep_offset(t.b_layout, s, N) >> 4), rep > 0 || s > 0);
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    pin_registers(d);
}

template <int N, Mode MODE>
__device__ __forceinline__ void k_loop_a_from_registers(float (&d)[N / 2], const __half* a_rowmajor, int row_base,
                                                        int thread, uint32_t b_tile, int reps) {
    constexpr ModeTraits t = mode_traits(MODE);
    uint32_t a[kKSteps][4];
    load_a_fragments(a_rowmajor, row_base, thread, a);
    const uint64_t desc_b = make_descriptor(b_tile, b_descriptor_fields(t));
    for (int rep = 0; rep < reps; ++rep) {
        wgmma_fence();
#pragma unroll
        for (int s = 0; s < kKSteps; ++s)
            wgmma_rs<t.trans_b>(d, a[s], desc_b + (kstep_offset(t.b_layout, s, N) >> 4), rep > 0 || s > 0);
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    pin_registers(d);
    pin_registers(a);
}

// Every probe kernel has this signature (unused arguments are ignored), so
// the host drives them through one table. Only block 0 stores D: the others
// (timing) compute the same tile.
template <int N, Mode MODE, int WARPGROUPS>
__global__ void __launch_bounds__(kWarpgroupThreads* WARPGROUPS, 1)
    wgmma_probe_kernel(const uint4* image, int image_bytes, const __half* a_rowmajor, float* d_out, int reps) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = load_shared_image(smem_raw, image, image_bytes);
    const int warpgroup = threadIdx.x / kWarpgroupThreads, thread = threadIdx.x % kWarpgroupThreads;
    const int row_base = warpgroup * kWarpgroupRows;
    const uint32_t b_tile = shared_address(smem) + b_region_offset(MODE, WARPGROUPS);
    float d[N / 2];
    poison_accumulators(d);
    if constexpr (mode_traits(MODE).a_from_smem)
        k_loop_a_from_smem<N, MODE>(d, shared_address(smem) + warpgroup * a_tile_bytes(), b_tile, reps);
    else
        k_loop_a_from_registers<N, MODE>(d, a_rowmajor, row_base, thread, b_tile, reps);
    if (blockIdx.x == 0) store_accumulators(d, d_out, row_base, thread, N);
}

// ---------------------------------------------------------------------------
// Chain: two MLP layers without leaving registers. Layer 1 (A from
// registers, B1 [256 -> N], 128B K-major) leaves D1 in accumulators; those
// become layer 2's A fragments as fp16 (accumulator chunks 2j and 2j+1 are
// exactly A's k-step j), then D2 = fp16(D1) * B2 [N -> 64].
// ---------------------------------------------------------------------------
template <int N>
__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    wgmma_chain_kernel(const uint4* image, int image_bytes, const __half* a_rowmajor, float* d_out, int) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = load_shared_image(smem_raw, image, image_bytes);
    const int thread = threadIdx.x;
    const uint32_t b1_tile = shared_address(smem), b2_tile = b1_tile + N * kK * 2;
    float d1[N / 2];
    poison_accumulators(d1);
    k_loop_a_from_registers<N, Mode::RsSw128>(d1, a_rowmajor, 0, thread, b1_tile, 1);

    uint32_t a2[N / 16][4];
    accumulators_to_a_fragments(d1, a2);
    float d2[kChainWidth / 2];
    poison_accumulators(d2);
    const uint64_t desc_b2 = make_descriptor(b2_tile, descriptor_fields(Layout::Sw128K, N));
    wgmma_fence();  // a2 and d2 were written by ordinary instructions
#pragma unroll
    for (int s = 0; s < N / 16; ++s)
        wgmma_rs<0>(d2, a2[s], desc_b2 + (kstep_offset(Layout::Sw128K, s, kChainWidth) >> 4), s > 0);
    wgmma_commit();
    wgmma_wait<0>();
    pin_registers(d2);
    pin_registers(a2);
    store_accumulators(d2, d_out, 0, thread, kChainWidth);
}

// ---------------------------------------------------------------------------
// The mma.sync comparison: the same D[64 x N] += A * B from the same
// 128B-swizzled K-major smem image (SsSw128's), 4 warps of 16 rows each,
// ldmatrix for A and B every k-step. Its accumulators use the same layout as
// wgmma's (a warp's m16n8 tiles side by side), so the same store applies.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

__device__ __forceinline__ void mma_m16n8k16(float* c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ldmatrix x4 row addresses: lanes 8j..8j+7 address the rows of matrix j.
// Within a 128B-swizzled K-major tile only k's position inside its 64-wide
// block meets the XOR, so each lane needs 4 swizzled addresses (k-step s % 4)
// per operand; the k block (s / 4) and B's n16 pair add bits >= 10, outside
// the swizzle, and become immediate offsets.
struct LdmatrixAddresses {
    uint32_t a[4], b[4];
};

template <int N>
__device__ __forceinline__ LdmatrixAddresses ldmatrix_addresses(uint32_t a_tile, uint32_t b_tile, int lane, int warp) {
    LdmatrixAddresses r;
    const int a_row = 16 * warp + lane % 8 + 8 * ((lane / 8) % 2);  // matrices: rows 0-7 | 8-15, k 0-7 | 8-15
    const int b_n = lane % 8 + 8 * (lane / 16);                     // matrices: n 0-7 k 0-7 | k 8-15, n 8-15 ...
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        r.a[j] = a_tile + tile_offset(Layout::Sw128K, a_row, 16 * j + 8 * (lane / 16), kWarpgroupRows, kK);
        r.b[j] = b_tile + tile_offset(Layout::Sw128K, b_n, 16 * j + 8 * ((lane / 8) % 2), N, kK);
    }
    return r;
}

template <int N>
__device__ __forceinline__ void mma_sync_k_step(float (&d)[N / 2], const LdmatrixAddresses& addr, int s) {
    uint32_t a[4];
    ldmatrix_x4(a, addr.a[s % 4] + (s / 4) * kWarpgroupRows * 128);
#pragma unroll
    for (int pair = 0; pair < N / 16; ++pair) {  // two n8 chunks per ldmatrix x4
        uint32_t b[4];
        ldmatrix_x4(b, addr.b[s % 4] + (s / 4) * N * 128 + pair * 2048);
        mma_m16n8k16(&d[8 * pair], a, b[0], b[1]);
        mma_m16n8k16(&d[8 * pair + 4], a, b[2], b[3]);
    }
}

template <int N>
__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    mma_sync_probe_kernel(const uint4* image, int image_bytes, const __half*, float* d_out, int reps) {
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint8_t* smem = load_shared_image(smem_raw, image, image_bytes);
    const uint32_t a_tile = shared_address(smem), b_tile = a_tile + a_tile_bytes();
    const LdmatrixAddresses addr = ldmatrix_addresses<N>(a_tile, b_tile, threadIdx.x % 32, threadIdx.x / 32);
    float d[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
    for (int rep = 0; rep < reps; ++rep)
#pragma unroll
        for (int s = 0; s < kKSteps; ++s) mma_sync_k_step<N>(d, addr, s);
    if (blockIdx.x == 0) store_accumulators(d, d_out, 0, threadIdx.x, N);
}

// ---------------------------------------------------------------------------
// Host side: the cases, their shared-memory images and references.
// ---------------------------------------------------------------------------
using ProbeKernel = void (*)(const uint4*, int, const __half*, float*, int);

enum class Kind { Wgmma, Chain, MmaSync };

struct Case {
    const char* name;
    int n;
    int warpgroups;
    Kind kind;
    Mode mode;
    bool expect_failure;
    ProbeKernel kernel;
};

int output_width(const Case& c) { return c.kind == Kind::Chain ? kChainWidth : c.n; }
int output_rows(const Case& c) { return c.warpgroups * kWarpgroupRows; }

template <int N>
void add_cases(std::vector<Case>& cases) {
    cases.push_back({"ss_interleave", N, 1, Kind::Wgmma, Mode::SsInterleave, false,
                     wgmma_probe_kernel<N, Mode::SsInterleave, 1>});
    cases.push_back({"ss_sw128", N, 1, Kind::Wgmma, Mode::SsSw128, false, wgmma_probe_kernel<N, Mode::SsSw128, 1>});
    cases.push_back({"rs_interleave", N, 1, Kind::Wgmma, Mode::RsInterleave, false,
                     wgmma_probe_kernel<N, Mode::RsInterleave, 1>});
    cases.push_back({"rs_sw128", N, 1, Kind::Wgmma, Mode::RsSw128, false, wgmma_probe_kernel<N, Mode::RsSw128, 1>});
    cases.push_back({"rs_sw128_b_mn_major", N, 1, Kind::Wgmma, Mode::RsSw128BMnMajor, false,
                     wgmma_probe_kernel<N, Mode::RsSw128BMnMajor, 1>});
    cases.push_back({"ss_sw128_ab_mn_major", N, 2, Kind::Wgmma, Mode::SsSw128MnMajor, false,
                     wgmma_probe_kernel<N, Mode::SsSw128MnMajor, 2>});
    cases.push_back({"ss_sw128", N, 2, Kind::Wgmma, Mode::SsSw128, false, wgmma_probe_kernel<N, Mode::SsSw128, 2>});
    cases.push_back({"rs_sw128", N, 2, Kind::Wgmma, Mode::RsSw128, false, wgmma_probe_kernel<N, Mode::RsSw128, 2>});
    cases.push_back({"chain_rs_sw128", N, 1, Kind::Chain, Mode::RsSw128, false, wgmma_chain_kernel<N>});
    cases.push_back({"mma_sync_sw128", N, 1, Kind::MmaSync, Mode::SsSw128, false, mma_sync_probe_kernel<N>});
}

// N = 16 and 32: the training kernel's narrow products (the output layer and
// dL/dinput: A from registers, B K-major with 16 / 32 rows; dW_0 and the
// output layer's dW: A MN-major, B K-major). Checked, not timed.
template <int N>
void add_narrow_cases(std::vector<Case>& cases) {
    cases.push_back({"rs_sw128", N, 1, Kind::Wgmma, Mode::RsSw128, false, wgmma_probe_kernel<N, Mode::RsSw128, 1>});
    cases.push_back({"ss_sw128_a_mn_major", N, 2, Kind::Wgmma, Mode::SsSw128AMnMajor, false,
                     wgmma_probe_kernel<N, Mode::SsSw128AMnMajor, 2>});
}

std::vector<Case> all_cases() {
    std::vector<Case> cases;
    add_narrow_cases<16>(cases);
    add_narrow_cases<32>(cases);
    add_cases<64>(cases);
    add_cases<128>(cases);
    add_cases<256>(cases);
    // Last, so that a fault it might cause cannot hide the others' results.
    cases.push_back({"negative_swapped_strides", 64, 1, Kind::Wgmma, Mode::NegativeSwappedStrides, true,
                     wgmma_probe_kernel<64, Mode::NegativeSwappedStrides, 1>});
    return cases;
}

// Inputs: A [128 x 256], B [256 x 256] (math orientation, B[k][n]), B2 [256 x 64];
// each case uses the leading block it needs. Values are k/8, k in [-8, 8].
struct HostData {
    std::vector<__half> a, b, b2;
};

std::vector<__half> random_halves(size_t count, std::mt19937& rng) {
    std::uniform_int_distribution<int> eighths(-8, 8);
    std::vector<__half> v(count);
    for (auto& x : v) x = __float2half(eighths(rng) / 8.f);
    return v;
}

HostData make_host_data() {
    std::mt19937 rng(20240611u);
    HostData h;
    h.a = random_halves(size_t(2 * kWarpgroupRows) * kK, rng);
    h.b = random_halves(size_t(kK) * 256, rng);
    h.b2 = random_halves(size_t(256) * kChainWidth, rng);
    return h;
}

float a_at(const HostData& h, int m, int k) { return __half2float(h.a[size_t(m) * kK + k]); }
float b_at(const HostData& h, int k, int n) { return __half2float(h.b[size_t(k) * 256 + n]); }
float b2_at(const HostData& h, int k, int n) { return __half2float(h.b2[size_t(k) * kChainWidth + n]); }

// Writes element (mn, k) = value(mn, k) of a rows_mn x cols_k tile at `base`.
template <class Value>
void place_tile(std::vector<uint8_t>& image, size_t base, Layout layout, int rows_mn, int cols_k, Value value) {
    for (int mn = 0; mn < rows_mn; ++mn)
        for (int k = 0; k < cols_k; ++k) {
            const __half x = __float2half(value(mn, k));
            std::memcpy(&image[base + tile_offset(layout, mn, k, rows_mn, cols_k)], &x, sizeof(x));
        }
}

std::vector<uint8_t> build_image(const Case& c, const HostData& h) {
    const int n = c.n;
    auto b_value = [&](int mn, int k) { return b_at(h, k, mn); };  // B tile rows are n
    if (c.kind == Kind::Chain) {
        std::vector<uint8_t> image(size_t(n) * kK * 2 + size_t(kChainWidth) * n * 2);
        place_tile(image, 0, Layout::Sw128K, n, kK, b_value);
        place_tile(image, size_t(n) * kK * 2, Layout::Sw128K, kChainWidth, n,
                   [&](int mn, int k) { return b2_at(h, k, mn); });
        return image;
    }
    const ModeTraits t = mode_traits(c.mode);
    const int warpgroups = c.kind == Kind::MmaSync ? 1 : c.warpgroups;
    const size_t b_offset = c.kind == Kind::MmaSync ? a_tile_bytes() : b_region_offset(c.mode, warpgroups);
    std::vector<uint8_t> image(b_offset + size_t(n) * kK * 2);
    if (t.a_from_smem || c.kind == Kind::MmaSync)
        for (int g = 0; g < warpgroups; ++g)
            place_tile(image, size_t(g) * a_tile_bytes(), t.a_layout, kWarpgroupRows, kK,
                       [&](int mn, int k) { return a_at(h, g * kWarpgroupRows + mn, k); });
    place_tile(image, b_offset, t.b_layout, n, kK, b_value);
    return image;
}

struct Reference {
    std::vector<double> value;      // D
    std::vector<double> magnitude;  // sum |a b| per element: the scale of rounding error
};

Reference reference(const Case& c, const HostData& h) {
    const int rows = output_rows(c), width = output_width(c);
    Reference r{std::vector<double>(size_t(rows) * width), std::vector<double>(size_t(rows) * width)};
    for (int m = 0; m < rows; ++m) {
        std::vector<double> d1(c.n);
        for (int n = 0; n < c.n; ++n)
            for (int k = 0; k < kK; ++k) d1[n] += double(a_at(h, m, k)) * b_at(h, k, n);
        for (int n = 0; n < width; ++n) {
            double sum = 0, magnitude = 0;
            if (c.kind == Kind::Chain) {
                for (int j = 0; j < c.n; ++j) {  // layer 2 sees fp16(D1), rounded as cvt.rn does
                    const double x = __half2float(__float2half_rn(float(d1[j]))) * double(b2_at(h, j, n));
                    sum += x;
                    magnitude += std::fabs(x);
                }
            } else {
                sum = d1[n];
                for (int k = 0; k < kK; ++k) magnitude += std::fabs(double(a_at(h, m, k)) * b_at(h, k, n));
            }
            r.value[size_t(m) * width + n] = sum;
            r.magnitude[size_t(m) * width + n] = magnitude;
        }
    }
    return r;
}

// Device buffers for one case: its smem image and output.
struct DeviceCase {
    uint4* image = nullptr;
    int image_bytes = 0;
    float* d_out = nullptr;
    size_t out_count = 0;
};

DeviceCase upload_case(const Case& c, const HostData& h) {
    const std::vector<uint8_t> image = build_image(c, h);
    DeviceCase dc;
    dc.image_bytes = int(image.size());
    dc.out_count = size_t(output_rows(c)) * output_width(c);
    check_cuda(cudaMalloc(&dc.image, image.size()), "malloc image");
    check_cuda(cudaMemcpy(dc.image, image.data(), image.size(), cudaMemcpyHostToDevice), "upload image");
    check_cuda(cudaMalloc(&dc.d_out, dc.out_count * sizeof(float)), "malloc d");
    check_cuda(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dc.image_bytes + 1024),
               "smem attribute");
    return dc;
}

void free_case(DeviceCase& dc) {
    cudaFree(dc.image);
    cudaFree(dc.d_out);
}

void launch(const Case& c, const DeviceCase& dc, const __half* a_device, int blocks, int reps) {
    c.kernel<<<blocks, kWarpgroupThreads * c.warpgroups, dc.image_bytes + 1024>>>(dc.image, dc.image_bytes, a_device,
                                                                                   dc.d_out, reps);
}

const char* layout_name(Layout l) {
    switch (l) {
    case Layout::InterleaveK: return "K-major none";
    case Layout::Sw128K: return "K-major 128B";
    case Layout::Sw128MN: return "MN-major 128B";
    }
    return "?";
}

void print_case(const Case& c) {
    std::printf("%-26s N=%-3d wg=%d ", c.name, c.n, c.warpgroups);
    if (c.kind == Kind::MmaSync) {
        std::printf("[mma.sync, A/B K-major 128B]           ");
        return;
    }
    const ModeTraits t = mode_traits(c.mode);
    std::printf("[A %-13s B %-13s ta=%d tb=%d] ", t.a_from_smem ? layout_name(t.a_layout) : "registers",
                layout_name(t.b_layout), t.trans_a, t.trans_b);
}

// ---------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------
struct Comparison {
    size_t mismatches = 0, unwritten = 0;
    double max_abs = 0, max_rel = 0;
};

// The allowed error: exact modes are exact (any layout error is >= 1/64);
// the chain's second layer rounds in fp32 (bound a few ulp of sum |a b|).
double tolerance(const Case& c, double magnitude) { return c.kind == Kind::Chain ? 1e-4 * magnitude + 1e-6 : 1e-3; }

Comparison compare(const Case& c, const std::vector<float>& got, const Reference& want) {
    Comparison r;
    const int width = output_width(c);
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - want.value[i]);
        if (std::isnan(got[i])) ++r.unwritten;
        if (!(err <= tolerance(c, want.magnitude[i]))) {
            if (r.mismatches < 4 && !c.expect_failure)
                std::printf("\n    mismatch row %zu col %zu: got %.6g want %.6g", i / width, i % width, got[i],
                            want.value[i]);
            ++r.mismatches;
        }
        if (!std::isnan(got[i])) {
            r.max_abs = std::max(r.max_abs, err);
            r.max_rel = std::max(r.max_rel, err / std::max(1.0, std::fabs(want.value[i])));
        }
    }
    return r;
}

// Runs one case once on one block; true when the outcome is the expected one.
bool check_case(const Case& c, const HostData& h, const __half* a_device) {
    DeviceCase dc = upload_case(c, h);
    check_cuda(cudaMemset(dc.d_out, 0xFF, dc.out_count * sizeof(float)), "poison d");  // NaN: unwritten fails
    launch(c, dc, a_device, 1, 1);
    check_cuda(cudaGetLastError(), c.name);
    check_cuda(cudaDeviceSynchronize(), c.name);
    std::vector<float> got(dc.out_count);
    check_cuda(cudaMemcpy(got.data(), dc.d_out, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "download d");
    free_case(dc);
    print_case(c);
    const Comparison r = compare(c, got, reference(c, h));
    const bool passed = r.mismatches == 0;
    if (!c.expect_failure && r.mismatches) std::printf("\n    ");
    std::printf("max_abs %.3g max_rel %.3g mismatches %zu/%zu unwritten %zu  ", r.max_abs, r.max_rel, r.mismatches,
                got.size(), r.unwritten);
    if (c.expect_failure)
        std::printf("%s\n", passed ? "FAIL (negative control passed: the check cannot see errors)"
                                   : "PASS (negative control mismatched, as it must)");
    else
        std::printf("%s\n", passed ? "PASS" : "FAIL");
    return passed != c.expect_failure;
}

int run_check(const HostData& h, const __half* a_device) {
    int failures = 0, count = 0;
    for (const Case& c : all_cases()) {
        ++count;
        if (!check_case(c, h, a_device)) ++failures;
    }
    std::printf("check: %d of %d cases as expected%s\n", count - failures, count, failures ? " -- FAIL" : " -- PASS");
    return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// emulate (host only, no GPU): reads each case's image the way we understand
// the hardware to read a descriptor (the PTX canonical layouts, written here
// from the descriptor fields alone, independent of tile_offset) and compares
// with the reference. A pass means image, descriptor fields and k-step
// offsets agree with that reading; only the device run says the reading is
// the hardware's.
// ---------------------------------------------------------------------------
struct OperandView {
    const std::vector<uint8_t>* image;
    uint32_t start;  // relative to the 1024-byte aligned image base
    DescriptorFields fields;
    bool mn_major;
};

// Byte address of element (mn, k), k < 16, of one wgmma operand.
uint32_t descriptor_address(const OperandView& v, int mn, int k) {
    const DescriptorFields& f = v.fields;
    uint32_t address;
    if (f.swizzle_code == 0 && !v.mn_major)  // core matrix: 8 mn rows of 16 bytes
        address = v.start + (mn / 8) * f.stride_byte_offset + (mn % 8) * 16 + (k / 8) * f.leading_byte_offset + (k % 8) * 2;
    else if (f.swizzle_code == 0)  // core matrix: 8 k rows of 16 bytes
        address = v.start + (mn / 8) * f.stride_byte_offset + (mn % 8) * 2 + (k / 8) * f.leading_byte_offset + (k % 8) * 16;
    else if (!v.mn_major)  // 128-byte rows of k, 8-row atoms SBO apart
        address = v.start + (mn / 8) * f.stride_byte_offset + (mn % 8) * 128 + k * 2;
    else  // 128-byte rows of 64 mn, 64-wide blocks LBO apart, 8-k atoms SBO apart
        address = v.start + (mn / 64) * f.leading_byte_offset + (mn % 64) * 2 + (k / 8) * f.stride_byte_offset + (k % 8) * 128;
    return f.swizzle_code == 1 ? swizzle_128b(address) : address;
}

double read_operand(const OperandView& v, int mn, int k) {
    const uint32_t address = descriptor_address(v, mn, k);
    if (address + 2 > v.image->size()) return std::nan("");  // the device would read outside the tile
    __half x;
    std::memcpy(&x, &(*v.image)[address], sizeof(x));
    return __half2float(x);
}

// One warpgroup's D[64 x n] over `steps` k16 steps; a(m, k) gives A when it
// comes from registers, a_view (a_from_smem) otherwise.
template <class AValue>
std::vector<double> emulate_wgmma(int n, int steps, bool a_from_smem, const OperandView& a_view, AValue a,
                                  const OperandView& b_view, Layout a_layout, Layout b_layout) {
    std::vector<double> d(size_t(kWarpgroupRows) * n, 0.0);
    for (int s = 0; s < steps; ++s) {
        OperandView as = a_view, bs = b_view;
        as.start += kstep_offset(a_layout, s, kWarpgroupRows);
        bs.start += kstep_offset(b_layout, s, n);
        for (int m = 0; m < kWarpgroupRows; ++m)
            for (int j = 0; j < n; ++j)
                for (int k = 0; k < 16; ++k)
                    d[size_t(m) * n + j] += (a_from_smem ? read_operand(as, m, k) : a(m, 16 * s + k)) * read_operand(bs, j, k);
    }
    return d;
}

std::vector<float> emulate_case(const Case& c, const HostData& h) {
    const std::vector<uint8_t> image = build_image(c, h);
    const ModeTraits t = mode_traits(c.mode);
    DescriptorFields b_fields = descriptor_fields(t.b_layout, kK);
    if (t.swap_b_strides) b_fields = {b_fields.stride_byte_offset, b_fields.leading_byte_offset, b_fields.swizzle_code};
    std::vector<float> out;
    for (int g = 0; g < c.warpgroups; ++g) {
        const OperandView a_view{&image, uint32_t(g * a_tile_bytes()), descriptor_fields(t.a_layout, kK), t.trans_a == 1};
        const OperandView b_view{&image, uint32_t(b_region_offset(c.mode, c.warpgroups)), b_fields, t.trans_b == 1};
        auto a_value = [&](int m, int k) { return double(a_at(h, g * kWarpgroupRows + m, k)); };
        std::vector<double> d =
            emulate_wgmma(c.n, kKSteps, t.a_from_smem, a_view, a_value, b_view, t.a_layout, t.b_layout);
        if (c.kind == Kind::Chain) {  // layer 2: A = fp16(D1) from registers, B2 after B1
            const OperandView b2_view{&image, uint32_t(c.n * kK * 2), descriptor_fields(Layout::Sw128K, c.n), false};
            auto a2 = [&](int m, int k) { return double(__half2float(__float2half_rn(float(d[size_t(m) * c.n + k])))); };
            d = emulate_wgmma(kChainWidth, c.n / 16, false, b2_view, a2, b2_view, Layout::Sw128K, Layout::Sw128K);
        }
        out.insert(out.end(), d.begin(), d.end());
    }
    return out;
}

// The fragment maps: each covers its tile exactly once, and layer 2's A
// fragment of k-step j is layer 1's accumulator registers 8j..8j+7.
bool fragment_maps_consistent(int n) {
    std::vector<int> d_hits(size_t(kWarpgroupRows) * n, 0), a_hits(size_t(kWarpgroupRows) * 16, 0);
    bool chain_ok = true;
    for (int t = 0; t < kWarpgroupThreads; ++t) {
        for (int i = 0; i < n / 2; ++i) {
            const RowCol p = accumulator_position(t, i);
            ++d_hits[size_t(p.row) * n + p.col];
        }
        for (int r = 0; r < 4; ++r) {
            const RowCol p = a_fragment_position(t, r);
            ++a_hits[size_t(p.row) * 16 + p.col];
            ++a_hits[size_t(p.row) * 16 + p.col + 1];
            for (int j = 0; j < n / 16; ++j) {
                const RowCol low = accumulator_position(t, 8 * j + 2 * r), high = accumulator_position(t, 8 * j + 2 * r + 1);
                chain_ok = chain_ok && low.row == p.row && low.col == 16 * j + p.col && high.row == p.row &&
                           high.col == 16 * j + p.col + 1;
            }
        }
    }
    auto once = [](const std::vector<int>& hits) { return std::all_of(hits.begin(), hits.end(), [](int x) { return x == 1; }); };
    return once(d_hits) && once(a_hits) && chain_ok;
}

int run_emulate(const HostData& h) {
    int failures = 0, count = 0;
    for (int n : {64, 128, 256}) {
        ++count;
        const bool ok = fragment_maps_consistent(n);
        std::printf("fragment maps N=%d (D once each, A once each, D chunks 2j,2j+1 = A step j): %s\n", n,
                    ok ? "as expected" : "UNEXPECTED");
        if (!ok) ++failures;
    }
    for (const Case& c : all_cases()) {
        if (c.kind == Kind::MmaSync) continue;  // plain ldmatrix addressing, nothing to emulate
        ++count;
        print_case(c);
        const Comparison r = compare(c, emulate_case(c, h), reference(c, h));
        const bool passed = r.mismatches == 0;
        std::printf("max_abs %.3g mismatches %zu  %s\n", r.max_abs, r.mismatches,
                    passed != c.expect_failure ? "as expected" : "UNEXPECTED");
        if (passed == c.expect_failure) ++failures;
    }
    std::printf("emulate: %d of %d cases as expected%s\n", count - failures, count, failures ? " -- FAIL" : " -- PASS");
    return failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// time
// ---------------------------------------------------------------------------
constexpr double kMmaSyncRoofTflops = 643.0;  // our mma.sync measurement on this H200
constexpr double kCublasRoofTflops = 790.0;   // cuBLAS fp16 on this H200

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double time_launches_ms(const Case& c, const DeviceCase& dc, const __half* a_device, int blocks, int reps) {
    cudaEvent_t start, stop;
    check_cuda(cudaEventCreate(&start), "event");
    check_cuda(cudaEventCreate(&stop), "event");
    launch(c, dc, a_device, blocks, reps);  // warm-up
    check_cuda(cudaGetLastError(), c.name);
    std::vector<double> ms;
    for (int run = 0; run < 7; ++run) {
        check_cuda(cudaEventRecord(start), "record");
        launch(c, dc, a_device, blocks, reps);
        check_cuda(cudaEventRecord(stop), "record");
        check_cuda(cudaEventSynchronize(stop), c.name);
        float t = 0;
        check_cuda(cudaEventElapsedTime(&t, start, stop), "elapsed");
        ms.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return median(ms);
}

// Returns achieved TFLOP/s. Grid: 4 full waves of resident blocks; reps so
// that one launch is ~5 TFLOP (several ms), which dwarfs the image load.
double time_case(const Case& c, const HostData& h, const __half* a_device, int sms) {
    DeviceCase dc = upload_case(c, h);
    int per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c.kernel, kWarpgroupThreads * c.warpgroups,
                                                             dc.image_bytes + 1024),
               "occupancy");
    const int blocks = std::max(1, per_sm) * sms * 4;
    const double flop_per_rep = 2.0 * output_rows(c) * c.n * kK;
    const int reps = std::max(1, int(5e12 / (flop_per_rep * blocks)));
    const double ms = time_launches_ms(c, dc, a_device, blocks, reps);
    free_case(dc);
    const double tflops = flop_per_rep * blocks * reps / (ms * 1e-3) / 1e12;
    print_case(c);
    std::printf("%2d blk/SM  %4d warps/SM  reps %5d  %8.3f ms  %6.1f TFLOP/s  %3.0f%% of mma.sync roof, %3.0f%% of "
                "cuBLAS\n",
                per_sm, per_sm * 4 * c.warpgroups, reps, ms, tflops, 100 * tflops / kMmaSyncRoofTflops,
                100 * tflops / kCublasRoofTflops);
    return tflops;
}

int run_time(const HostData& h, const __half* a_device, int sms) {
    std::vector<double> mma_sync_tflops(3, 0), best_wgmma(3, 0);
    for (const Case& c : all_cases()) {
        if (c.expect_failure || c.kind == Kind::Chain || c.n < 64) continue;
        const double tflops = time_case(c, h, a_device, sms);
        const int slot = c.n == 64 ? 0 : c.n == 128 ? 1 : 2;
        if (c.kind == Kind::MmaSync)
            mma_sync_tflops[slot] = tflops;
        else
            best_wgmma[slot] = std::max(best_wgmma[slot], tflops);
    }
    for (int slot = 0; slot < 3; ++slot)
        std::printf("N=%-3d best wgmma %.1f TFLOP/s, mma.sync (same data, same call) %.1f TFLOP/s: ratio %.2f\n",
                    64 << slot, best_wgmma[slot], mma_sync_tflops[slot], best_wgmma[slot] / mma_sync_tflops[slot]);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command != "check" && command != "time" && command != "emulate") {
        std::fprintf(stderr, "usage: %s check|time|emulate\n", argv[0]);
        return 2;
    }
    if (command == "emulate") return run_emulate(make_host_data());
    cudaDeviceProp prop;
    check_cuda(cudaGetDeviceProperties(&prop, 0), "device properties");
    std::printf("device: %s, sm_%d%d, %d SMs, %zu bytes smem per block (opt-in)\n", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, size_t(prop.sharedMemPerBlockOptin));
    if (prop.major != 9) {
        std::fprintf(stderr, "wgmma needs compute capability 9.0 (built for sm_90a only)\n");
        return 2;
    }
    const HostData h = make_host_data();
    __half* a_device = nullptr;
    check_cuda(cudaMalloc(&a_device, h.a.size() * sizeof(__half)), "malloc a");
    check_cuda(cudaMemcpy(a_device, h.a.data(), h.a.size() * sizeof(__half), cudaMemcpyHostToDevice), "upload a");
    const int rc = command == "check" ? run_check(h, a_device) : run_time(h, a_device, prop.multiProcessorCount);
    cudaFree(a_device);
    return rc;
}
