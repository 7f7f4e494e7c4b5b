// The judge's fp32 attention reference (gpu_harness/tasks/attention_fwd.py): one kernel, one pass over the keys.
//
// For each query row at position p (a row of Q, or the rows listed in `rows`):
//   s_j = scale * (q . k_j)                 over the keys j that p sees (causal: j <= p + Sk - Sq)
//   O   = sum_j exp(s_j - m) v_j / sum_j exp(s_j - m),   m = max_j s_j
//   LSE = m + log sum_j exp(s_j - m)
// A row that sees no key gets O = 0 and LSE = -inf.
//
// Every product and sum is an fp32 FMA (no tensor cores, no TF32): the same arithmetic as the torch reference
// it replaces on the GPU. That one materialises the scores and makes about six passes over them (scale, mask,
// max, exp, sum, the second product); here the softmax is online (running max and sum per row, the
// accumulator rescaled when the max grows), so the scores never leave the chip, and key tiles that a causal
// block cannot see are not computed at all.
//
// One block: 64 query rows of one (batch, query head); 8 warps, each owning 8 rows. Per tile of 64 keys:
//   S = Q K^T   each lane 4 rows x 4 keys; Q and K sit transposed in shared memory so that a lane reads its
//               4 rows (broadcast within the warp) and its 4 keys as one float4 each
//   softmax     row max and row sum over the 16 lanes of a row group by shuffles
//   O += P V    P goes through a warp-private shared buffer; each lane 4 rows x D/16 columns (float2 pairs)
//
// The same library holds the judge's comparison (kseek_reference_compare, at the end): the four figures of
// one output against its reference in a single pass. Its torch equivalent (compare_torch) is about twenty
// small kernels, and each of them waits for a free SM while a reference computed ahead on another stream
// holds the GPU; one kernel waits once.
//
// Built and loaded by the judging process only (never by a candidate's process), through the same build
// cache as candidates.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int BR = 64;                 // query rows per block
constexpr int BC = 64;                 // keys per tile
constexpr int WARPS = 8;
constexpr int THREADS = WARPS * 32;
constexpr int WARP_ROWS = BR / WARPS;  // 8: two row groups of 4
constexpr int P_STRIDE = BC;           // no padding: 4 more floats a row would cost 1 KB a block, and two
                                       // blocks of 112 KB (D = 128) would no longer fit on one SM

__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }

// 8 consecutive elements (16 bytes, aligned: D is a multiple of 8) in fp32; zeros when `p` is null
template <typename T>
__device__ inline void load8(const T* p, float out[8]) {
    if (p == nullptr) {
#pragma unroll
        for (int e = 0; e < 8; ++e) out[e] = 0.f;
        return;
    }
    uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* x = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = to_float(x[e]);
}

__device__ inline float row_group_max(float x) {    // over the 16 lanes of a row group (same lane / 16)
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

__device__ inline float row_group_sum(float x) {
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

template <int D>
constexpr size_t smem_bytes() {       // Q^T, K^T, V tiles and the warps' P buffers, all fp32
    return (size_t(D) * BR + size_t(D) * BC + size_t(BC) * D + size_t(WARPS) * WARP_ROWS * P_STRIDE) * 4;
}

// Two blocks per SM up to D = 128 (112 KB of shared memory each, 127 registers a thread), one above. With one
// block of 8 warps an SM issued on 58% of its cycles (ncu, D = 128 on an H200), too few warps to hide the
// shared-memory latency.
template <typename T, int D>
__global__ void __launch_bounds__(THREADS, D <= 128 ? 2 : 1)
attention_reference(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    float* __restrict__ o, float* __restrict__ lse, const int* __restrict__ rows, int n_rows,
                    int Sq, int Sk, int Hq, int Hkv, int causal, float scale) {
    static_assert(D % 32 == 0, "head_dim must be a multiple of 32");
    constexpr int COLS = D / 16;        // O columns per lane: float2 pairs at 2 * cg + 32 * i
    extern __shared__ float4 smem_f4[];
    float* qt = reinterpret_cast<float*>(smem_f4);   // [D][BR]
    float* kt = qt + D * BR;                         // [D][BC]
    float* vs = kt + D * BC;                         // [BC][D]
    float* pbuf = vs + BC * D;                       // [WARPS][WARP_ROWS][P_STRIDE]
    __shared__ int row_pos[BR];
    __shared__ int max_pos;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int rg = lane / 16, cg = lane % 16;        // row group (4 rows) and column group of this lane
    const int bh = blockIdx.y, b = bh / Hq, h = bh % Hq, hk = h / (Hq / Hkv);
    // the heaviest causal blocks (last rows, most keys) are launched first: less tail at the end of the grid
    const int row0 = (gridDim.x - 1 - blockIdx.x) * BR;

    if (tid == 0) max_pos = -1;
    __syncthreads();
    if (tid < BR) {
        const int i = row0 + tid;
        const int pos = i < n_rows ? (rows ? rows[i] : i) : -1;
        row_pos[tid] = pos;
        atomicMax(&max_pos, pos);
    }
    __syncthreads();

    // Q tile, transposed (lane -> row, so that the stores do not conflict); rows past the end are zeros
    for (int idx = tid; idx < BR * (D / 8); idx += THREADS) {
        const int r = idx % BR, c = idx / BR;
        const int pos = row_pos[r];
        float x[8];
        load8<T>(pos >= 0 ? q + ((size_t(b) * Sq + pos) * Hq + h) * D + c * 8 : nullptr, x);
#pragma unroll
        for (int e = 0; e < 8; ++e) qt[(c * 8 + e) * BR + r] = x[e];
    }

    const int shift = Sk - Sq;             // query p sees keys j <= p + shift (bottom-right causal mask)
    const int key_end = causal ? min(Sk, max_pos + shift + 1) : Sk;
    int my_pos[4];
    float m[4], l[4], acc[4][COLS];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        my_pos[r] = row_pos[warp * WARP_ROWS + rg * 4 + r];
        m[r] = -INFINITY;
        l[r] = 0.f;
#pragma unroll
        for (int i = 0; i < COLS; ++i) acc[r][i] = 0.f;
    }
    float* my_p = pbuf + warp * WARP_ROWS * P_STRIDE;
    // The two row groups read their P rows 4 * P_STRIDE floats apart, in the same banks: the second group's
    // columns are XOR-ed by 16 so that its float4 falls in other banks (one shared-memory pass, not two).
    const int swizzle = rg * 16;

    for (int j0 = 0; j0 < key_end; j0 += BC) {
        __syncthreads();                   // every warp is done with the previous tile (and Q is stored)
        // K tile, transposed (lane -> key); V tile row-major (lanes -> consecutive 8-column chunks of a row)
        for (int idx = tid; idx < BC * (D / 8); idx += THREADS) {
            const int j = idx % BC, c = idx / BC;
            float x[8];
            load8<T>(j0 + j < Sk ? k + ((size_t(b) * Sk + j0 + j) * Hkv + hk) * D + c * 8 : nullptr, x);
#pragma unroll
            for (int e = 0; e < 8; ++e) kt[(c * 8 + e) * BC + j] = x[e];
        }
        for (int idx = tid; idx < BC * (D / 8); idx += THREADS) {
            const int c = idx % (D / 8), j = idx / (D / 8);
            float x[8];
            load8<T>(j0 + j < Sk ? v + ((size_t(b) * Sk + j0 + j) * Hkv + hk) * D + c * 8 : nullptr, x);
            float4* dst = reinterpret_cast<float4*>(vs + j * D + c * 8);
            dst[0] = make_float4(x[0], x[1], x[2], x[3]);
            dst[1] = make_float4(x[4], x[5], x[6], x[7]);
        }
        __syncthreads();

        // S = Q K^T for rows warp*8 + rg*4 + {0..3}, keys j0 + cg*4 + {0..3}
        float s[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[r][c] = 0.f;
        const float* qw = qt + warp * WARP_ROWS + rg * 4;
        const float* kw = kt + cg * 4;
#pragma unroll 8
        for (int d = 0; d < D; ++d) {
            const float4 a = *reinterpret_cast<const float4*>(qw + d * BR);
            const float4 kk = *reinterpret_cast<const float4*>(kw + d * BC);
            const float av[4] = {a.x, a.y, a.z, a.w}, kv[4] = {kk.x, kk.y, kk.z, kk.w};
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int c = 0; c < 4; ++c) s[r][c] = fmaf(av[r], kv[c], s[r][c]);
        }

        // online softmax: scale, mask, new running max, rescale what was accumulated under the old one
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            float tile_max = -INFINITY;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int j = j0 + cg * 4 + c;
                const bool seen = j < Sk && my_pos[r] >= 0 && (!causal || j <= my_pos[r] + shift);
                s[r][c] = seen ? s[r][c] * scale : -INFINITY;
                tile_max = fmaxf(tile_max, s[r][c]);
            }
            const float m_new = fmaxf(m[r], row_group_max(tile_max));
            const float base = m_new == -INFINITY ? 0.f : m_new;   // nothing seen yet: every exp is 0
            const float alpha = expf(m[r] - base);                  // 0 while m was -inf
            float sum = 0.f;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                s[r][c] = expf(s[r][c] - base);
                sum += s[r][c];
            }
            l[r] = l[r] * alpha + row_group_sum(sum);
            m[r] = m_new;
#pragma unroll
            for (int i = 0; i < COLS; ++i) acc[r][i] *= alpha;
            *reinterpret_cast<float4*>(my_p + (rg * 4 + r) * P_STRIDE + ((cg * 4) ^ swizzle)) =
                make_float4(s[r][0], s[r][1], s[r][2], s[r][3]);
        }
        __syncwarp();

        // O += P V: 4 keys at a time (one float4 of P per row), V as float2 pairs shared by both row groups
        const float* pw = my_p + rg * 4 * P_STRIDE;
#pragma unroll 2
        for (int j = 0; j < BC; j += 4) {
            float4 p4[4];
#pragma unroll
            for (int r = 0; r < 4; ++r)
                p4[r] = *reinterpret_cast<const float4*>(pw + r * P_STRIDE + (j ^ swizzle));
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) {
                const float* vrow = vs + (j + jj) * D + 2 * cg;
#pragma unroll
                for (int i = 0; i < COLS / 2; ++i) {
                    const float2 vv = *reinterpret_cast<const float2*>(vrow + 32 * i);
#pragma unroll
                    for (int r = 0; r < 4; ++r) {
                        const float p = jj == 0 ? p4[r].x : jj == 1 ? p4[r].y : jj == 2 ? p4[r].z : p4[r].w;
                        acc[r][2 * i] = fmaf(p, vv.x, acc[r][2 * i]);
                        acc[r][2 * i + 1] = fmaf(p, vv.y, acc[r][2 * i + 1]);
                    }
                }
            }
        }
        __syncwarp();                      // this warp's P buffer is free for the next tile
    }

#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const int i = row0 + warp * WARP_ROWS + rg * 4 + r;
        if (i >= n_rows) continue;
        const bool any = l[r] > 0.f;
        float* orow = o + ((size_t(b) * n_rows + i) * Hq + h) * D + 2 * cg;
#pragma unroll
        for (int c = 0; c < COLS / 2; ++c) {
            const float2 out = any ? make_float2(acc[r][2 * c] / l[r], acc[r][2 * c + 1] / l[r])
                                   : make_float2(0.f, 0.f);
            *reinterpret_cast<float2*>(orow + 32 * c) = out;
        }
        if (cg == 0) lse[(size_t(b) * Hq + h) * n_rows + i] = any ? m[r] + logf(l[r]) : -INFINITY;
    }
}

template <typename T, int D>
int launch(const void* q, const void* k, const void* v, float* o, float* lse, const int* rows, int n_rows,
           int batch, int Sq, int Sk, int Hq, int Hkv, int causal, float scale, cudaStream_t stream) {
    constexpr size_t smem = smem_bytes<D>();
    cudaError_t err = cudaFuncSetAttribute(attention_reference<T, D>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (err != cudaSuccess) return int(err);
    const dim3 grid((n_rows + BR - 1) / BR, batch * Hq);
    attention_reference<T, D><<<grid, THREADS, smem, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), o, lse, rows, n_rows,
        Sq, Sk, Hq, Hkv, causal, scale);
    return int(cudaGetLastError());
}

template <typename T>
int dispatch(int head_dim, const void* q, const void* k, const void* v, float* o, float* lse, const int* rows,
             int n_rows, int batch, int Sq, int Sk, int Hq, int Hkv, int causal, float scale, cudaStream_t st) {
    switch (head_dim) {
        case 64: return launch<T, 64>(q, k, v, o, lse, rows, n_rows, batch, Sq, Sk, Hq, Hkv, causal, scale, st);
        case 96: return launch<T, 96>(q, k, v, o, lse, rows, n_rows, batch, Sq, Sk, Hq, Hkv, causal, scale, st);
        case 128: return launch<T, 128>(q, k, v, o, lse, rows, n_rows, batch, Sq, Sk, Hq, Hkv, causal, scale, st);
        case 192: return launch<T, 192>(q, k, v, o, lse, rows, n_rows, batch, Sq, Sk, Hq, Hkv, causal, scale, st);
        case 256: return launch<T, 256>(q, k, v, o, lse, rows, n_rows, batch, Sq, Sk, Hq, Hkv, causal, scale, st);
        default: return -1;
    }
}

}  // namespace

// Inputs as in the candidates' ABI ([B, S, H, D], contiguous, dtype 0 = bf16, 1 = fp16). Outputs in fp32:
// o [B, n_rows, Hq, D] and lse [B, Hq, n_rows], for query positions rows[0 .. n_rows) (all Sq rows in order
// when rows is null). Returns 0, -1 for a shape this kernel does not handle (the caller uses the torch
// reference), or a CUDA error code.
extern "C" int kseek_reference_attention_fwd(const void* q, const void* k, const void* v, float* o, float* lse,
                                             const int* rows, int n_rows, int batch, int seqlen_q, int seqlen_k,
                                             int heads_q, int heads_kv, int head_dim, int dtype, int causal,
                                             float softmax_scale, cudaStream_t stream) {
    if (n_rows <= 0 || batch <= 0 || seqlen_k <= 0 || heads_kv <= 0 || heads_q % heads_kv != 0 ||
        size_t(batch) * heads_q > 65535)
        return -1;
    if (dtype == 0)
        return dispatch<__nv_bfloat16>(head_dim, q, k, v, o, lse, rows, n_rows, batch, seqlen_q, seqlen_k,
                                       heads_q, heads_kv, causal, softmax_scale, stream);
    if (dtype == 1)
        return dispatch<__half>(head_dim, q, k, v, o, lse, rows, n_rows, batch, seqlen_q, seqlen_k, heads_q,
                                heads_kv, causal, softmax_scale, stream);
    return -1;
}

// ---- the comparison ----
namespace {

constexpr int CMP_THREADS = 256;
constexpr int CMP_MAX_BLOCKS = 1024;

__device__ inline float cand_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float cand_float(__half x) { return __half2float(x); }
__device__ inline float cand_float(float x) { return x; }

// figures[0] += elements where the reference is finite and the candidate is not
// figures[1] += elements where the reference is not finite (-inf for a row that sees no key) and the candidate
//               differs from it (NaN against NaN counts as the same)
// figures[2] += sum of (c - r)^2 and figures[3] += sum of r^2, both in fp64, over the elements where both are
//               finite
template <typename T>
__global__ void __launch_bounds__(CMP_THREADS) compare_outputs(const T* __restrict__ cand,
                                                               const float* __restrict__ ref, long long n,
                                                               double* figures) {
    double bad = 0.0, special = 0.0, num2 = 0.0, den2 = 0.0;
    for (long long i = blockIdx.x * (long long)CMP_THREADS + threadIdx.x; i < n;
         i += (long long)gridDim.x * CMP_THREADS) {
        const float r = ref[i];
        const float c = cand_float(cand[i]);
        if (isfinite(r)) {
            if (isfinite(c)) {
                const double d = double(c) - double(r);
                num2 += d * d;
                den2 += double(r) * double(r);
            } else {
                bad += 1.0;
            }
        } else if (!(c == r) && !(isnan(c) && isnan(r))) {
            special += 1.0;
        }
    }
    double v[4] = {bad, special, num2, den2};
    __shared__ double partial[CMP_THREADS / 32][4];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int f = 0; f < 4; ++f) {
        for (int off = 16; off > 0; off /= 2) v[f] += __shfl_down_sync(0xffffffffu, v[f], off);
        if (lane == 0) partial[warp][f] = v[f];
    }
    __syncthreads();
    if (threadIdx.x < 4) {
        double total = 0.0;
        for (int w = 0; w < CMP_THREADS / 32; ++w) total += partial[w][threadIdx.x];
        atomicAdd(figures + threadIdx.x, total);
    }
}

template <typename T>
int launch_compare(const void* cand, const float* ref, long long n, double* figures, cudaStream_t stream) {
    cudaError_t err = cudaMemsetAsync(figures, 0, 4 * sizeof(double), stream);
    if (err != cudaSuccess) return int(err);
    if (n > 0) {
        const long long want = (n + CMP_THREADS - 1) / CMP_THREADS;
        const int blocks = int(want < CMP_MAX_BLOCKS ? want : CMP_MAX_BLOCKS);
        compare_outputs<T><<<blocks, CMP_THREADS, 0, stream>>>(static_cast<const T*>(cand), ref, n, figures);
    }
    return int(cudaGetLastError());
}

}  // namespace

// The candidate's n elements (cand_dtype 0 = bf16, 1 = fp16, 2 = fp32) against the reference's n fp32 elements,
// both contiguous and in the same order. Writes figures[0..4) = (finite where due: missed, specials that
// differ, sum of squared differences, sum of squared reference values), the last two over the elements where
// both are finite. Returns 0, -1 for an unknown dtype, or a CUDA error code.
extern "C" int kseek_reference_compare(const void* cand, int cand_dtype, const float* ref, long long n,
                                       double* figures, cudaStream_t stream) {
    switch (cand_dtype) {
        case 0: return launch_compare<__nv_bfloat16>(cand, ref, n, figures, stream);
        case 1: return launch_compare<__half>(cand, ref, n, figures, stream);
        case 2: return launch_compare<float>(cand, ref, n, figures, stream);
        default: return -1;
    }
}
