// Which warp-to-warp hand-offs of shared memory compute-sanitizer racecheck
// understands, and what each costs (docs/FUSED_MLP_DESIGN.md, "Warp training
// kernel"). NW warps of a block take turns, in ring order (warp 0,
// 1, ..., NW - 1, then the next round), on S stripes of one float4 per lane,
// as the shared-sum warp training kernel does with its dW stripes:
//   none     no ordering at all: a real race, racecheck must report it;
//   counter  per-stripe turn counter, ld.acquire / st.release;
//   mbar32   per-(warp, stripe) mbarrier, every lane arrives (what the kernel uses);
//   mbar1    the same, lane 0 arrives after __syncwarp;
//   named    bar.sync / bar.arrive between neighbouring warps (one hardware
//            barrier id per warp, so one hand-off per round, not per stripe).
//
//   racecheck_probe MODE [warps rounds blocks]
// prints whether every float4 holds the expected sum and the time per turn.
// Build: nvcc -std=c++17 -arch=sm_90 -lineinfo -I kernels bench/racecheck_probe.cu
// then run each MODE natively (time) and under compute-sanitizer --tool
// racecheck / synccheck (bench/README.md). Result on the H200, ec1d9c9
// (compute-sanitizer of CUDA 13.0, 2 and 8 warps): racecheck reports none,
// counter, mbar1 and named, and only mbar32 is clean; synccheck is clean.
#include "warp_turn_device.cuh"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace fusedngp::gpu::detail;

namespace {

constexpr int kStripes = 9;  // the W = 64 D = 2 kernel's stripe count

enum class Mode { None, Counter, Mbar32, Mbar1, Named };

__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.cta.shared::cta.u32 %0, [%1];\n" : "=r"(v) : "r"(turn_smem_addr(p)) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
    asm volatile("st.release.cta.shared::cta.u32 [%0], %1;\n" ::"r"(turn_smem_addr(p)), "r"(v) : "memory");
}

// The read-modify-write of one stripe (each lane its own float4).
__device__ __forceinline__ void add_stripe(float4* cell, float x) {
    float4 v = *cell;
    v.x += x, v.y += 2.f * x, v.z += 3.f * x, v.w += 4.f * x;
    *cell = v;
}

template <Mode M>
__global__ void probe_kernel(float4* out, uint32_t rounds) {
    __shared__ float4 s_buf[kStripes][32];
    __shared__ uint32_t s_turn[kStripes];
    __shared__ uint64_t s_bars[kStripes * 16];
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (uint32_t i = threadIdx.x; i < kStripes * 32; i += blockDim.x) s_buf[i / 32][i % 32] = make_float4(0, 0, 0, 0);
    for (uint32_t i = threadIdx.x; i < kStripes; i += blockDim.x) s_turn[i] = 0u;
    for (uint32_t i = threadIdx.x; i < kStripes * warps; i += blockDim.x) {
        if constexpr (M == Mode::Mbar1) turn_init<1>(s_bars + i);
        else turn_init<32>(s_bars + i);
    }
    __syncthreads();
    const float x = (float)(warp + 1);
    TurnRing ring = turn_ring(s_bars, kStripes, warp, warps);
    for (uint32_t k = 0; k < rounds; ++k, turn_next_round(ring)) {
        if constexpr (M == Mode::Named) {
            // Warp w waits for warp w - 1 on barrier 1 + w (warp 0 for the
            // last warp of the previous round), then hands on to the next.
            if (k > 0 || warp > 0) asm volatile("bar.sync %0, 64;\n" ::"r"(1u + warp) : "memory");
            for (int s = 0; s < kStripes; ++s) add_stripe(&s_buf[s][lane], x);
            const uint32_t next = warp + 1u == warps ? 0u : warp + 1u;
            if (k + 1 < rounds || warp + 1u < warps) asm volatile("bar.arrive %0, 64;\n" ::"r"(1u + next) : "memory");
            continue;
        }
        const uint32_t ticket = k * warps + warp;
        for (int s = 0; s < kStripes; ++s) {
            if constexpr (M == Mode::Counter) {
                for (uint32_t polls = 0; ld_acquire(&s_turn[s]) != ticket; ++polls) {
                    if (polls > (1u << 24)) __trap();
                    __nanosleep(32);
                }
                __syncwarp();
            } else if constexpr (M == Mode::Mbar32 || M == Mode::Mbar1) {
                turn_wait(ring, s);
            }
            add_stripe(&s_buf[s][lane], x);
            if constexpr (M == Mode::Counter) {
                __syncwarp();
                if (lane == 0) st_release(&s_turn[s], ticket + 1u);
            } else if constexpr (M == Mode::Mbar32) {
                turn_pass<32>(ring, s, lane);
            } else if constexpr (M == Mode::Mbar1) {
                turn_pass<1>(ring, s, lane);
            }
        }
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < kStripes * 32; i += blockDim.x)
        out[(size_t)blockIdx.x * kStripes * 32 + i] = s_buf[i / 32][i % 32];
}

template <Mode M>
int run(uint32_t warps, uint32_t rounds, uint32_t blocks) {
    float4* d = nullptr;
    const size_t n = (size_t)blocks * kStripes * 32;
    if (cudaMalloc(&d, n * sizeof(float4)) != cudaSuccess) return 2;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    probe_kernel<M><<<blocks, warps * 32>>>(d, 1);  // warm-up
    cudaEventRecord(a);
    probe_kernel<M><<<blocks, warps * 32>>>(d, rounds);
    cudaEventRecord(b);
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        std::printf("CUDA error %s\n", cudaGetErrorString(err));
        return 2;
    }
    float ms = 0.f;
    cudaEventElapsedTime(&ms, a, b);
    std::vector<float4> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(float4), cudaMemcpyDeviceToHost);
    cudaFree(d);
    // Every float4 got x = 1..warps once per round.
    const double want = (double)rounds * warps * (warps + 1) / 2.0;
    size_t bad = 0;
    for (const float4& v : h)
        bad += v.x != want || v.y != 2 * want || v.z != 3 * want || v.w != 4 * want;
    const double turns = (double)rounds * warps * (M == Mode::Named ? 1 : kStripes);
    std::printf("warps %u rounds %u blocks %u: %s (%zu of %zu float4 wrong), %.3f ms, %.1f ns per turn and block\n",
                warps, rounds, blocks, bad == 0 ? "sums right" : "SUMS WRONG", bad, n, ms, ms * 1e6 / turns);
    return bad == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: racecheck_probe none|counter|mbar32|mbar1|named [warps rounds blocks]\n");
        return 2;
    }
    const uint32_t warps = argc > 2 ? (uint32_t)std::atoi(argv[2]) : 2u;
    const uint32_t rounds = argc > 3 ? (uint32_t)std::atoi(argv[3]) : 4u;
    const uint32_t blocks = argc > 4 ? (uint32_t)std::atoi(argv[4]) : 1u;
    if (warps < 2 || warps > 15) {
        std::fprintf(stderr, "warps: 2..15\n");
        return 2;
    }
    std::printf("mode %s: ", argv[1]);
    if (!std::strcmp(argv[1], "none")) return run<Mode::None>(warps, rounds, blocks);
    if (!std::strcmp(argv[1], "counter")) return run<Mode::Counter>(warps, rounds, blocks);
    if (!std::strcmp(argv[1], "mbar32")) return run<Mode::Mbar32>(warps, rounds, blocks);
    if (!std::strcmp(argv[1], "mbar1")) return run<Mode::Mbar1>(warps, rounds, blocks);
    if (!std::strcmp(argv[1], "named")) return run<Mode::Named>(warps, rounds, blocks);
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
