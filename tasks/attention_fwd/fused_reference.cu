// The judge's fp32 attention reference (gpu_harness/tasks/attention_fwd.py): one kernel, one pass over the keys.
//
// For each query row at position p (a row of Q, or the rows listed in `rows`):
//   s_j = scale * (q . k_j)                 over the keys j that p sees (causal: j <= p + Sk - Sq)
//   O   = sum_j exp(s_j - m) v_j / sum_j exp(s_j - m),   m = max_j s_j
//   LSE = m + log sum_j exp(s_j - m)
// A row that sees no key gets O = 0 and LSE = -inf.
//
// Arithmetic: fp32, with the products on tensor cores (mma.sync m16n8k16) where they are exact.
// - q . k: the inputs are bf16 or fp16, whose products are exact in fp32; the tensor core sums them in fp32.
// - P V: P = exp(s - m) is fp32; it is split into three 16-bit parts (hi + mid + lo, each the rounding of
//   what the parts before left over), whose sum is P exactly, and each part times V is again an exact
//   product. So every product is exact, and only the sums round.
// - The tensor core's own fp32 accumulation truncates rather than rounds. Over a few products that is within
//   fp32's precision, but over thousands of keys the bias adds up (a first version that accumulated O on the
//   tensor core was 5e-5 away from the torch fp32 reference at 16k keys). So each group of 16 keys is summed
//   into a fresh accumulator, and the groups are added in fp32 with round to nearest, as an FMA loop would.
// Over the whole scenario grid it is within 2.5e-6 (O) and 2.2e-7 (LSE) of the torch fp32 reference (relative
// error, one seed; the all-FMA kernel this replaced: 1.9e-6 and 2.1e-7), and 2.7x faster than that kernel
// (docs/benchmarks.md).
//
// One block: 64 query rows of one (batch, query head); 4 warps, each owning 16 rows (one m16 tile). Per tile
// of BC keys: K row-major and V transposed in shared memory (rows padded by 8 elements, so that the fragment
// loads, 32 bits at row g and column 2t, fall in 32 different banks), S = Q K^T on tensor cores, the online
// softmax on the S fragments (running max and sum per row, the accumulator rescaled when the max grows; a
// row's four threads combine by shuffles), P turned from S fragments into A fragments in registers, O += P V.
// Key tiles that no row of a causal block can see are not visited.
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

constexpr int WARPS = 4;
constexpr int THREADS = WARPS * 32;
constexpr int BR = 16 * WARPS;         // query rows per block: 16 per warp (one m16 tile)

template <int D>
struct Tile {
    // keys per tile: fewer for large D, whose O accumulator takes D / 2 registers a thread
    static constexpr int BC = D <= 128 ? 64 : D <= 192 ? 32 : 16;
    static constexpr int QS = D + 8;                // Q and K row stride in elements (padded: see the top)
    static constexpr int VS = BC + 8;               // V^T row stride in elements
    static constexpr size_t smem = (size_t(BR) * QS + size_t(BC) * QS + size_t(D) * VS) * 2;
};

__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float to_float(__half x) { return __half2float(x); }
template <typename T> __device__ inline T from_float(float x);
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }

template <typename T>
__device__ inline uint32_t pack(T lo, T hi) {
    return uint32_t(*reinterpret_cast<const uint16_t*>(&lo)) |
           (uint32_t(*reinterpret_cast<const uint16_t*>(&hi)) << 16);
}

// x0, x1 (fp32) as the exact sum of three 16-bit pairs: hi + mid + lo (each step removes the rounded part)
template <typename T>
__device__ inline void split3(float x0, float x1, uint32_t& hi, uint32_t& mid, uint32_t& lo) {
    const T h0 = from_float<T>(x0), h1 = from_float<T>(x1);
    x0 -= to_float(h0);
    x1 -= to_float(h1);
    const T m0 = from_float<T>(x0), m1 = from_float<T>(x1);
    x0 -= to_float(m0);
    x1 -= to_float(m1);
    hi = pack(h0, h1);
    mid = pack(m0, m1);
    lo = pack(from_float<T>(x0), from_float<T>(x1));
}

template <typename T>
__device__ inline void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <>
__device__ inline void mma<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ inline void mma<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ inline uint32_t lds32(const void* p) { return *reinterpret_cast<const uint32_t*>(p); }

template <typename T, int D>
__global__ void __launch_bounds__(THREADS)
attention_reference(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                    float* __restrict__ o, float* __restrict__ lse, const int* __restrict__ rows, int n_rows,
                    int Sq, int Sk, int Hq, int Hkv, int causal, float scale) {
    using C = Tile<D>;
    constexpr int BC = C::BC, QS = C::QS, VS = C::VS;
    constexpr int NT = BC / 8;          // n-tiles of S per warp (8 keys each)
    constexpr int DT = D / 8;           // n-tiles of O per warp (8 columns each)
    static_assert(D % 16 == 0, "head_dim must be a multiple of 16");
    extern __shared__ uint4 smem_u4[];
    T* qs = reinterpret_cast<T*>(smem_u4);   // [BR][QS]
    T* ks = qs + BR * QS;                    // [BC][QS]
    T* vt = ks + BC * QS;                    // [D][VS]: V transposed, vt[d][key]
    __shared__ int row_pos[BR];
    __shared__ int max_pos;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;   // the mma fragments' row group and thread-in-group
    const int bh = blockIdx.y, b = bh / Hq, h = bh % Hq, hk = h / (Hq / Hkv);
    const int row0 = (gridDim.x - 1 - blockIdx.x) * BR;   // heaviest causal blocks first

    if (tid == 0) max_pos = -1;
    __syncthreads();
    if (tid < BR) {
        const int i = row0 + tid;
        const int pos = i < n_rows ? (rows ? rows[i] : i) : -1;
        row_pos[tid] = pos;
        atomicMax(&max_pos, pos);
    }
    __syncthreads();
    for (int idx = tid; idx < BR * (D / 8); idx += THREADS) {
        const int r = idx / (D / 8), c = idx % (D / 8);
        const int pos = row_pos[r];
        uint4 x = make_uint4(0, 0, 0, 0);
        if (pos >= 0) x = *reinterpret_cast<const uint4*>(q + ((size_t(b) * Sq + pos) * Hq + h) * D + c * 8);
        *reinterpret_cast<uint4*>(qs + r * QS + c * 8) = x;
    }

    const int shift = Sk - Sq;
    const int key_end = causal ? min(Sk, max_pos + shift + 1) : Sk;
    const int r_lo = warp * 16 + g, r_hi = r_lo + 8;     // this thread's two rows in the block
    // the last key each of the two rows sees (-1: none, or a row past the end)
    const int pos_lo = row_pos[r_lo], pos_hi = row_pos[r_hi];
    const int last_lo = pos_lo < 0 ? -1 : causal ? min(Sk - 1, pos_lo + shift) : Sk - 1;
    const int last_hi = pos_hi < 0 ? -1 : causal ? min(Sk - 1, pos_hi + shift) : Sk - 1;
    float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.f, l_hi = 0.f;
    float acc[DT][4];
#pragma unroll
    for (int i = 0; i < DT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

    for (int j0 = 0; j0 < key_end; j0 += BC) {
        __syncthreads();
        for (int idx = tid; idx < BC * (D / 8); idx += THREADS) {
            const int r = idx / (D / 8), c = idx % (D / 8);
            uint4 x = make_uint4(0, 0, 0, 0);
            if (j0 + r < Sk)
                x = *reinterpret_cast<const uint4*>(k + ((size_t(b) * Sk + j0 + r) * Hkv + hk) * D + c * 8);
            *reinterpret_cast<uint4*>(ks + r * QS + c * 8) = x;
        }
        for (int idx = tid; idx < BC * (D / 8); idx += THREADS) {
            const int j = idx % BC, c = idx / BC;          // lanes -> keys: the 16-bit stores below do not conflict
            uint4 x = make_uint4(0, 0, 0, 0);
            if (j0 + j < Sk)
                x = *reinterpret_cast<const uint4*>(v + ((size_t(b) * Sk + j0 + j) * Hkv + hk) * D + c * 8);
            const T* xe = reinterpret_cast<const T*>(&x);
#pragma unroll
            for (int e = 0; e < 8; ++e) vt[(c * 8 + e) * VS + j] = xe[e];
        }
        __syncthreads();

        float s[NT][4];
#pragma unroll
        for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll 4
        for (int kk = 0; kk < D; kk += 16) {
            uint32_t a[4];
            const T* q_lo = qs + r_lo * QS + kk + 2 * t;
            const T* q_hi = qs + r_hi * QS + kk + 2 * t;
            a[0] = lds32(q_lo);
            a[1] = lds32(q_hi);
            a[2] = lds32(q_lo + 8);
            a[3] = lds32(q_hi + 8);
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const T* kr = ks + (n * 8 + g) * QS + kk + 2 * t;
                mma<T>(s[n], a, lds32(kr), lds32(kr + 8));
            }
        }

        float tmax_lo = -INFINITY, tmax_hi = -INFINITY;
#pragma unroll
        for (int n = 0; n < NT; ++n) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int j = j0 + n * 8 + 2 * t + e;
                s[n][e] = j <= last_lo ? s[n][e] * scale : -INFINITY;
                s[n][2 + e] = j <= last_hi ? s[n][2 + e] * scale : -INFINITY;
                tmax_lo = fmaxf(tmax_lo, s[n][e]);
                tmax_hi = fmaxf(tmax_hi, s[n][2 + e]);
            }
        }
#pragma unroll
        for (int off = 1; off <= 2; off *= 2) {
            tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, off));
            tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, off));
        }
        const float mn_lo = fmaxf(m_lo, tmax_lo), mn_hi = fmaxf(m_hi, tmax_hi);
        const float base_lo = mn_lo == -INFINITY ? 0.f : mn_lo, base_hi = mn_hi == -INFINITY ? 0.f : mn_hi;
        const float alpha_lo = expf(m_lo - base_lo), alpha_hi = expf(m_hi - base_hi);
        m_lo = mn_lo;
        m_hi = mn_hi;
        float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
        for (int n = 0; n < NT; ++n) {
            s[n][0] = expf(s[n][0] - base_lo);
            s[n][1] = expf(s[n][1] - base_lo);
            s[n][2] = expf(s[n][2] - base_hi);
            s[n][3] = expf(s[n][3] - base_hi);
            sum_lo += s[n][0] + s[n][1];
            sum_hi += s[n][2] + s[n][3];
        }
        l_lo = l_lo * alpha_lo + sum_lo;       // this thread's share; the row's four threads add up at the end
        l_hi = l_hi * alpha_hi + sum_hi;
#pragma unroll
        for (int i = 0; i < DT; ++i) {
            acc[i][0] *= alpha_lo;
            acc[i][1] *= alpha_lo;
            acc[i][2] *= alpha_hi;
            acc[i][3] *= alpha_hi;
        }

#pragma unroll
        for (int kc = 0; kc < BC / 16; ++kc) {
            uint32_t ph[4], pm[4], pl[4];
            split3<T>(s[2 * kc][0], s[2 * kc][1], ph[0], pm[0], pl[0]);
            split3<T>(s[2 * kc][2], s[2 * kc][3], ph[1], pm[1], pl[1]);
            split3<T>(s[2 * kc + 1][0], s[2 * kc + 1][1], ph[2], pm[2], pl[2]);
            split3<T>(s[2 * kc + 1][2], s[2 * kc + 1][3], ph[3], pm[3], pl[3]);
#pragma unroll
            for (int i = 0; i < DT; ++i) {
                const T* vr = vt + (i * 8 + g) * VS + kc * 16 + 2 * t;
                const uint32_t b0 = lds32(vr), b1 = lds32(vr + 8);
                // a fresh accumulator for these 16 keys, added to acc in fp32 (round to nearest): the tensor
                // core's own accumulation truncates, and over thousands of keys that bias adds up
                float c[4] = {0.f, 0.f, 0.f, 0.f};
                mma<T>(c, pl, b0, b1);
                mma<T>(c, pm, b0, b1);
                mma<T>(c, ph, b0, b1);
                acc[i][0] += c[0];
                acc[i][1] += c[1];
                acc[i][2] += c[2];
                acc[i][3] += c[3];
            }
        }
    }

#pragma unroll
    for (int off = 1; off <= 2; off *= 2) {
        l_lo += __shfl_xor_sync(0xffffffffu, l_lo, off);
        l_hi += __shfl_xor_sync(0xffffffffu, l_hi, off);
    }
    // this thread's two rows: O divided by the row's sum (zeros for a row that saw no key), and the LSE
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int i = row0 + (half ? r_hi : r_lo);
        const float l = half ? l_hi : l_lo, m = half ? m_hi : m_lo;
        if (i >= n_rows) continue;
        float* orow = o + ((size_t(b) * n_rows + i) * Hq + h) * D;
#pragma unroll
        for (int c = 0; c < DT; ++c)
            *reinterpret_cast<float2*>(orow + c * 8 + 2 * t) =
                l > 0.f ? make_float2(acc[c][2 * half] / l, acc[c][2 * half + 1] / l) : make_float2(0.f, 0.f);
        if (t == 0) lse[(size_t(b) * Hq + h) * n_rows + i] = l > 0.f ? m + logf(l) : -INFINITY;
    }
}

template <typename T, int D>
int launch(const void* q, const void* k, const void* v, float* o, float* lse, const int* rows, int n_rows,
           int batch, int Sq, int Sk, int Hq, int Hkv, int causal, float scale, cudaStream_t stream) {
    constexpr size_t smem = Tile<D>::smem;
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
