// A correct starting kernel for examples/kernelbench/linear_gelu.py once imported: out = gelu((x W^T + b) *
// 0.5), exact (erf) GELU, float32 throughout; 16x16 output tiles through shared memory. The scale, 0.5, is
// the problem's constructor argument: an imported task bakes it in (it is not in the ABI).
#include <cstdint>
#include <cuda_runtime.h>

constexpr int TILE = 16;

__global__ void linear_gelu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                   const float* __restrict__ bias, float* __restrict__ out, int64_t m,
                                   int64_t k, int64_t n) {
    __shared__ float xs[TILE][TILE], ws[TILE][TILE + 1];
    int64_t row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += TILE) {
        int64_t kx = k0 + threadIdx.x, kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (row < m && kx < k) ? x[row * k + kx] : 0.0f;
        int64_t wrow = blockIdx.x * TILE + threadIdx.x;  // W is [n, k]: this thread loads W[wrow, kw]
        ws[threadIdx.y][threadIdx.x] = (wrow < n && kw < k) ? w[wrow * k + kw] : 0.0f;
        __syncthreads();
        for (int t = 0; t < TILE; ++t) acc = fmaf(xs[threadIdx.y][t], ws[t][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < m && col < n) {
        float v = (acc + bias[col]) * 0.5f;
        out[row * n + col] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

extern "C" int kseek_linear_gelu(const float* x, const float* linear_weight, const float* linear_bias, float* out,
                                 int64_t batch_size, int64_t in_features, int64_t out_features) {
    if (batch_size <= 0 || in_features <= 0 || out_features <= 0) return 1;
    dim3 block(TILE, TILE), grid((unsigned)((out_features + TILE - 1) / TILE), (unsigned)((batch_size + TILE - 1) / TILE));
    linear_gelu_kernel<<<grid, block>>>(x, linear_weight, linear_bias, out, batch_size, in_features, out_features);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
