// Turns on shared memory, handed from warp to warp in a fixed ring order
// (warp 0, 1, ..., n - 1, then warp 0 of the next round), on mbarriers.
// Used by the shared-sum mode of the warp training kernel
// (fused_mlp_warp_train_device.cuh) and by bench/racecheck_probe.cu.
//
// Why mbarriers: compute-sanitizer racecheck counts an mbarrier arrive by a
// thread and a completed wait by another as ordering that thread's earlier
// shared-memory accesses before the waiter's later ones; it does not model
// ld.acquire / st.release on a turn counter, nor a bar.arrive -> bar.sync
// hand-off, nor __syncwarp before one lane's arrive (bench/racecheck_probe.cu
// and docs/FUSED_MLP_DESIGN.md, "Warp training kernel").
//
// One mbarrier per (warp slot, stripe), arrival count 32: every lane arrives
// after its own stores and waits itself, so each lane's stores are ordered
// before the same lane's loads in the next warp (a lane only ever touches its
// own elements of a stripe). Warp w takes its turn in round k once phase k of
// its own barrier is complete (warp 0: phase k - 1), and gives it to warp
// w + 1 (warp n - 1: to warp 0) by arriving on that warp's barrier. A parity
// wait (phase k & 1) is sound because a barrier can never be two phases ahead
// of its waiter: phase k + 1 of warp w's barrier needs warp w - 1's round
// k + 1, which (around the ring) needs warp w's round k. Nor can it be behind:
// phase k - 1 completed before warp w's own round k - 1 began. Warps that
// leave early must be the last of the ring (see the kernel), so no warp ever
// waits for one of them.
#pragma once

#include <cstdint>

namespace fusedngp::gpu::detail {

// kArrivals = 1 (lane 0 arrives after __syncwarp) is kept for the probe only:
// as fast, but racecheck reports its hand-offs.
constexpr uint32_t kTurnArrivals = 32u;

__device__ __forceinline__ uint32_t turn_smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// Before the block barrier that publishes it (one thread per barrier).
template <uint32_t kArrivals = kTurnArrivals>
__device__ __forceinline__ void turn_init(uint64_t* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(turn_smem_addr(bar)), "r"(kArrivals) : "memory");
}

// Whether the phase of parity `parity` of the barrier at shared address `bar`
// is complete (acquire). The hint lets the hardware suspend the warp up to
// ~1 us instead of spinning.
__device__ __forceinline__ bool turn_try_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity), "n"(1000)
                 : "memory");
    return done != 0u;
}

// A turn order that never comes would hang the GPU: after ~2^22 suspended
// polls (seconds at the 1 us hint; a real wait is microseconds) the kernel
// traps instead, which the host sees as a launch failure. Out of line: the
// guard costs no registers.
static __device__ __noinline__ void turn_wait_slow(uint32_t bar, uint32_t parity) {
    for (uint32_t polls = 0; !turn_try_wait(bar, parity); ++polls)
        if (polls > (1u << 22)) __trap();
}

// One warp's place in the ring: the barriers (warp-major: warp w's of all
// `stripes` stripes together), the warp, the ring's length, and the parity
// this warp waits for, which flips every round. Warp 0 waits for the previous
// round's phase; in round 0 that is the phase before the first, which counts
// as complete. (Only the parity needs a register of its own where the rest
// can be recomputed: bars at a fixed shared address, stripes from the kernel
// parameters.)
struct TurnRing {
    const uint64_t* bars;
    uint32_t stripes, warp, warps, parity;
};
__device__ __forceinline__ TurnRing turn_ring(const uint64_t* bars, uint32_t stripes, uint32_t warp, uint32_t warps) {
    return {bars, stripes, warp, warps, warp == 0u ? 1u : 0u};
}
__device__ __forceinline__ void turn_next_round(TurnRing& r) { r.parity ^= 1u; }

// Waits for this warp's turn on `stripe`; the __syncwarp reconverges the
// lanes before the tensor-core products.
__device__ __forceinline__ void turn_wait(const TurnRing& r, uint32_t stripe) {
    const uint32_t bar = turn_smem_addr(r.bars + r.warp * r.stripes + stripe);
    if (!turn_try_wait(bar, r.parity)) turn_wait_slow(bar, r.parity);
    __syncwarp();
}

// Gives `stripe` to the next warp once this warp's stores are done.
template <uint32_t kArrivals = kTurnArrivals>
__device__ __forceinline__ void turn_pass(const TurnRing& r, uint32_t stripe, uint32_t lane) {
    if constexpr (kArrivals == 1u) {
        __syncwarp();  // orders every lane's stores before lane 0's release
        if (lane != 0u) return;
    }
    const uint32_t next = r.warp + 1u == r.warps ? 0u : r.warp + 1u;
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(turn_smem_addr(r.bars + next * r.stripes + stripe))
                 : "memory");
}

} // namespace fusedngp::gpu::detail
