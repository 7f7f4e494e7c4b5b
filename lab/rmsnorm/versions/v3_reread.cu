// rmsnorm: y = x / sqrt(mean(x^2) + eps) * weight along each row, bf16 in and out, fp32 math. Released kernel
// (issue 35).
//
// Math, per row r:  s = sum_j x[r, j]^2 (fp32),  inv = rsqrt(s / hidden + eps),
//                   y[r, j] = bf16(x[r, j] * inv * weight[j])   (one rounding, to nearest even)
//
// One read of x and one write of y per element: a row is loaded once into registers as 16-byte vectors of
// 8 bf16 and stays there while its sum of squares is reduced; the weight (one row, shared by every row) is read
// through the L1 cache while the reduction runs.
//
// Three shapes of work, by the number of 16-byte vectors a row spans (nvec):
//   nvec <= 128 (hidden up to ~1000): `rmsnorm_subwarp`, TPR lanes of a warp per row (1..32), VPT vectors each;
//     the sum is TPR-wide xor shuffles, no shared memory, no barrier.
//   nvec <= 1024 * kBlockVpt (hidden up to ~32000): `rmsnorm_block`, one CTA per row, as few warps as hold the
//     row at kBlockVpt vectors a thread; shuffles, then the warps' sums through shared memory.
//   longer rows: `rmsnorm_online`, one CTA of 1024 threads per row, two passes over global memory.
//
// Alignment: vectors are counted from x rounded down to 16 bytes, so a row of any width (33, 4095, 4097) is
// whole vectors in its middle (16-byte loads and stores) and at most one partial vector at each end, read and
// written element by element (never touching a neighbouring row's elements). Where y's offset within 16 bytes
// differs from x's, every store is element by element; where the weight's vectors do not line up with x's (a
// width 8 does not divide, or another offset), the weight is read element by element (from L1).
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

namespace {

constexpr int kSubwarpThreads = 256;
#ifndef KSEEK_BLOCK_VPT  // vectors a thread holds in rmsnorm_block
#define KSEEK_BLOCK_VPT 4
#endif
#ifndef KSEEK_STORE_CS  // 1: streaming stores (st.global.cs)
#define KSEEK_STORE_CS 0
#endif
#ifndef KSEEK_WEIGHT_LATE  // 1: rmsnorm_block reads the weight after the reduction (fewer registers held)
#define KSEEK_WEIGHT_LATE 0
#endif
#ifndef KSEEK_BLOCK_REREAD  // 1: rmsnorm_block holds nothing of the row across its reduction: it reads x again
#define KSEEK_BLOCK_REREAD 1    // (from L1, where the first read left it), so a thread needs ~half the registers
#endif
#ifndef KSEEK_REREAD_HINT  // 1: the first read asks L1 to keep the row (evict_last), the second to drop it
#define KSEEK_REREAD_HINT 0
#endif
#ifndef KSEEK_REREAD_MINB  // > 0: __launch_bounds__'s CTAs an SM for rmsnorm_block's re-reading build
#define KSEEK_REREAD_MINB 0
#endif
#ifndef KSEEK_SMALL_MINB  // > 0: whole rows that fit in 256 threads run a rmsnorm_block built for this many CTAs an SM
#define KSEEK_SMALL_MINB 0
#endif
constexpr int kBlockVpt = KSEEK_BLOCK_VPT;
constexpr int kBlockMaxThreads = 1024;
constexpr int kOnlineThreads = 1024;

__device__ __forceinline__ uint4 load_v4(const uint16_t* p) {  // x: read once, kept out of L1
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

// How a read of x asks L1 to treat the line: kStream (read once: no allocate), kKeep (read again soon: keep it),
// kLast (the second and last read).
enum Hint { kStream, kKeep, kLast };

// The re-reading kernel's loads are volatile: the second read of an address must not be merged with the first
// (that would hold the row in registers across the reduction, which is what this kernel exists to avoid).
template <Hint H>
__device__ __forceinline__ uint4 load_x_v4(const uint16_t* p) {
    if constexpr (H == kStream) return load_v4(p);
    uint4 r;
    if constexpr (H == kKeep && KSEEK_REREAD_HINT)
        asm volatile("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
    else if constexpr (H == kLast && KSEEK_REREAD_HINT)
        asm volatile("ld.global.nc.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
    else
        asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
    return r;
}

__device__ __forceinline__ uint4 load_weight_v4(const uint16_t* p) {  // the weight: read by every row, cached
    return __ldg(reinterpret_cast<const uint4*>(p));
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

// Where the pointers sit: elements are counted from x rounded down to 16 bytes (xb); y and the weight get
// virtual bases at the same count (yb; weight element i of a row starting at g0 is wgt[i] = element g0 + i).
struct Place {
    const uint16_t* xb;
    uint16_t* yb;
    const uint16_t* wgt;
    int rows, hidden, e0;
    bool yvec;  // y's virtual base is 16-byte aligned: whole vectors of y are stored whole
    bool wvec;  // every row's whole vectors of x line up with whole vectors of the weight
    float eps;
};

// One row's elements: [g0, g1) counted from xb. An empty range (g0 == g1) loads and stores nothing.
// WHOLE (a template argument below): every row starts on a 16-byte boundary of x, y and the weight alike (8
// divides hidden, all three aligned), so each vector is whole or past the row's end: no element-wise edges.
struct Row {
    long long g0, g1;
};

__device__ __forceinline__ Row row_at(const Place& p, long long r) {
    if (r >= p.rows) return {0, 0};
    const long long g0 = p.e0 + r * static_cast<long long>(p.hidden);
    return {g0, g0 + p.hidden};
}

__device__ __forceinline__ uint32_t set_half(uint32_t w, int j, uint32_t h) {
    return (j & 1) ? ((w & 0x0000FFFFu) | (h << 16)) : ((w & 0xFFFF0000u) | h);
}

// Vector v (elements 8v .. 8v+7) of the row: a whole vector in one 16-byte load, an edge vector element by
// element, elements outside the row as 0 (they add nothing to the sum and are never stored).
template <bool WHOLE, Hint H = kStream>
__device__ __forceinline__ uint4 load_vector(const uint16_t* xb, Row row, long long v) {
    const long long e = v * 8;
    if constexpr (WHOLE) return e < row.g1 ? load_x_v4<H>(xb + e) : make_uint4(0u, 0u, 0u, 0u);
    if (e >= row.g0 && e + 8 <= row.g1) return load_x_v4<H>(xb + e);
    uint32_t w[4] = {0u, 0u, 0u, 0u};
    if (e + 8 > row.g0 && e < row.g1) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const long long g = e + j;
            if (g >= row.g0 && g < row.g1) w[j / 2] = set_half(w[j / 2], j, __ldg(xb + g));
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// The weight under vector v of the row (0 outside it).
template <bool WHOLE>
__device__ __forceinline__ uint4 load_weight(const Place& p, Row row, long long v) {
    const long long e = v * 8;
    if constexpr (WHOLE) return e < row.g1 ? load_weight_v4(p.wgt + (e - row.g0)) : make_uint4(0u, 0u, 0u, 0u);
    if (p.wvec && e >= row.g0 && e + 8 <= row.g1) return load_weight_v4(p.wgt + (e - row.g0));
    uint32_t w[4] = {0u, 0u, 0u, 0u};
    if (e + 8 > row.g0 && e < row.g1) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const long long g = e + j;
            if (g >= row.g0 && g < row.g1) w[j / 2] = set_half(w[j / 2], j, __ldg(p.wgt + (g - row.g0)));
        }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <bool WHOLE>
__device__ __forceinline__ void store_vector(const Place& p, Row row, long long v, uint4 out) {
    const long long e = v * 8;
    if constexpr (WHOLE) {
        if (e < row.g1) store_v4(p.yb + e, out);
        return;
    }
    if (p.yvec && e >= row.g0 && e + 8 <= row.g1) {
        store_v4(p.yb + e, out);
        return;
    }
    if (e + 8 <= row.g0 || e >= row.g1) return;
    const uint32_t w[4] = {out.x, out.y, out.z, out.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const long long g = e + j;
        if (g >= row.g0 && g < row.g1) p.yb[g] = static_cast<uint16_t>((j & 1) ? (w[j / 2] >> 16) : w[j / 2]);
    }
}

__device__ __forceinline__ float lo_bf16(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }

__device__ __forceinline__ void unpack(uint4 r, float (&f)[8]) {
    f[0] = lo_bf16(r.x); f[1] = hi_bf16(r.x);
    f[2] = lo_bf16(r.y); f[3] = hi_bf16(r.y);
    f[4] = lo_bf16(r.z); f[5] = hi_bf16(r.z);
    f[6] = lo_bf16(r.w); f[7] = hi_bf16(r.w);
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);  // round to nearest even, once
    return *reinterpret_cast<const uint32_t*>(&b);
}

// Loads VPT vectors (v0 + k * stride) of the row into `raw`; returns the thread's sum of squares.
template <int VPT, bool WHOLE, Hint H = kStream>
__device__ __forceinline__ float load_row(const Place& p, Row row, long long v0, int stride, uint4 (&raw)[VPT]) {
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        raw[k] = load_vector<WHOLE, H>(p.xb, row, v0 + static_cast<long long>(k) * stride);
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        float f[8];
        unpack(raw[k], f);
#pragma unroll
        for (int j = 0; j < 8; ++j) sq = fmaf(f[j], f[j], sq);
    }
    return sq;
}

template <int VPT, bool WHOLE>
__device__ __forceinline__ void load_weights(const Place& p, Row row, long long v0, int stride, uint4 (&w)[VPT]) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) w[k] = load_weight<WHOLE>(p, row, v0 + static_cast<long long>(k) * stride);
}

// y = x * inv * weight for the thread's vectors.
template <int VPT, bool WHOLE>
__device__ __forceinline__ void store_row(const Place& p, Row row, long long v0, int stride,
                                          const uint4 (&raw)[VPT], const uint4 (&wraw)[VPT], float inv) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        float x[8], w[8], y[8];
        unpack(raw[k], x);
        unpack(wraw[k], w);
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = x[j] * inv * w[j];
        const uint4 out = make_uint4(pack_bf16x2(y[0], y[1]), pack_bf16x2(y[2], y[3]), pack_bf16x2(y[4], y[5]),
                                     pack_bf16x2(y[6], y[7]));
        store_vector<WHOLE>(p, row, v0 + static_cast<long long>(k) * stride, out);
    }
}

__device__ __forceinline__ float inverse_rms(const Place& p, float sum_sq) {
    return rsqrtf(sum_sq / static_cast<float>(p.hidden) + p.eps);
}

// ---- short rows: TPR lanes per row --------------------------------------------------------------------
template <int TPR, int VPT, bool WHOLE>
__global__ void __launch_bounds__(kSubwarpThreads) rmsnorm_subwarp(const Place p) {
    const int lane = threadIdx.x % TPR;
    const long long r = static_cast<long long>(blockIdx.x) * (kSubwarpThreads / TPR) + threadIdx.x / TPR;
    const Row row = row_at(p, r);  // rows past the end: empty, but their lanes still shuffle
    const long long v0 = (row.g0 >> 3) + lane;
    uint4 raw[VPT], wraw[VPT];
    float sq = load_row<VPT, WHOLE>(p, row, v0, TPR, raw);
    load_weights<VPT, WHOLE>(p, row, v0, TPR, wraw);
#pragma unroll
    for (int offset = TPR / 2; offset > 0; offset /= 2) sq += __shfl_xor_sync(0xFFFFFFFFu, sq, offset);
    store_row<VPT, WHOLE>(p, row, v0, TPR, raw, wraw, inverse_rms(p, sq));
}

// The CTA's sum: warps by shuffles, then every thread adds the warps' sums in the same order (deterministic).
__device__ __forceinline__ float block_sum(float a, float* warp_sums) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) a += __shfl_xor_sync(0xFFFFFFFFu, a, offset);
    const int warps = blockDim.x / 32;
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = a;
    __syncthreads();
    float all = warp_sums[0];
    for (int w = 1; w < warps; ++w) all += warp_sums[w];
    return all;
}

// ---- long rows: one CTA per row, the row in registers ----------------------------------------------
// MAXT, MINB: __launch_bounds__ (at most MAXT threads; registers for MINB such CTAs on one SM).
template <int MAXT, int MINB, bool WHOLE>
__global__ void __launch_bounds__(MAXT, MINB) rmsnorm_block(const Place p) {
    __shared__ float warp_sums[32];
    const Row row = row_at(p, blockIdx.x);
    const long long v0 = (row.g0 >> 3) + threadIdx.x;
    const int stride = static_cast<int>(blockDim.x);
    uint4 raw[kBlockVpt], wraw[kBlockVpt];
    const float sq = load_row<kBlockVpt, WHOLE>(p, row, v0, stride, raw);
    if constexpr (!KSEEK_WEIGHT_LATE) load_weights<kBlockVpt, WHOLE>(p, row, v0, stride, wraw);  // meanwhile
    const float inv = inverse_rms(p, block_sum(sq, warp_sums));
    if constexpr (KSEEK_WEIGHT_LATE) load_weights<kBlockVpt, WHOLE>(p, row, v0, stride, wraw);
    store_row<kBlockVpt, WHOLE>(p, row, v0, stride, raw, wraw, inv);
}

// ---- long rows, re-read: one CTA per row, nothing of it held across the reduction ---------------------
// The first pass sums the squares; the second reads x again (L1 still holds the row: a CTA's row is at most
// 64 KB, and the L1 of an SM 256 KB less its shared memory), reads the weight and stores. A thread holds its
// vectors only within a pass, so it needs about half of rmsnorm_block's registers and twice the warps fit an
// SM; torch.compile's kernel, the same two passes at 23 to 31 registers and 92% occupancy, reads DRAM at
// 4.12 TB/s on 16384 x 8192 where rmsnorm_block's 56 registers and 47% occupancy reach 3.84 (Nsight Compute,
// lab/rmsnorm/README.md). The sum is made in the same order as rmsnorm_block's: the output is the same bits.
template <int MAXT, int MINB, bool WHOLE>
__global__ void __launch_bounds__(MAXT, MINB) rmsnorm_reread(const Place p) {
    __shared__ float warp_sums[32];
    const Row row = row_at(p, blockIdx.x);
    const long long v0 = (row.g0 >> 3) + threadIdx.x;
    const int stride = static_cast<int>(blockDim.x);
    uint4 raw[kBlockVpt], wraw[kBlockVpt];
    const float sq = load_row<kBlockVpt, WHOLE, kKeep>(p, row, v0, stride, raw);
    const float inv = inverse_rms(p, block_sum(sq, warp_sums));
    load_row<kBlockVpt, WHOLE, kLast>(p, row, v0, stride, raw);
    load_weights<kBlockVpt, WHOLE>(p, row, v0, stride, wraw);
    store_row<kBlockVpt, WHOLE>(p, row, v0, stride, raw, wraw, inv);
}

// ---- very long rows: two passes over global memory ----------------------------------------------------
__global__ void __launch_bounds__(kOnlineThreads) rmsnorm_online(const Place p) {
    __shared__ float warp_sums[32];
    constexpr int kVpt = 4;
    const Row row = row_at(p, blockIdx.x);
    const long long first = row.g0 >> 3, last = (row.g1 - 1) >> 3;
    const int stride = kOnlineThreads;
    uint4 raw[kVpt], wraw[kVpt];
    float sq = 0.f;
    for (long long v = first + threadIdx.x; v <= last; v += static_cast<long long>(kVpt) * stride)
        sq += load_row<kVpt, false>(p, row, v, stride, raw);
    const float inv = inverse_rms(p, block_sum(sq, warp_sums));
    for (long long v = first + threadIdx.x; v <= last; v += static_cast<long long>(kVpt) * stride) {
        load_row<kVpt, false>(p, row, v, stride, raw);
        load_weights<kVpt, false>(p, row, v, stride, wraw);
        store_row<kVpt, false>(p, row, v, stride, raw, wraw, inv);
    }
}

// ---- host ---------------------------------------------------------------------------------------------
using Kernel = void (*)(const Place);

template <int VPT, bool WHOLE>
Kernel subwarp_for(int tpr) {
    switch (tpr) {
        case 1: return rmsnorm_subwarp<1, VPT, WHOLE>;
        case 2: return rmsnorm_subwarp<2, VPT, WHOLE>;
        case 4: return rmsnorm_subwarp<4, VPT, WHOLE>;
        case 8: return rmsnorm_subwarp<8, VPT, WHOLE>;
        case 16: return rmsnorm_subwarp<16, VPT, WHOLE>;
        default: return rmsnorm_subwarp<32, VPT, WHOLE>;
    }
}

template <bool WHOLE>
Kernel subwarp_kernel(int vpt, int tpr) {
    return vpt == 1 ? subwarp_for<1, WHOLE>(tpr) : (vpt == 2 ? subwarp_for<2, WHOLE>(tpr) : subwarp_for<4, WHOLE>(tpr));
}

int next_pow2(long long n) {
    int p = 1;
    while (p < n) p *= 2;
    return p;
}

int launched() { return cudaGetLastError() == cudaSuccess ? 0 : 2; }

// Short rows: one vector per lane up to 16 vectors (TPR up to 16), then a full warp with 2 or 4 vectors.
int launch_subwarp(const Place& p, long long nvec, bool whole) {
    const int vpt = nvec <= 16 ? 1 : (nvec <= 64 ? 2 : 4);
    const int tpr = next_pow2((nvec + vpt - 1) / vpt);
    const Kernel k = whole ? subwarp_kernel<true>(vpt, tpr) : subwarp_kernel<false>(vpt, tpr);
    const long long rows_per_block = kSubwarpThreads / tpr;
    const long long blocks = (p.rows + rows_per_block - 1) / rows_per_block;
    k<<<static_cast<unsigned>(blocks), kSubwarpThreads>>>(p);  // the default stream, as the ABI says
    return launched();
}

// Rows in registers: as few threads (a multiple of 32) as hold the row at kBlockVpt vectors each.
constexpr int kSmallMinb = KSEEK_SMALL_MINB > 0 ? KSEEK_SMALL_MINB : 1;

constexpr int kRereadMinb = KSEEK_REREAD_MINB > 0 ? KSEEK_REREAD_MINB : 1;

int launch_block(const Place& p, long long nvec, bool whole) {
    const int threads = static_cast<int>(((nvec + kBlockVpt - 1) / kBlockVpt + 31) / 32 * 32);
    if (KSEEK_BLOCK_REREAD) {
        // the register budget only for whole rows: the edge code spills under it
        const Kernel k = whole ? rmsnorm_reread<kBlockMaxThreads, kRereadMinb, true>
                               : rmsnorm_reread<kBlockMaxThreads, 1, false>;
        k<<<static_cast<unsigned>(p.rows), threads>>>(p);
        return launched();
    }
    // the tighter register budget only for whole rows: the edge code would spill under it
    const bool small = KSEEK_SMALL_MINB > 0 && threads <= 256 && whole;
    const Kernel k = small ? rmsnorm_block<256, kSmallMinb, true>
                           : (whole ? rmsnorm_block<kBlockMaxThreads, 1, true>
                                    : rmsnorm_block<kBlockMaxThreads, 1, false>);
    k<<<static_cast<unsigned>(p.rows), threads>>>(p);
    return launched();
}

}  // namespace

extern "C" int kseek_rmsnorm(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, int rows,
                             int hidden, float eps) {
    if (rows < 0 || hidden < 0) return 1;
    if (rows == 0 || hidden == 0) return 0;  // nothing to write
    const uintptr_t xa = reinterpret_cast<uintptr_t>(x), ya = reinterpret_cast<uintptr_t>(y);
    const uintptr_t wa = reinterpret_cast<uintptr_t>(weight);
    if (x == nullptr || y == nullptr || weight == nullptr || ((xa | ya | wa) & 1)) return 1;
    Place p;
    // Elements are counted from x rounded down to 16 bytes (e0 elements before x); y gets the same virtual
    // base, which is 16-byte aligned exactly when y sits at x's offset within 16 bytes. When 8 divides hidden,
    // every row starts e0 elements past a 16-byte boundary, and the weight's vectors line up with x's when the
    // weight sits e0 elements past one too.
    p.e0 = static_cast<int>((xa & 15) >> 1);
    p.xb = reinterpret_cast<const uint16_t*>(xa - 2 * p.e0);
    p.yb = reinterpret_cast<uint16_t*>(ya - 2 * p.e0);
    p.wgt = reinterpret_cast<const uint16_t*>(weight);
    p.yvec = ((ya - 2 * p.e0) & 15) == 0;
    p.wvec = hidden % 8 == 0 && ((wa - 2 * p.e0) & 15) == 0;
    p.rows = rows;
    p.hidden = hidden;
    p.eps = eps;
    // the most vectors one row spans: every row starts at the same offset when 8 divides hidden
    const long long nvec =
        hidden % 8 == 0 ? (p.e0 + hidden - 1) / 8 + 1 : (static_cast<long long>(hidden) + 6) / 8 + 1;
    const bool whole = hidden % 8 == 0 && p.e0 == 0 && p.yvec && p.wvec;
    if (nvec <= 128) return launch_subwarp(p, nvec, whole);
    if (nvec <= static_cast<long long>(kBlockMaxThreads) * kBlockVpt) return launch_block(p, nvec, whole);
    rmsnorm_online<<<static_cast<unsigned>(rows), kOnlineThreads>>>(p);
    return launched();
}
