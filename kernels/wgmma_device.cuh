// Hopper warpgroup MMA (wgmma.mma_async, sm_90a): the shared-memory operand
// layouts, the matrix descriptor, the register fragment maps and the
// fence / commit / wait protocol, as docs/HOPPER_WGMMA.md describes them.
// One copy for bench/wgmma_probe.cu (which checks these rules on the device)
// and the wgmma training kernel (kernels/fused_mlp_wgmma_device.cuh), so the
// kernel runs on exactly the rules the probe tested.
//
// The layout helpers are __host__ __device__ (the probe's host emulation and
// the tests use them); the wgmma wrappers need sm_90a and compile to nothing
// useful elsewhere: callers guard them with FUSEDNGP_WGMMA_AVAILABLE.
#pragma once

#include <cuda_fp16.h>
#include <cstdint>
#include <cstring>

// True in device code built for sm_90a (the arch-specific target that has
// wgmma); false on the host and for every other target.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FUSEDNGP_WGMMA_AVAILABLE 1
#else
#define FUSEDNGP_WGMMA_AVAILABLE 0
#endif

// `#pragma unroll` for the device pass only: the host compiler (these
// helpers are __host__ __device__) would warn about an unknown pragma.
#if defined(__CUDA_ARCH__)
#define FUSEDNGP_UNROLL _Pragma("unroll")
#else
#define FUSEDNGP_UNROLL
#endif

namespace fusedngp::gpu::wgmma {

constexpr int kWarpgroupRows = 64;      // one wgmma covers m64
constexpr int kWarpgroupThreads = 128;  // 4 consecutive warps

// ---------------------------------------------------------------------------
// Shared-memory operand layouts. An operand tile has MN rows (M for A, N for
// B) and K columns, fp16. "K-major": consecutive k of one row are adjacent
// (A row-major [m][k]; B stored as [n][k], i.e. the MLP weights W[out][in]).
// "MN-major": consecutive m or n of one k are adjacent (W[out][in] read as
// B[k = out][n = in], the backward pass dX = dY * W).
// ---------------------------------------------------------------------------
enum class Layout {
    InterleaveK,  // no swizzle: 8x8 core matrices (8 rows of 16 bytes, 128 contiguous bytes)
    Sw128K,       // 128-byte swizzle, K-major: 8-row x 64-k atoms of 1024 bytes
    Sw128MN,      // 128-byte swizzle, MN-major: 8-k x 64-mn atoms of 1024 bytes
};

// The 128-byte swizzle as the hardware applies it to a shared address: the
// 16-byte chunk index (bits 4-6) XOR the 128-byte row index (bits 7-9). Our
// offsets are relative to a 1024-byte aligned base, so the relative offset's
// bits are the absolute address's.
__host__ __device__ constexpr uint32_t swizzle_128b(uint32_t offset) { return offset ^ (((offset >> 7) & 7u) << 4); }

// Byte offset of element (mn, k) in a tile of rows_mn x cols_k. Note that the
// Sw128K offset of (mn, k) in a rows_mn x cols_k tile equals the Sw128MN
// offset of (mn' = k, k' = mn) in a cols_k x rows_mn tile: one image serves as
// K-major operand in one product and MN-major (transposed) in another.
__host__ __device__ constexpr uint32_t tile_offset(Layout layout, int mn, int k, int rows_mn, int cols_k) {
    switch (layout) {
    case Layout::InterleaveK:  // each 8-row strip holds its K/8 core matrices side by side
        return (mn / 8) * (cols_k / 8) * 128 + (k / 8) * 128 + (mn % 8) * 16 + (k % 8) * 2;
    case Layout::Sw128K:  // 64-wide k blocks, each rows_mn x 128 bytes; 8-row atoms 1024 bytes apart
        return swizzle_128b((k / 64) * rows_mn * 128 + (mn / 8) * 1024 + (mn % 8) * 128 + (k % 64) * 2);
    case Layout::Sw128MN:  // 64-wide mn blocks, each cols_k x 128 bytes; 8-k atoms 1024 bytes apart
        return swizzle_128b((mn / 64) * cols_k * 128 + (k / 8) * 1024 + (k % 8) * 128 + (mn % 64) * 2);
    }
    return 0;
}

struct DescriptorFields {
    uint32_t leading_byte_offset;  // LBO
    uint32_t stride_byte_offset;   // SBO
    uint32_t swizzle_code;         // bits 62-63: 0 none, 1 128B, 2 64B, 3 32B
};

// What the descriptor says about a tile laid out by tile_offset. K-major no
// swizzle: LBO = between the two core matrices of one k16 (k 0-7 | 8-15),
// SBO = between 8-row groups. K-major 128B: one k16 lies inside a 128-byte
// row, LBO is not used (16 bytes by convention), SBO = between 8-row atoms.
// MN-major 128B: LBO = between 64-wide mn blocks, SBO = between 8-k atoms.
__host__ __device__ constexpr DescriptorFields descriptor_fields(Layout layout, int cols_k) {
    switch (layout) {
    case Layout::InterleaveK: return {128u, uint32_t(cols_k / 8) * 128u, 0u};
    case Layout::Sw128K: return {16u, 1024u, 1u};
    case Layout::Sw128MN: return {uint32_t(cols_k) * 128u, 1024u, 1u};
    }
    return {0u, 0u, 0u};
}

// Bytes from the tile's start to k-step `step` (k = 16 * step), added to the
// descriptor's start address. Inside a 128B-swizzled K-major atom the start
// moves by 32 bytes per k16 (the unswizzled address: the hardware applies the
// XOR to the address it forms, which is why atoms must be 1024-byte aligned).
__host__ __device__ constexpr uint32_t kstep_offset(Layout layout, int step, int rows_mn) {
    switch (layout) {
    case Layout::InterleaveK: return uint32_t(step) * 256u;
    case Layout::Sw128K: return uint32_t(step / 4) * uint32_t(rows_mn) * 128u + uint32_t(step % 4) * 32u;
    case Layout::Sw128MN: return uint32_t(step) * 2048u;
    }
    return 0;
}

// Bytes from an MN-major 128B tile's start to its 64-wide mn block `block`
// (an A operand's m64 chunk or a B operand's n64 block): the LBO stride.
__host__ __device__ constexpr uint32_t mn_block_offset_sw128mn(int block, int cols_k) {
    return uint32_t(block) * uint32_t(cols_k) * 128u;
}

// The 64-bit matrix descriptor: start address bits 0-13, LBO 16-29, SBO
// 32-45 (each in 16-byte units), base offset 49-51 (0: our atoms are
// 1024-byte aligned), swizzle mode 62-63.
__host__ __device__ constexpr uint64_t make_descriptor(uint32_t smem_address, DescriptorFields f) {
    return uint64_t((smem_address & 0x3FFFFu) >> 4) | uint64_t((f.leading_byte_offset >> 4) & 0x3FFFu) << 16 |
           uint64_t((f.stride_byte_offset >> 4) & 0x3FFFu) << 32 | uint64_t(f.swizzle_code & 3u) << 62;
}

// ---------------------------------------------------------------------------
// Register fragments (per warpgroup; thread t = 0..127, warp w = t / 32,
// lane l = t % 32). Each warp owns rows 16w..16w+15, as in mma.sync m16n8k16.
// ---------------------------------------------------------------------------
struct RowCol {
    int row, col;
};

// Accumulator register i of an m64nN f32 D: register 4c + j holds row
// 16w + l/4 (+8 for j = 2, 3), column 8c + 2 (l % 4) + (j % 2).
__host__ __device__ constexpr RowCol accumulator_position(int thread, int reg) {
    const int warp = thread / 32, lane = thread % 32, chunk = reg / 4, j = reg % 4;
    return {16 * warp + lane / 4 + 8 * (j / 2), 8 * chunk + 2 * (lane % 4) + (j % 2)};
}

// A from registers, one k16 step: 4 registers of two fp16 each (the lower k
// in the low half). Register r holds (row, k) and (row, k + 1) with row
// 16w + l/4 (+8 for r = 1, 3) and k = 2 (l % 4) (+8 for r = 2, 3).
__host__ __device__ constexpr RowCol a_fragment_position(int thread, int reg) {
    const int warp = thread / 32, lane = thread % 32;
    return {16 * warp + lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + 8 * (reg / 2)};
}

// ---------------------------------------------------------------------------
// wgmma wrappers, one specialisation per accumulator count (N / 2 registers).
// scale-d is a predicate: 0 ignores the incoming accumulators (D = A*B). The
// two 1s are imm-scale-a/b (no negation); then imm-trans-a (SS only) and
// imm-trans-b: 0 = K-major, 1 = MN-major (transposed), allowed for f16.
// ---------------------------------------------------------------------------
#define FUSEDNGP_WGMMA_ACC_LIST_8 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7" \
    "}"
#define FUSEDNGP_WGMMA_ACC_LIST_16 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
    "}"
#define FUSEDNGP_WGMMA_ACC_LIST_24 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23" \
    "}"
#define FUSEDNGP_WGMMA_ACC_LIST_32 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
    "}"
#define FUSEDNGP_WGMMA_ACC_LIST_64 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
    "}"
#define FUSEDNGP_WGMMA_ACC_LIST_128 \
    "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
    "}"

// The accumulator operands d[0..NREG-1] in blocks of 8 ("+f": read and written).
#define FUSEDNGP_WGMMA_ACC_BLOCK(d, b)                                                                          \
    "+f"((d)[b + 0]), "+f"((d)[b + 1]), "+f"((d)[b + 2]), "+f"((d)[b + 3]), "+f"((d)[b + 4]), "+f"((d)[b + 5]), \
        "+f"((d)[b + 6]), "+f"((d)[b + 7])
#define FUSEDNGP_WGMMA_ACC_OPERANDS_8(d) FUSEDNGP_WGMMA_ACC_BLOCK(d, 0)
#define FUSEDNGP_WGMMA_ACC_OPERANDS_16(d) FUSEDNGP_WGMMA_ACC_OPERANDS_8(d), FUSEDNGP_WGMMA_ACC_BLOCK(d, 8)
#define FUSEDNGP_WGMMA_ACC_OPERANDS_24(d) FUSEDNGP_WGMMA_ACC_OPERANDS_16(d), FUSEDNGP_WGMMA_ACC_BLOCK(d, 16)
#define FUSEDNGP_WGMMA_ACC_OPERANDS_32(d) FUSEDNGP_WGMMA_ACC_OPERANDS_24(d), FUSEDNGP_WGMMA_ACC_BLOCK(d, 24)
#define FUSEDNGP_WGMMA_ACC_OPERANDS_64(d)                                                          \
    FUSEDNGP_WGMMA_ACC_OPERANDS_32(d), FUSEDNGP_WGMMA_ACC_BLOCK(d, 32), FUSEDNGP_WGMMA_ACC_BLOCK(d, 40), \
        FUSEDNGP_WGMMA_ACC_BLOCK(d, 48), FUSEDNGP_WGMMA_ACC_BLOCK(d, 56)
#define FUSEDNGP_WGMMA_ACC_OPERANDS_128(d)                                                         \
    FUSEDNGP_WGMMA_ACC_OPERANDS_64(d), FUSEDNGP_WGMMA_ACC_BLOCK(d, 64), FUSEDNGP_WGMMA_ACC_BLOCK(d, 72), \
        FUSEDNGP_WGMMA_ACC_BLOCK(d, 80), FUSEDNGP_WGMMA_ACC_BLOCK(d, 88), FUSEDNGP_WGMMA_ACC_BLOCK(d, 96), \
        FUSEDNGP_WGMMA_ACC_BLOCK(d, 104), FUSEDNGP_WGMMA_ACC_BLOCK(d, 112), FUSEDNGP_WGMMA_ACC_BLOCK(d, 120)

#define FUSEDNGP_WGMMA_SS_TEXT(SHAPE, ACC, DESC_A, DESC_B, SCALE_D, TRANS_A, TRANS_B)                        \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %" SCALE_D ", 0;\n"                                                    \
    "wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 " ACC ", %" DESC_A ", %" DESC_B ", p, 1, 1, %" TRANS_A \
    ", %" TRANS_B ";\n}\n"
#define FUSEDNGP_WGMMA_RS_TEXT(SHAPE, ACC, A0, A1, A2, A3, DESC_B, SCALE_D, TRANS_B)                            \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %" SCALE_D ", 0;\n"                                                       \
    "wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 " ACC ", {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" DESC_B \
    ", p, 1, 1, %" TRANS_B ";\n}\n"

template <int NREG>
struct Mma;  // N = 2 * NREG

#if FUSEDNGP_WGMMA_AVAILABLE
#define FUSEDNGP_WGMMA_DEFINE(NREG, SHAPE, I0, I1, I2, I3, I4, I5, I6)                                              \
    template <>                                                                                                   \
    struct Mma<NREG> {                                                                                            \
        template <int TRANS_A, int TRANS_B>                                                                       \
        static __device__ __forceinline__ void ss(float (&d)[NREG], uint64_t desc_a, uint64_t desc_b, int scale_d) { \
            asm volatile(FUSEDNGP_WGMMA_SS_TEXT(SHAPE, FUSEDNGP_WGMMA_ACC_LIST_##NREG, I0, I1, I2, I3, I4)       \
                         : FUSEDNGP_WGMMA_ACC_OPERANDS_##NREG(d)                                                  \
                         : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_A), "n"(TRANS_B));                   \
        }                                                                                                         \
        template <int TRANS_B>                                                                                    \
        static __device__ __forceinline__ void rs(float (&d)[NREG], const uint32_t (&a)[4], uint64_t desc_b,      \
                                                  int scale_d) {                                                  \
            asm volatile(FUSEDNGP_WGMMA_RS_TEXT(SHAPE, FUSEDNGP_WGMMA_ACC_LIST_##NREG, I0, I1, I2, I3, I4, I5, I6) \
                         : FUSEDNGP_WGMMA_ACC_OPERANDS_##NREG(d)                                                  \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));  \
        }                                                                                                         \
    };
FUSEDNGP_WGMMA_DEFINE(8, "m64n16k16", "8", "9", "10", "11", "12", "13", "14")
FUSEDNGP_WGMMA_DEFINE(16, "m64n32k16", "16", "17", "18", "19", "20", "21", "22")
FUSEDNGP_WGMMA_DEFINE(24, "m64n48k16", "24", "25", "26", "27", "28", "29", "30")
FUSEDNGP_WGMMA_DEFINE(32, "m64n64k16", "32", "33", "34", "35", "36", "37", "38")
FUSEDNGP_WGMMA_DEFINE(64, "m64n128k16", "64", "65", "66", "67", "68", "69", "70")
FUSEDNGP_WGMMA_DEFINE(128, "m64n256k16", "128", "129", "130", "131", "132", "133", "134")
#undef FUSEDNGP_WGMMA_DEFINE
#endif

// D[64 x N] (+)= A[64 x 16] * B[16 x N], A and B in shared memory.
template <int TRANS_A, int TRANS_B, int NREG>
__device__ __forceinline__ void wgmma_ss(float (&d)[NREG], uint64_t desc_a, uint64_t desc_b, int scale_d) {
#if FUSEDNGP_WGMMA_AVAILABLE
    Mma<NREG>::template ss<TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
#else
    (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
    __trap();  // built without sm_90a: the host never launches this
#endif
}

// D[64 x N] (+)= A[64 x 16] * B[16 x N], A from registers (a_fragment_position).
template <int TRANS_B, int NREG>
__device__ __forceinline__ void wgmma_rs(float (&d)[NREG], const uint32_t (&a)[4], uint64_t desc_b, int scale_d) {
#if FUSEDNGP_WGMMA_AVAILABLE
    Mma<NREG>::template rs<TRANS_B>(d, a, desc_b, scale_d);
#else
    (void)d, (void)a, (void)desc_b, (void)scale_d;
    __trap();
#endif
}

// Orders this thread's earlier register writes (accumulators, A fragments)
// before the wgmma that follow; needed before the first wgmma and after any
// ordinary write to registers a wgmma reads.
__device__ __forceinline__ void wgmma_fence() {
#if FUSEDNGP_WGMMA_AVAILABLE
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Closes the wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
#if FUSEDNGP_WGMMA_AVAILABLE
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most PENDING groups are in flight; only then may their
// accumulators (and A registers) be read or written by ordinary code.
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
#if FUSEDNGP_WGMMA_AVAILABLE
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
#endif
}

// Ordinary (generic-proxy) shared-memory stores become visible to wgmma's
// async-proxy reads only after this fence in each writing thread, followed by
// a barrier.
__device__ __forceinline__ void fence_proxy_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The compiler does not know that a wgmma's registers stay busy until the
// wait: an empty asm that "modifies" each register after the wait keeps reads
// (the store) from moving above it, and keeps the A registers alive until then.
template <int COUNT>
__device__ __forceinline__ void pin_registers(float (&r)[COUNT]) {
FUSEDNGP_UNROLL
    for (int i = 0; i < COUNT; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int STEPS>
__device__ __forceinline__ void pin_registers(uint32_t (&r)[STEPS][4]) {
FUSEDNGP_UNROLL
    for (int s = 0; s < STEPS; ++s)
FUSEDNGP_UNROLL
        for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(r[s][j])::"memory");
}

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__host__ __device__ __forceinline__ uint32_t pack_half2(float low, float high) {
    const __half2 h = __floats2half2_rn(low, high);
    uint32_t bits;
    memcpy(&bits, &h, sizeof(bits));
    return bits;
}

// Chain identity: the accumulators of an m64nN f32 D, rounded to fp16, are
// exactly the A fragments of the next product's N / 16 k-steps (accumulator
// chunks 2j and 2j + 1 are k-step j), with no shuffle.
template <int NREG>
__host__ __device__ __forceinline__ void accumulators_to_a_fragments(const float (&d)[NREG], uint32_t (&a)[NREG / 8][4]) {
FUSEDNGP_UNROLL
    for (int j = 0; j < NREG / 8; ++j) {
        a[j][0] = pack_half2(d[8 * j + 0], d[8 * j + 1]);  // rows l/4,   k 2(l%4)+{0,1}
        a[j][1] = pack_half2(d[8 * j + 2], d[8 * j + 3]);  // rows l/4+8
        a[j][2] = pack_half2(d[8 * j + 4], d[8 * j + 5]);  // rows l/4,   k +8
        a[j][3] = pack_half2(d[8 * j + 6], d[8 * j + 7]);  // rows l/4+8, k +8
    }
}

} // namespace fusedngp::gpu::wgmma
