// How fast can a block add its weight-gradient partial into global memory?
// The question a W = 256 wgmma training kernel depends on
// (docs/HOPPER_WGMMA.md, "Design sketch"): dW cannot stay on chip there, so
// the kernel must flush it (32x256 + 256x256 + 256x16 = 77,824 fp32 values
// for 32 -> 256 x 2 -> 16) after every 128-row tile, ~2.4 KB per sample:
// beating CublasMLP's 0.35 G samples/s needs ~0.85 TB/s of such adds beside
// the compute. (The W = 128 wgmma kernel already sustains ~1.2 TB/s of
// scalar adds at 1.72 G/s, 704 B per sample: H200, 6e9ce47.)
//
// Each block owns one region of `floats` values (as each block owns one
// partial in the fused kernels: one owning thread per element, no
// contention) and adds 1.0 to every value `rounds` times, in one of four ways:
//   red      atomicAdd(float*) with the result unused (RED.E.ADD.F32), the
//            W = 128 wgmma kernel's flush;
//   red4     atomicAdd(float4*) (sm_90's vector atomic, 16 bytes);
//   rmw      load, add, store (correct here because each element has one
//            owner; pays a load's latency per round);
//   store    store only (the bandwidth ceiling of the same traffic pattern).
// Prints the adds per second and the bytes per second (4 per add) for each,
// and checks every value (rounds x 1.0, exact in fp32).
//
//   red_add_probe [--floats N] [--rounds R] [--blocks-per-sm B]
// Build: nvcc -std=c++17 -O3 -arch=sm_90 bench/red_add_probe.cu -o red_add_probe
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                         \
        }                                                                                         \
    } while (0)

enum Mode { Red = 0, Red4 = 1, ReadModifyWrite = 2, StoreOnly = 3 };
const char* kModeNames[] = {"red", "red4", "rmw", "store"};

// One block's region starts at block * floats (floats a multiple of 4, so
// float4 accesses stay aligned).
__global__ void add_partials(float* partials, uint32_t floats, uint32_t rounds, int mode) {
    float* region = partials + (size_t)blockIdx.x * floats;
    for (uint32_t r = 0; r < rounds; ++r) {
        if (mode == Red4) {
            float4* region4 = reinterpret_cast<float4*>(region);
            for (uint32_t i = threadIdx.x; i < floats / 4; i += blockDim.x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                atomicAdd(region4 + i, make_float4(1.f, 1.f, 1.f, 1.f));
#else
                atomicAdd(&region4[i].x, 1.f);
                atomicAdd(&region4[i].y, 1.f);
                atomicAdd(&region4[i].z, 1.f);
                atomicAdd(&region4[i].w, 1.f);
#endif
            }
        } else {
            for (uint32_t i = threadIdx.x; i < floats; i += blockDim.x) {
                if (mode == Red) atomicAdd(region + i, 1.f);
                else if (mode == ReadModifyWrite) region[i] += 1.f;
                else region[i] = (float)(r + 1);
            }
        }
        // A tile boundary: the fused kernels flush once per tile, between
        // other work; the barrier keeps the rounds apart the same way.
        __syncthreads();
    }
}

int main(int argc, char** argv) {
    uint32_t floats = 77824, rounds = 16, blocks_per_sm = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const uint32_t v = (uint32_t)std::strtoul(argv[i + 1], nullptr, 10);
        if (a == "--floats") floats = v;
        else if (a == "--rounds") rounds = v;
        else if (a == "--blocks-per-sm") blocks_per_sm = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    floats = (floats + 3) / 4 * 4;
    if (rounds == 0 || floats == 0 || blocks_per_sm == 0) {
        std::fprintf(stderr, "--floats, --rounds and --blocks-per-sm must be positive\n");
        return 2;
    }
    int device = 0, sms = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, device));
    const uint32_t blocks = (uint32_t)sms * blocks_per_sm;
    const size_t n = (size_t)blocks * floats;
    std::printf("%s, %d SMs, L2 %d MB: %u blocks x %u floats (%.1f MB of partials), %u rounds\n", prop.name, sms,
                prop.l2CacheSize >> 20, blocks, floats, n * 4.0 / 1e6, rounds);
    float* partials = nullptr;
    CHECK(cudaMalloc(&partials, n * sizeof(float)));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    std::vector<float> host(n);
    int failures = 0;
    for (int mode = Red; mode <= StoreOnly; ++mode) {
        float best_ms = 1e30f;
        for (int rep = 0; rep < 5; ++rep) {  // the first is the warm-up; the best of the rest
            CHECK(cudaMemset(partials, 0, n * sizeof(float)));
            CHECK(cudaEventRecord(start));
            add_partials<<<blocks, 256>>>(partials, floats, rounds, mode);
            CHECK(cudaEventRecord(stop));
            CHECK(cudaEventSynchronize(stop));
            CHECK(cudaGetLastError());
            float ms = 0.f;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            if (rep > 0 && ms < best_ms) best_ms = ms;
        }
        CHECK(cudaMemcpy(host.data(), partials, n * sizeof(float), cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) wrong += host[i] != (float)rounds;
        const double adds = (double)n * rounds;
        std::printf("%-6s %8.3f ms  %7.1f G adds/s  %6.2f TB/s  %s\n", kModeNames[mode], best_ms, adds / best_ms / 1e6,
                    adds * 4.0 / best_ms / 1e9, wrong ? "WRONG" : "values ok");
        if (wrong) {
            std::printf("  %zu of %zu values differ from %u\n", wrong, n, rounds);
            ++failures;
        }
    }
    CHECK(cudaFree(partials));
    return failures ? 1 : 0;
}
