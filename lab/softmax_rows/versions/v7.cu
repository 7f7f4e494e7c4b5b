// softmax_rows: y = softmax(x) along each row, bf16 in and out, fp32 math (issue 35). Version v7 of the lab
// (2026-12-05, written without a GPU; screened on an H100 the same evening, lab/softmax_rows/README.md): v4, the
// release, with `softmax_cluster_rows` for the rows of 129 .. 8192 vectors where one row a cluster would run more than
// one wave. A cluster takes several rows, and each thread issues its loads of the next row before it reduces, exchanges
// and writes the current one, so an SM has a row's loads in flight through the phases where v4's CTAs had none (v4 at
// 1024 x 32000 reads DRAM at 59% of its peak; QuACK's 34.7 us there is 3.78 TB/s). Rounds 2's v2/v3 kept rows in flight
// through shared memory with a barrier a row and lost; this keeps them in registers (16 more a thread) and keeps v4's
// st.async exchange and one-ex2 reductions. Its only new runtime calls are occupancy queries (cudaGetDevice,
// cudaDeviceGetAttribute, cudaOccupancyMaxActiveBlocksPerMultiprocessor, cudaOccupancyMaxActiveClusters), asked once
// per device and shape of launch.
//
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
#ifndef KSEEK_SUBWARP_KEEP  // 1: the lanes-per-row kernel keeps fp32 exponentials; 0: it keeps the input
#define KSEEK_SUBWARP_KEEP 1
#endif
#ifndef KSEEK_CLUSTER_MAXT  // softmax_cluster's __launch_bounds__: at most this many threads a CTA, and registers
#define KSEEK_CLUSTER_MAXT 1024  // for KSEEK_CLUSTER_MINB such CTAs on one SM
#endif
#ifndef KSEEK_CLUSTER_MINB
#define KSEEK_CLUSTER_MINB 1
#endif
#ifndef KSEEK_ROWS_LOOP  // 1: softmax_cluster_rows where one row a cluster runs more than a wave; 0: v4 as released
#define KSEEK_ROWS_LOOP 1
#endif
#ifndef KSEEK_ROWS_CAP  // the most rows a cluster of softmax_cluster_rows takes (0: as many as keep one wave)
#define KSEEK_ROWS_CAP 0
#endif
#ifndef KSEEK_ROWS_MAXPER  // no row loop where a cluster would take more rows than this (0: no bound); see below
#define KSEEK_ROWS_MAXPER 0
#endif
#ifndef KSEEK_ROWS_MINCTAS  // no row loop where a row takes fewer CTAs than this (1: every cluster size); see below
#define KSEEK_ROWS_MINCTAS 1
#endif
#ifndef KSEEK_ROWS_MINB  // softmax_cluster_rows' registers are sized for this many CTAs of 256 threads an SM
#define KSEEK_ROWS_MINB 3
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
__device__ __forceinline__ Stat row_stat(const uint4 (&raw)[VPT], Held<VPT, KEEP>& held);

template <int VPT, bool KEEP>
__device__ __forceinline__ Stat load_row(const uint16_t* xb, Row row, long long v0, int stride,
                                         Held<VPT, KEEP>& held) {
    uint4 raw[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) raw[k] = load_vector(xb, row, v0 + static_cast<long long>(k) * stride);
    return row_stat(raw, held);
}

// The thread's (m_thread, sum 2^(t - m_thread)) of its loaded vectors, their exponentials (or the vectors) kept.
template <int VPT, bool KEEP>
__device__ __forceinline__ Stat row_stat(const uint4 (&raw)[VPT], Held<VPT, KEEP>& held) {
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
// Thread 0's arrival on `bar` for its current phase, with the bytes the cluster's st.async will bring.
__device__ __forceinline__ void xchg_arm(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void xchg_init(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    xchg_arm(bar, bytes);
}
// Waits for the phase of `bar` of this parity, acquiring at cluster scope (the bytes were written by other CTAs'
// st.async).
__device__ __forceinline__ void xchg_wait(unsigned bar, unsigned parity = 0) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
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

// ---- long rows, many of them: a cluster takes several rows (v7) ---------------------------------------
// The rows of 129 .. 8192 vectors where one row a cluster would take more than one wave of softmax_cluster.
// Each thread holds its vectors of the next row in registers (`next`, issued before the current row's
// reduction), so its SM has loads in flight while it reduces, exchanges and writes.
#if KSEEK_ROWS_LOOP && !KSEEK_CLUSTER_XCHG
#error "softmax_cluster_rows exchanges by st.async (KSEEK_CLUSTER_XCHG 1)"
#endif
constexpr int kRowsThreads = 256;  // the most threads a CTA (launch_cluster's choice never passes it here)
constexpr int kRowsVpt = 4;        // vectors a thread, as softmax_cluster's
static_assert(kRowsThreads / 32 <= 32, "block_merge's warp reduction takes at most 32 warps");

// A 16-byte load whose issue the compiler keeps where it is written (volatile), ahead of the reduction and the
// exchange, also volatile: its registers are waited on only where they are first read, a row later.
__device__ __forceinline__ uint4 issue_v4(const uint16_t* p) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}

// Issues the loads of VPT vectors (v0 + k * stride) of the row; edge vectors as load_vector reads them.
template <int VPT>
__device__ __forceinline__ void issue_row(const uint16_t* xb, Row row, long long v0, int stride, uint4 (&raw)[VPT]) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const long long v = v0 + static_cast<long long>(k) * stride;
        const long long e = v * 8;
        raw[k] = (e >= row.g0 && e + 8 <= row.g1) ? issue_v4(xb + e) : load_vector(xb, row, v);
    }
}

// Both exchange barriers of softmax_cluster_rows, initialised and armed for their first phase (rows 0 and 1).
__device__ __forceinline__ void xchg_init_pair(unsigned bar0, unsigned bar1, unsigned bytes) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar0) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar1) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    xchg_arm(bar0, bytes);
    xchg_arm(bar1, bytes);
}

// blockDim.x: a multiple of 32 up to kRowsThreads; the launch's cluster size (1 when launched without one) is the
// number of CTAs a row, consecutive in blockIdx.x; `clusters`: the grid's. Cluster c takes rows c, c + clusters, ...
// Its k-th row (k = 0, 1, ...) goes through warp_stats[k & 1], peer_stat[k & 1] and xbar[k & 1], whose phase
// k >> 1 it is. Why each can be reused two rows on:
//  - warp_stats[k & 1]: a thread writes row k + 2's after the __syncthreads of row k + 1, which every thread
//    reaches only after its read of row k's.
//  - peer_stat[k & 1] and xbar[k & 1]: the argument above lab/softmax_rows/versions/v3.cu's stream kernel, with
//    one change: each CTA also sends its pair to itself, so a phase takes C pairs' bytes. A CTA sends row k + 2's
//    pair (to itself as to its peers) only after its wait for row k + 1, which needs every CTA's row k + 1 pair,
//    each sent after that CTA's __syncthreads of row k + 1, which all its threads reach only after their wait for
//    row k and their reads of peer_stat[k & 1]. So no byte of row k + 2 lands before row k's phase completed and
//    was seen by every thread (a parity wait sees at most one phase on), nor before row k's slots were read.
//    Thread 0 arms row k + 2's phase after its own wait for row k, so the arrival lands in that phase; peers'
//    bytes may come first (the tx-count goes below zero), but the phase cannot complete without the arrival.
// Every CTA of a cluster takes the same rows, so every send has its waiter and every wait its C sends; after
// its last wait no byte is on its way to a CTA, which may then exit (as softmax_cluster's CTAs do).
__global__ void __launch_bounds__(kRowsThreads, KSEEK_ROWS_MINB)
softmax_cluster_rows(const uint16_t* __restrict__ xb, uint16_t* __restrict__ yb, int rows, int cols, int e0, bool yvec,
                     int clusters) {
    __shared__ Stat warp_stats[2][kRowsThreads / 32];
    __shared__ __align__(8) Stat peer_stat[2][kMaxCluster];  // [k & 1][rank]: the cluster's CTAs' pairs of row k
    __shared__ __align__(8) unsigned long long xbar[2];
    const unsigned ctas = cluster_size();
    const unsigned rank = blockIdx.x % ctas;
    const int stride = static_cast<int>(ctas * blockDim.x);
    const long long first = static_cast<long long>(rank) * blockDim.x + threadIdx.x;  // from the row's first vector
    long long r = blockIdx.x / ctas;  // < rows: the launch has no more clusters than rows
    Row row = row_at(r, rows, cols, e0);
    uint4 next[kRowsVpt];
    issue_row(xb, row, (row.g0 >> 3) + first, stride, next);
    if (ctas > 1) {
        if (threadIdx.x == 0) xchg_init_pair(smem_addr(&xbar[0]), smem_addr(&xbar[1]), ctas * 8u);
        cluster_arrive_relaxed();
        cluster_wait();  // every CTA's barriers are armed before any st.async reaches them
    }
    for (unsigned k = 0; r < rows; ++k) {
        const Row cur = row;
        const long long v0 = (cur.g0 >> 3) + first;
        uint4 raw[kRowsVpt];
#pragma unroll
        for (int j = 0; j < kRowsVpt; ++j) raw[j] = next[j];
        r += clusters;
        row = row_at(r, rows, cols, e0);  // past the last row: empty, and its vectors load nothing
        issue_row(xb, row, (row.g0 >> 3) + first, stride, next);
        Held<kRowsVpt, true> held;
        const Stat mine = row_stat(raw, held);
        Stat all = block_merge(mine, warp_stats[k & 1]);
        if (ctas > 1) {
            const unsigned p = k & 1, bar = smem_addr(&xbar[p]);
            if (threadIdx.x < ctas) send_stat(smem_addr(&peer_stat[p][rank]), bar, threadIdx.x, all);
            xchg_wait(bar, (k >> 1) & 1);
            if (threadIdx.x == 0) xchg_arm(bar, ctas * 8u);  // the phase of row k + 2
            const unsigned slot = threadIdx.x % kMaxCluster;  // each group of 8 lanes reduces the same pairs
            all = group_reduce<kMaxCluster>(slot < ctas ? peer_stat[p][slot] : Stat{-INFINITY, 0.f});
        }
        store_row(yb, yvec, cur, v0, stride, held, mine, all);
    }
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

// A launch of `kernel` in clusters of `ctas` CTAs (a plain launch where ctas is 1 would do as well; the
// attribute keeps one path).
cudaLaunchConfig_t cluster_config(long long blocks, int threads, int ctas, cudaLaunchAttribute* attribute) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(threads);
    config.stream = 0;  // the default stream, as the ABI says
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = ctas;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    return config;
}

// How many clusters of `ctas` CTAs of `threads` threads of `kernel` fit on the chip at once (CTAs where ctas is
// 1); 0 where the runtime cannot say.
template <typename K>
int ask_resident(K kernel, int ctas, int threads, int device) {
    int n = 0;
    if (ctas == 1) {
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0) != cudaSuccess) {
            cudaGetLastError();  // a failed query is not the launch's error
            return 0;
        }
        return n * sms;
    }
    cudaLaunchAttribute attribute[1];
    const cudaLaunchConfig_t config = cluster_config(ctas, threads, ctas, attribute);
    if (cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(kernel), &config) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

// What fits at once, by CTAs a row (1, 2, 4, 8: index log2) and warps a CTA (1 .. 8): clusters of softmax_cluster
// (one row each) and of softmax_cluster_rows. Asked once per process (a function-local static, so a first call
// from two threads asks once), on the device current then: a process that later moves to a GPU of another size
// keeps these counts, which decide only how many clusters run, never what they compute.
struct Residency {
    int one_row[4][9];
    int many_rows[4][9];
};

Residency ask_residency() {
    Residency fit = {};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        cudaGetLastError();
        return fit;
    }
    for (int c = 0; c < 4; ++c) {
        for (int w = 1; w <= kRowsThreads / 32; ++w) {
            fit.one_row[c][w] = ask_resident(softmax_cluster, 1 << c, 32 * w, device);
            fit.many_rows[c][w] = ask_resident(softmax_cluster_rows, 1 << c, 32 * w, device);
        }
    }
    return fit;
}

int log2_of(int pow2) {
    int n = 0;
    while ((1 << n) < pow2) ++n;
    return n;
}

// The clusters softmax_cluster_rows runs `rows` rows on, each cluster taking rows c, c + clusters, ...; 0 where
// one row a cluster (softmax_cluster) fits in one wave, or where the runtime gave no counts. Every cluster takes
// ceil(rows / clusters) or one fewer, the fewest the chip's resident clusters allow (KSEEK_ROWS_CAP, if set,
// bounds it: more clusters, several waves).
int rows_kernel_clusters(int rows, int ctas, int threads) {
    if (!KSEEK_ROWS_LOOP || threads > kRowsThreads) return 0;
    static const Residency fit = ask_residency();
    const int c = log2_of(ctas), w = threads / 32;
    if (fit.one_row[c][w] <= 0 || rows <= fit.one_row[c][w] || fit.many_rows[c][w] <= 0) return 0;
    long long per_cluster = (rows + fit.many_rows[c][w] - 1) / fit.many_rows[c][w];
    // The H100 screen (2026-12-05): the loop won where it takes 3 or 4 rows a cluster (256 x 32768, 512 x 16384)
    // and lost where it takes many (1024 x 32000, 8192 x 8192, 4096 x 2048): there v4's kernel stays.
    if (KSEEK_ROWS_MAXPER > 0 && per_cluster > KSEEK_ROWS_MAXPER) return 0;
    // Round 8 (H100, 2026-12-06): bounded to 4 rows a cluster it still lost 7.6% at 4096 x 2048, a row one CTA (3
    // rows a CTA), and won only where a row spans 2 or 4 CTAs (512 x 16384, 256 x 32768).
    if (ctas < KSEEK_ROWS_MINCTAS) return 0;
    if (KSEEK_ROWS_CAP > 0 && per_cluster > KSEEK_ROWS_CAP) per_cluster = KSEEK_ROWS_CAP;
    return static_cast<int>((rows + per_cluster - 1) / per_cluster);
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
    cudaLaunchAttribute attribute[1];
    const int clusters = rows_kernel_clusters(rows, ctas, threads);
    if (clusters > 0) {
        const cudaLaunchConfig_t config =
            cluster_config(static_cast<long long>(clusters) * ctas, threads, ctas, attribute);
        const cudaError_t err =
            cudaLaunchKernelEx(&config, softmax_cluster_rows, xb, yb, rows, cols, e0, yvec, clusters);
        return err == cudaSuccess && cudaGetLastError() == cudaSuccess ? 0 : 2;
    }
    if (ctas == 1) {
        softmax_cluster<<<static_cast<unsigned>(blocks), threads>>>(xb, yb, rows, cols, e0, yvec);
        return cudaGetLastError() == cudaSuccess ? 0 : 2;
    }
    const cudaLaunchConfig_t config = cluster_config(blocks, threads, ctas, attribute);
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
