// softmax_rows: y = softmax(x) along each row, bf16 in and out, fp32 math (issue 35). Version v10 of the lab
// (lab/softmax_rows/versions/v10_xchg_cta.cu): v4 with the wait for the cluster's exchange at CTA scope
// (KSEEK_XCHG_ACQUIRE, below; 1 is v4's code). v4 is v1 with the cluster's merge by st.async (below).
// Measured (round 14, H100): the same times as v4; the samples moved from the invalidation to the wait loop, whose
// warps wait for the cluster's slowest CTA. Not kept.
// kernels/softmax_rows/softmax_rows.cu is, byte for byte, the version the lab's README names as released.
//
// Math, per row r:  y[r, c] = exp(x[r, c] - max_c x[r, c]) / sum_c exp(x[r, c] - max_c x[r, c]),
// in the log2 domain: t = x * log2(e), e_c = 2^(t_c - m), y = e_c / sum e_c, rounded once to bf16 (nearest even).
//
// One read of x and one write of y per element: a row is loaded once into registers, in 16-byte vectors of
// 8 bf16, and stays there. Each thread keeps its own max m_t and sum s_t = sum 2^(t - m_t) (its exponentials
// stay in registers as fp32), and the pairs are reduced once a row: the max of the m first, then each sum
// rescaled to it (s 2^(m_t - m), one ex2 a thread and level) and added. So each element costs one ex2 and one
// multiply, and each row one reduction.
//
// Three shapes of work, by the number of 16-byte vectors a row spans (nvec):
//   nvec <= 128 (cols up to ~1000): `softmax_subwarp`, TPR lanes of a warp per row (1..32), VPT vectors each;
//     the reduction is TPR-wide shuffles, no shared memory, no barrier.
//   nvec <= 32768 (cols up to ~262000): `softmax_cluster`, a cluster of 1..8 CTAs per row (a thread block
//     cluster, sm_90), 4 vectors per thread; the reduction is shuffles, then shared memory across warps,
//     then an exchange across the cluster's CTAs: each CTA writes its pair into slot [rank] of every CTA of
//     the cluster (itself included) with st.async, which completes on that CTA's mbarrier, and each CTA
//     waits on its own. So no CTA reads another's shared memory, none exits while a peer's bytes are on
//     their way to it, and there is no cluster barrier a row: the first release's barrier.cluster.arrive.release
//     compiled to a GPU-wide fence (MEMBAR.ALL.GPU), and this exchange made its cluster shapes 1.1-1.3x faster
//     (lab/softmax_rows/README.md, round 3). One relaxed cluster barrier after the mbarrier's init remains (no
//     st.async may reach an uninitialised barrier); its wait comes after the loads and the CTA's reduction.
//     Long rows with few of them (64 x 65536, 1 x 65536) spread over up to 8 SMs each instead of leaving
//     most of the chip idle.
//   longer rows: `softmax_online`, one CTA of 1024 threads per row, two passes over global memory (online
//     max and sum, then the output).
//
// Alignment: vectors are counted from x rounded down to 16 bytes, so a row of any width (31, 4097, 50257) is
// whole vectors in its middle (16-byte loads and stores) and at most one partial vector at each end, read and
// written element by element (never touching a neighbouring row's elements). Where y's offset within 16 bytes
// differs from x's, every store is element by element.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr uint32_t kNegInfPair = 0xFF80FF80u;  // two bf16 -inf: elements outside the row
constexpr int kSubwarpThreads = 256;
#ifndef KSEEK_CTA_TARGET
#define KSEEK_CTA_TARGET 256
#endif
#ifndef KSEEK_LOAD_HINT  // 0: L1::no_allocate, 1: and L2::256B prefetch, 2: plain ld.global.nc
#define KSEEK_LOAD_HINT 0
#endif
#ifndef KSEEK_STORE_CS  // 1: streaming stores (st.global.cs)
#define KSEEK_STORE_CS 0
#endif
#ifndef KSEEK_CLUSTER_VPT  // vectors a thread in softmax_cluster
#define KSEEK_CLUSTER_VPT 4
#endif
#ifndef KSEEK_CLUSTER_KEEP  // 1: keep fp32 exponentials; 0: keep the bf16 input, compute each exponential twice
#define KSEEK_CLUSTER_KEEP 1
#endif
#ifndef KSEEK_CLUSTER_XCHG  // the cluster's merge: 0 cluster barriers and DSMEM reads (v1), 1 st.async + mbarrier
#define KSEEK_CLUSTER_XCHG 1
#endif
#ifndef KSEEK_XCHG_ACQUIRE  // the exchange's wait: 0 acquire at CTA scope (v10), 1 at cluster scope (v4)
#define KSEEK_XCHG_ACQUIRE 0
#endif
#ifndef KSEEK_SUBWARP_KEEP  // 1: the lanes-per-row kernel keeps fp32 exponentials; 0: it keeps the input
#define KSEEK_SUBWARP_KEEP 1
#endif
#ifndef KSEEK_CLUSTER_MAXT  // softmax_cluster's __launch_bounds__: at most this many threads a CTA, and registers
#define KSEEK_CLUSTER_MAXT 1024  // for KSEEK_CLUSTER_MINB such CTAs on one SM
#endif
#ifndef KSEEK_CLUSTER_MINB
#define KSEEK_CLUSTER_MINB 1
#endif
constexpr int kClusterMaxThreads = KSEEK_CLUSTER_MAXT;
constexpr int kClusterCtaTarget = KSEEK_CTA_TARGET;  // threads per CTA the cluster size is chosen for
constexpr bool kClusterKeep = KSEEK_CLUSTER_KEEP != 0;
constexpr int kClusterVpt = KSEEK_CLUSTER_VPT;  // vectors per thread in softmax_cluster
constexpr bool kSubwarpKeep = KSEEK_SUBWARP_KEEP != 0;
constexpr int kMaxCluster = 8;             // the portable cluster size limit
constexpr int kOnlineThreads = 1024;

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint4 load_v4(const uint16_t* p) {
    uint4 r;
#if KSEEK_LOAD_HINT == 1
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#elif KSEEK_LOAD_HINT == 2
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
#else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
#endif
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

__device__ __forceinline__ void store_v4(uint16_t* p, uint4 v) {
#if KSEEK_STORE_CS
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
#else
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
#endif
                 ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

// One row's place: its elements are [g0, g1) counted from the 16-byte-aligned base of x (and of y's virtual
// base, which sits at the same offset). An empty range (g0 == g1) loads nothing and stores nothing.
struct Row {
    long long g0, g1;
};

// Vector v (elements 8v .. 8v+7) of the row: whole vectors in one 16-byte load, edge vectors element by
// element, elements outside the row as -inf (they add 2^-inf = 0 to the sum).
__device__ __forceinline__ uint4 load_vector(const uint16_t* xb, Row row, long long v) {
    const long long e = v * 8;
    if (e >= row.g0 && e + 8 <= row.g1) return load_v4(xb + e);
    uint32_t w[4] = {kNegInfPair, kNegInfPair, kNegInfPair, kNegInfPair};
    if (e + 8 > row.g0 && e < row.g1) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const long long g = e + j;
            if (g >= row.g0 && g < row.g1) {
                const uint32_t h = __ldg(xb + g);
                w[j / 2] = (j & 1) ? ((w[j / 2] & 0x0000FFFFu) | (h << 16)) : ((w[j / 2] & 0xFFFF0000u) | h);
            }
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void store_vector(uint16_t* yb, bool yvec, Row row, long long v, uint4 out) {
    const long long e = v * 8;
    if (yvec && e >= row.g0 && e + 8 <= row.g1) {
        store_v4(yb + e, out);
        return;
    }
    if (e + 8 <= row.g0 || e >= row.g1) return;
    const uint32_t w[4] = {out.x, out.y, out.z, out.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const long long g = e + j;
        if (g >= row.g0 && g < row.g1) yb[g] = static_cast<uint16_t>((j & 1) ? (w[j / 2] >> 16) : w[j / 2]);
    }
}

__device__ __forceinline__ float lo_bf16(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

// x (as 8 floats) of one loaded vector
__device__ __forceinline__ void unpack(uint4 r, float (&f)[8]) {
    f[0] = lo_bf16(r.x); f[1] = hi_bf16(r.x);
    f[2] = lo_bf16(r.y); f[3] = hi_bf16(r.y);
    f[4] = lo_bf16(r.z); f[5] = hi_bf16(r.z);
    f[6] = lo_bf16(r.w); f[7] = hi_bf16(r.w);
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);  // round to nearest even, once
    return *reinterpret_cast<const uint32_t*>(&p);
}

// A running (max, sum) pair in the log2 domain: s = sum 2^(t - m). An empty pair is (-inf, 0).
struct Stat {
    float m, s;
};

__device__ __forceinline__ Stat merge(Stat a, Stat b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.f};  // both empty: 2^(-inf - -inf) would be NaN
    return {m, a.s * ex2(a.m - m) + b.s * ex2(b.m - m)};
}

// The (m, s) pair of WIDTH consecutive lanes (a power of two, at most 32; lanes xor'ed below WIDTH stay in the
// group), the same bits in every lane of the group: the max by shuffles, then each lane's sum rescaled to it
// (one ex2) and summed by shuffles (a + b == b + a, so each butterfly level gives every lane the same value).
template <int WIDTH>
__device__ __forceinline__ Stat group_reduce(Stat a) {
    float m = a.m;
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, offset));
    float s = (a.m == -INFINITY) ? 0.f : a.s * ex2(a.m - m);  // an empty pair adds 0 (not 0 * NaN)
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, offset);
    return {m, s};
}

// What a thread holds of its row between the load and the store: its exponentials in fp32 (KEEP: one ex2 per
// element, 8 registers a vector) or its input as loaded (two ex2 per element, 4 registers a vector).
template <int VPT, bool KEEP>
struct Held;
template <int VPT>
struct Held<VPT, true> {
    float e[VPT][8];
};
template <int VPT>
struct Held<VPT, false> {
    uint4 raw[VPT];
};

// Loads VPT vectors (v0 + k * stride) of the row into `held`; returns the thread's (m_thread, sum 2^(t - m_thread)).
template <int VPT, bool KEEP>
__device__ __forceinline__ Stat load_row(const uint16_t* xb, Row row, long long v0, int stride,
                                         Held<VPT, KEEP>& held) {
    uint4 raw[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) raw[k] = load_vector(xb, row, v0 + static_cast<long long>(k) * stride);
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        float f[8];
        unpack(raw[k], f);
#pragma unroll
        for (int j = 0; j < 8; ++j) mx = fmaxf(mx, f[j]);
    }
    // t = x log2(e); max t = (max x) log2(e) (the product is monotonic); a thread with no element keeps
    // m = -inf and uses 0 as its offset, so that its e are 2^-inf = 0, not NaN
    const float m = mx * kLog2e;
    const float offset = (m == -INFINITY) ? 0.f : m;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        float f[8];
        unpack(raw[k], f);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float e = ex2(fmaf(f[j], kLog2e, -offset));
            s += e;
            if constexpr (KEEP) held.e[k][j] = e;
        }
        if constexpr (!KEEP) held.raw[k] = raw[k];
    }
    return {m, s};
}

// y = 2^(t - m_row) / s_row for the thread's vectors (KEEP: e * 2^(m_thread - m_row) / s_row).
template <int VPT, bool KEEP>
__device__ __forceinline__ void store_row(uint16_t* yb, bool yvec, Row row, long long v0, int stride,
                                          const Held<VPT, KEEP>& held, Stat mine, Stat all) {
    const float inv = 1.f / all.s;
    const float scale = (mine.m == -INFINITY) ? 0.f : ex2(mine.m - all.m) * inv;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        float y[8];
        if constexpr (KEEP) {
#pragma unroll
            for (int j = 0; j < 8; ++j) y[j] = held.e[k][j] * scale;
        } else {
            unpack(held.raw[k], y);
#pragma unroll
            for (int j = 0; j < 8; ++j) y[j] = ex2(fmaf(y[j], kLog2e, -all.m)) * inv;
        }
        const uint4 out = make_uint4(pack_bf16x2(y[0], y[1]), pack_bf16x2(y[2], y[3]), pack_bf16x2(y[4], y[5]),
                                     pack_bf16x2(y[6], y[7]));
        store_vector(yb, yvec, row, v0 + static_cast<long long>(k) * stride, out);
    }
}

__device__ __forceinline__ Row row_at(long long r, int rows, int cols, int e0) {
    if (r >= rows) return {0, 0};
    const long long g0 = e0 + r * static_cast<long long>(cols);
    return {g0, g0 + cols};
}

// ---- short rows: TPR lanes per row --------------------------------------------------------------------
template <int TPR, int VPT>
__global__ void __launch_bounds__(kSubwarpThreads)
softmax_subwarp(const uint16_t* __restrict__ xb, uint16_t* __restrict__ yb, int rows, int cols, int e0, bool yvec) {
    const int lane = threadIdx.x % TPR;
    const long long r = static_cast<long long>(blockIdx.x) * (kSubwarpThreads / TPR) + threadIdx.x / TPR;
    const Row row = row_at(r, rows, cols, e0);  // rows past the end: empty, but their lanes still shuffle
    const long long v0 = (row.g0 >> 3) + lane;
    Held<VPT, kSubwarpKeep> held;
    const Stat mine = load_row(xb, row, v0, TPR, held);
    const Stat all = group_reduce<TPR>(mine);
    store_row(yb, yvec, row, v0, TPR, held, mine, all);
}

// ---- long rows: a cluster of CTAs per row -------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_size() {
    unsigned n;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
#if !KSEEK_CLUSTER_XCHG
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }

__device__ __forceinline__ Stat load_remote(const Stat* local, unsigned rank) {
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(local));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    Stat s;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(s.m), "=f"(s.s) : "r"(remote) : "memory");
    return s;
}
#endif

// The CTA's pair, the same in every thread: each warp's by shuffles, then in every warp lane w takes warp w's
// pair (empty past the last warp) and the warp reduces them.
__device__ __forceinline__ Stat block_merge(Stat a, Stat* warp_stats) {
    a = group_reduce<32>(a);
    const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_stats[threadIdx.x / 32] = a;
    __syncthreads();
    return group_reduce<32>(lane < warps ? warp_stats[lane] : Stat{-INFINITY, 0.f});
}

#if KSEEK_CLUSTER_XCHG
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// The exchange barrier: one arrival (thread 0's, with the bytes the cluster's st.async will bring) a phase.
__device__ __forceinline__ void xchg_init(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits for phase 0 of `bar`. The phase completes only once the bytes of every CTA's st.async have been written
// into this CTA's shared memory (they are the barrier's transaction count), and only this CTA's shared memory is
// read after it, so the wait acquires at CTA scope, as a TMA load's consumer does (QuACK's cluster reduction
// waits the same way). The cluster-scope acquire of v4 (KSEEK_XCHG_ACQUIRE 1) also invalidates the SM's L1
// (CCTL.IVALL) once the phase has completed: Nsight Compute on an H100 put 11 to 12% of softmax_cluster's stall
// samples on that one instruction at 256 x 32768 and 1024 x 32000, and 6 to 11% more on the shared load after it.
__device__ __forceinline__ void xchg_wait(unsigned bar) {
    unsigned done = 0;
    while (!done) {
#if KSEEK_XCHG_ACQUIRE
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(bar)
            : "memory");
#else
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(bar)
                     : "memory");
#endif
    }
}
// Pair `a` into CTA `rank`'s copy of `slot`, completing on its copy of `bar` (this CTA's addresses, mapped).
__device__ __forceinline__ void send_stat(unsigned slot, unsigned bar, unsigned rank, Stat a) {
    unsigned rslot, rbar;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(slot), "r"(rank));
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
                 ::"r"(rslot), "f"(a.m), "f"(a.s), "r"(rbar)
                 : "memory");
}
#endif

// blockDim.x: a multiple of 32 up to kClusterMaxThreads; the launch's cluster size (1 when launched without one) is the
// number of CTAs per row, consecutive in blockIdx.x.
__global__ void __launch_bounds__(KSEEK_CLUSTER_MAXT, KSEEK_CLUSTER_MINB)
softmax_cluster(const uint16_t* __restrict__ xb, uint16_t* __restrict__ yb, int rows, int cols, int e0, bool yvec) {
    __shared__ Stat warp_stats[32];
#if KSEEK_CLUSTER_XCHG
    __shared__ __align__(8) Stat peer_stat[kMaxCluster];  // [rank]: the cluster's CTAs' pairs
    __shared__ __align__(8) unsigned long long xbar;
#else
    __shared__ Stat cta_stat;
#endif
    const unsigned ctas = cluster_size();
    const unsigned rank = blockIdx.x % ctas;
    const Row row = row_at(blockIdx.x / ctas, rows, cols, e0);
    const int stride = static_cast<int>(ctas * blockDim.x);
    const long long v0 = (row.g0 >> 3) + rank * blockDim.x + threadIdx.x;
#if KSEEK_CLUSTER_XCHG
    if (ctas > 1) {
        if (threadIdx.x == 0) xchg_init(smem_addr(&xbar), ctas * 8u);
        cluster_arrive_relaxed();  // waited for below, after the loads: then every CTA's barrier is armed
    }
#endif
    Held<kClusterVpt, kClusterKeep> held;
    const Stat mine = load_row(xb, row, v0, stride, held);
    Stat all = block_merge(mine, warp_stats);
    if (ctas > 1) {
#if KSEEK_CLUSTER_XCHG
        cluster_wait();
        if (threadIdx.x < ctas) send_stat(smem_addr(&peer_stat[rank]), smem_addr(&xbar), threadIdx.x, all);
        xchg_wait(smem_addr(&xbar));
        const unsigned slot = threadIdx.x % kMaxCluster;  // each group of 8 lanes reduces the same pairs
        all = group_reduce<kMaxCluster>(slot < ctas ? peer_stat[slot] : Stat{-INFINITY, 0.f});
#else
        if (threadIdx.x == 0) cta_stat = all;
        cluster_arrive();
        cluster_wait();
        all = load_remote(&cta_stat, 0);
        for (unsigned c = 1; c < ctas; ++c) all = merge(all, load_remote(&cta_stat, c));
        cluster_arrive();  // this CTA has read the others' pairs; they may exit once all have
#endif
    }
    store_row(yb, yvec, row, v0, stride, held, mine, all);
#if !KSEEK_CLUSTER_XCHG
    if (ctas > 1) cluster_wait();  // keep cta_stat alive until every CTA of the cluster has read it
#endif
}

// ---- very long rows: two passes over global memory ----------------------------------------------------
__global__ void __launch_bounds__(kOnlineThreads)
softmax_online(const uint16_t* __restrict__ xb, uint16_t* __restrict__ yb, int rows, int cols, int e0, bool yvec) {
    __shared__ Stat warp_stats[32];
    constexpr int kVpt = 4;
    const Row row = row_at(blockIdx.x, rows, cols, e0);
    const long long first = row.g0 >> 3, last = (row.g1 - 1) >> 3;
    const int stride = kOnlineThreads;
    Held<kVpt, true> held;
    Stat mine = {-INFINITY, 0.f};
    for (long long v = first + threadIdx.x; v <= last; v += static_cast<long long>(kVpt) * stride)
        mine = merge(mine, load_row(xb, row, v, stride, held));
    const Stat all = block_merge(mine, warp_stats);
    for (long long v = first + threadIdx.x; v <= last; v += static_cast<long long>(kVpt) * stride) {
        const Stat chunk = load_row(xb, row, v, stride, held);
        store_row(yb, yvec, row, v, stride, held, chunk, all);
    }
}

// ---- host ---------------------------------------------------------------------------------------------
using Kernel = void (*)(const uint16_t*, uint16_t*, int, int, int, bool);

// The kernel for TPR lanes of VPT vectors each. Only the pairs launch_subwarp picks are instantiated: VPT 1
// with TPR 1..16 (rows of up to 16 vectors), VPT 2 with TPR 16 or 32 (up to 64), VPT 4 with TPR 32 (up to 128).
Kernel subwarp_for(int vpt, int tpr) {
    if (vpt == 4) return softmax_subwarp<32, 4>;
    if (vpt == 2) return tpr == 16 ? softmax_subwarp<16, 2> : softmax_subwarp<32, 2>;
    switch (tpr) {
        case 1: return softmax_subwarp<1, 1>;
        case 2: return softmax_subwarp<2, 1>;
        case 4: return softmax_subwarp<4, 1>;
        case 8: return softmax_subwarp<8, 1>;
        default: return softmax_subwarp<16, 1>;
    }
}

int next_pow2(long long n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

// Short rows: one vector per lane up to 16 vectors (TPR up to 16), then a full warp with 2 or 4 vectors.
int launch_subwarp(const uint16_t* xb, uint16_t* yb, int rows, int cols, int e0, bool yvec, long long nvec) {
    const int vpt = nvec <= 16 ? 1 : (nvec <= 64 ? 2 : 4);
    const int tpr = next_pow2((nvec + vpt - 1) / vpt);
    const Kernel k = subwarp_for(vpt, tpr);
    const long long rows_per_block = kSubwarpThreads / tpr;
    const long long blocks = (rows + rows_per_block - 1) / rows_per_block;
    k<<<static_cast<unsigned>(blocks), kSubwarpThreads>>>(xb, yb, rows, cols, e0, yvec);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

// Long rows: the fewest CTAs per row (a power of two, at most 8) that hold the row in kClusterCtaTarget
// threads each, then as few threads per CTA as hold it (a multiple of 32).
int launch_cluster(const uint16_t* xb, uint16_t* yb, int rows, int cols, int e0, bool yvec, long long nvec) {
    const long long per_cta = static_cast<long long>(kClusterVpt) * kClusterCtaTarget;
    int ctas = next_pow2((nvec + per_cta - 1) / per_cta);
    if (ctas > kMaxCluster) ctas = kMaxCluster;
    const long long per_thread_total = (nvec + kClusterVpt - 1) / kClusterVpt;
    const int threads = static_cast<int>(((per_thread_total + ctas - 1) / ctas + 31) / 32 * 32);
    const long long blocks = static_cast<long long>(rows) * ctas;
    if (blocks > 0x7FFFFFFFLL) return 3;
    if (ctas == 1) {
        softmax_cluster<<<static_cast<unsigned>(blocks), threads>>>(xb, yb, rows, cols, e0, yvec);
        return cudaGetLastError() == cudaSuccess ? 0 : 2;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(threads);
    config.stream = 0;  // the default stream, as the ABI says
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = ctas;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    const cudaError_t err = cudaLaunchKernelEx(&config, softmax_cluster, xb, yb, rows, cols, e0, yvec);
    return err == cudaSuccess && cudaGetLastError() == cudaSuccess ? 0 : 2;
}

}  // namespace

extern "C" int kseek_softmax_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
    if (rows < 0 || cols < 0) return 1;
    if (rows == 0 || cols == 0) return 0;  // nothing to write
    const uintptr_t xa = reinterpret_cast<uintptr_t>(x), ya = reinterpret_cast<uintptr_t>(y);
    if (x == nullptr || y == nullptr || (xa & 1) || (ya & 1)) return 1;
    // Elements are counted from x rounded down to 16 bytes (e0 elements before x); y gets the same virtual
    // base, which is 16-byte aligned exactly when y sits at x's offset within 16 bytes.
    const int e0 = static_cast<int>((xa & 15) >> 1);
    const uint16_t* xb = reinterpret_cast<const uint16_t*>(xa - 2 * e0);
    uint16_t* yb = reinterpret_cast<uint16_t*>(ya - 2 * e0);
    const bool yvec = ((ya - 2 * e0) & 15) == 0;
    // the most vectors one row spans: every row starts at the same offset when 8 divides cols
    const long long nvec = cols % 8 == 0 ? (e0 + cols - 1) / 8 + 1 : (static_cast<long long>(cols) + 6) / 8 + 1;
    if (nvec <= 128) return launch_subwarp(xb, yb, rows, cols, e0, yvec, nvec);
    if (nvec <= static_cast<long long>(kMaxCluster) * kClusterMaxThreads * kClusterVpt) {
        return launch_cluster(xb, yb, rows, cols, e0, yvec, nvec);
    }
    softmax_online<<<rows, kOnlineThreads>>>(xb, yb, rows, cols, e0, yvec);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
