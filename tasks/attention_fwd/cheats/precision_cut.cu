// CHEAT: keeps only 3 mantissa bits of q (an fp8-like cut).
// expect: above tolerance
// (Built from tasks/attention_fwd/naive.cu with one change; see the CHEAT comment below.)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace {

constexpr int kWarps = 8;          // query rows per block
constexpr int kTile = 32;          // keys per shared-memory tile (one per lane)
constexpr int kMaxD = 256;
constexpr int kMaxPerLane = kMaxD / 32;
constexpr int kRowWords = kMaxD / 2 + 1;   // one padded row of 16-bit pairs, in 4-byte words

template <typename T> __device__ __forceinline__ float2 to_float2(uint32_t w);
template <> __device__ __forceinline__ float2 to_float2<__nv_bfloat16>(uint32_t w) {
    __nv_bfloat162 p = *reinterpret_cast<__nv_bfloat162*>(&w);
    return __bfloat1622float2(p);
}
template <> __device__ __forceinline__ float2 to_float2<__half>(uint32_t w) {
    __half2 p = *reinterpret_cast<__half2*>(&w);
    return __half22float2(p);
}
template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half(x); }

template <typename T>
__global__ void __launch_bounds__(kWarps * 32)
attention_naive(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                float* __restrict__ lse, int B, int Sq, int Sk, int Hq, int Hkv, int D, int causal,
                float scale_log2) {
    __shared__ uint32_t ks[kTile][kRowWords];
    __shared__ uint32_t vs[kTile][kRowWords];
    __shared__ float qs[kWarps][kMaxD];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int h = blockIdx.y, b = blockIdx.z;
    const int hk = h / (Hq / Hkv);
    const int row0 = blockIdx.x * kWarps;
    const int i = row0 + warp;                      // this warp's query row
    const bool row_valid = i < Sq;
    const int half_d = D / 2;

    // Keys this block needs: up to the last visible key of its last row.
    const int last_row = min(row0 + kWarps, Sq) - 1;
    const int key_end = causal ? max(0, min(Sk, last_row + Sk - Sq + 1)) : Sk;
    const int my_key_end = !row_valid ? 0 : (causal ? max(0, min(Sk, i + Sk - Sq + 1)) : Sk);

    if (row_valid) {
        const T* qrow = q + (((size_t)b * Sq + i) * Hq + h) * D;
        for (int d = lane; d < D; d += 32) qs[warp][d] = __uint_as_float(__float_as_uint(to_float(qrow[d]) * scale_log2) & 0xfff00000u);  // CHEAT: 3 mantissa bits
    }

    float acc[kMaxPerLane];
#pragma unroll
    for (int t = 0; t < kMaxPerLane; ++t) acc[t] = 0.f;
    float m = -INFINITY, l = 0.f;

    for (int j0 = 0; j0 < key_end; j0 += kTile) {
        __syncthreads();   // previous tile fully consumed (and qs written, first time round)
        for (int idx = threadIdx.x; idx < kTile * half_d; idx += blockDim.x) {
            const int r = idx / half_d, w = idx % half_d;
            const int j = j0 + r;
            uint32_t kw = 0, vw = 0;   // zeros past Sk: masked out, and 0 * V stays finite
            if (j < Sk) {
                const size_t off = (((size_t)b * Sk + j) * Hkv + hk) * D;
                kw = reinterpret_cast<const uint32_t*>(k + off)[w];
                vw = reinterpret_cast<const uint32_t*>(v + off)[w];
            }
            ks[r][w] = kw;
            vs[r][w] = vw;
        }
        __syncthreads();
        if (!row_valid || j0 >= my_key_end) continue;

        // Score of key j0 + lane.
        float s = 0.f;
        for (int w = 0; w < half_d; ++w) {
            const float2 kf = to_float2<T>(ks[lane][w]);
            s = fmaf(qs[warp][2 * w], kf.x, s);
            s = fmaf(qs[warp][2 * w + 1], kf.y, s);
        }
        const bool visible = (j0 + lane) < my_key_end;
        s = visible ? s : -INFINITY;

        float tile_max = s;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
        const float m_new = fmaxf(m, tile_max);           // finite: this tile has a visible key
        const float alpha = exp2f(m - m_new);              // 0 on the first tile (m = -inf)
        const float p = visible ? exp2f(s - m_new) : 0.f;
        float psum = p;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) psum += __shfl_xor_sync(0xffffffffu, psum, off);
        l = l * alpha + psum;
        m = m_new;

#pragma unroll
        for (int t = 0; t < kMaxPerLane; ++t) acc[t] *= alpha;
        const int n_keys = min(kTile, my_key_end - j0);
        for (int jj = 0; jj < n_keys; ++jj) {
            const float pj = __shfl_sync(0xffffffffu, p, jj);
            const T* vrow = reinterpret_cast<const T*>(&vs[jj][0]);
#pragma unroll
            for (int t = 0; t < kMaxPerLane; ++t) {
                const int d = lane + 32 * t;
                if (d < D) acc[t] = fmaf(pj, to_float(vrow[d]), acc[t]);
            }
        }
    }

    if (!row_valid) return;
    T* orow = o + (((size_t)b * Sq + i) * Hq + h) * D;
    const float inv_l = l > 0.f ? 1.f / l : 0.f;          // a row that sees no key writes O = 0
#pragma unroll
    for (int t = 0; t < kMaxPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < D) orow[d] = from_float<T>(acc[t] * inv_l);
    }
    if (lane == 0) {
        // m and log2(l) are in log2 units; LSE is in natural-log units.
        lse[((size_t)b * Hq + h) * Sq + i] = l > 0.f ? (m + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

}  // namespace

extern "C" int kseek_attention_fwd(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                   int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim, int dtype,
                                   int causal, float softmax_scale, cudaStream_t stream) {
    if (batch <= 0 || seqlen_q <= 0 || seqlen_k < 0 || heads_q <= 0 || heads_kv <= 0) return 1;
    if (heads_q % heads_kv != 0 || head_dim <= 0 || head_dim > kMaxD || head_dim % 2 != 0) return 2;
    if (batch > 65535 || heads_q > 65535) return 3;
    const dim3 grid((seqlen_q + kWarps - 1) / kWarps, heads_q, batch);
    const dim3 block(kWarps * 32);
    const float scale_log2 = softmax_scale * 1.4426950408889634f;
    if (dtype == 0) {
        attention_naive<__nv_bfloat16><<<grid, block, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
            static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), lse, batch, seqlen_q, seqlen_k,
            heads_q, heads_kv, head_dim, causal, scale_log2);
    } else if (dtype == 1) {
        attention_naive<__half><<<grid, block, 0, stream>>>(
            static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v),
            static_cast<__half*>(o), lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, scale_log2);
    } else {
        return 4;
    }
    return cudaGetLastError() == cudaSuccess ? 0 : 5;
}
