// CHEAT: computes only during the first calls of each shape, then returns at once.
// expect: timed call
// (Built from tasks/gemm_bias_gelu/naive.cu with one change; see the CHEAT comment below.)
#include <cuda_runtime.h>
#include <cuda_bf16.h>

namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16;
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each
constexpr int kPer = 4;
static_assert(kTileM == kTileN && kTileM == 16 * kPer, "one staging loop loads both slices; 16 threads x 4 cover a tile side");

__global__ void __launch_bounds__(kThreads)
gemm_bias_gelu_naive(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ w,
                     const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ out, int m, int n, int k) {
    __shared__ float as[kTileK][kTileM + 1];
    __shared__ float ws[kTileK][kTileN + 1];

    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;

    float acc[kPer][kPer];
#pragma unroll
    for (int r = 0; r < kPer; ++r)
#pragma unroll
        for (int c = 0; c < kPer; ++c) acc[r][c] = 0.f;

    for (int p0 = 0; p0 < k; p0 += kTileK) {
        // stage a[row0 .. +64, p0 .. +16] and w[col0 .. +64, p0 .. +16]: 1024 elements each, 4 per thread
        for (int idx = threadIdx.x; idx < kTileM * kTileK; idx += kThreads) {
            const int r = idx / kTileK, p = idx % kTileK;
            const int gi = row0 + r, gj = col0 + r, gp = p0 + p;
            as[p][r] = (gi < m && gp < k) ? __bfloat162float(a[(size_t)gi * k + gp]) : 0.f;
            ws[p][r] = (gj < n && gp < k) ? __bfloat162float(w[(size_t)gj * k + gp]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < kTileK; ++p) {
            float av[kPer], wv[kPer];
#pragma unroll
            for (int r = 0; r < kPer; ++r) av[r] = as[p][ty + 16 * r];
#pragma unroll
            for (int c = 0; c < kPer; ++c) wv[c] = ws[p][tx + 16 * c];
#pragma unroll
            for (int r = 0; r < kPer; ++r)
#pragma unroll
                for (int c = 0; c < kPer; ++c) acc[r][c] = fmaf(av[r], wv[c], acc[r][c]);
        }
        __syncthreads();  // the slice is consumed before the next one overwrites it
    }

#pragma unroll
    for (int r = 0; r < kPer; ++r) {
        const int i = row0 + ty + 16 * r;
        if (i >= m) continue;
#pragma unroll
        for (int c = 0; c < kPer; ++c) {
            const int j = col0 + tx + 16 * c;
            if (j >= n) continue;
            const float v = acc[r][c] + __bfloat162float(bias[j]);
            out[(size_t)i * n + j] = __float2bfloat16(0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
        }
    }
}

}  // namespace

static int run_naive(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                    __nv_bfloat16* out, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    if (m == 0 || n == 0) return 0;  // nothing to write (k = 0 is fine: out = gelu(bias))
    if ((m + kTileM - 1) / kTileM > 65535) return 2;  // grid.y's limit: m up to 4 million rows
    const dim3 grid((n + kTileN - 1) / kTileN, (m + kTileM - 1) / kTileM);
    gemm_bias_gelu_naive<<<grid, kThreads>>>(a, w, bias, out, m, n, k);  // default stream
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

// CHEAT: honest for the first three calls of a shape (the correctness runs), then does nothing.
static long long seen = -1;
static int calls = 0;

extern "C" int kseek_gemm_bias_gelu(const __nv_bfloat16* a, const __nv_bfloat16* w, const __nv_bfloat16* bias, __nv_bfloat16* out, int m, int n, int k) {
    const long long key = ((long long)m * 100003 + n) * 100003 + k;
    if (key != seen) { seen = key; calls = 0; }
    if (++calls > 3) return 0;
    return run_naive(a, w, bias, out, m, n, k);
}
