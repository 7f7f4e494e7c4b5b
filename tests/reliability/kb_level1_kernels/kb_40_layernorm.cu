// A plain kernel for KernelBench level 1 #40: LayerNorm over the last three dimensions (features x dim1 x dim2,
// eps 1e-5, elementwise weight and bias) of x[batch, ...]. Three launches on the stream: clear the sums, add
// each row's sum and sum of squares in float64 (a grid of blocks per row, atomics into a __device__ table), then
// normalise every element. The variance is E[x^2] - E[x]^2 in float64, whose cancellation float64 absorbs.
#include <cstdint>
#include <cuda_runtime.h>

constexpr int MAX_ROWS = 4096;  // the table's size: a larger batch is not supported (returns 1)
constexpr int THREADS = 256, CHUNKS = 64;  // CHUNKS blocks share one row's sums
__device__ double g_sums[MAX_ROWS][2];

__global__ void clear_sums(int64_t rows) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < rows) g_sums[i][0] = g_sums[i][1] = 0.0;
}

__global__ void row_sums(const float* __restrict__ x, int64_t n) {
    const int64_t row = blockIdx.y;
    const float* src = x + row * n;
    double s = 0.0, q = 0.0;
    for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n; i += (int64_t)CHUNKS * THREADS) {
        const double v = src[i];
        s += v;
        q += v * v;
    }
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, o);
        q += __shfl_down_sync(0xffffffffu, q, o);
    }
    __shared__ double part[THREADS / 32][2];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        part[warp][0] = s;
        part[warp][1] = q;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) {
            s += part[w][0];
            q += part[w][1];
        }
        atomicAdd(&g_sums[row][0], s);
        atomicAdd(&g_sums[row][1], q);
    }
}

__global__ void normalise(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                          float* __restrict__ out, int64_t rows, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= rows * n) return;
    const int64_t row = i / n, j = i % n;
    const double mean = g_sums[row][0] / (double)n;
    const double var = fmax(g_sums[row][1] / (double)n - mean * mean, 0.0);
    const float rstd = (float)(1.0 / sqrt(var + 1e-5));
    out[i] = (x[i] - (float)mean) * rstd * w[j] + b[j];
}

extern "C" int kseek_kb_40_layernorm(const float* x, const float* ln_weight, const float* ln_bias, float* out,
                                     int64_t batch_size, int64_t features, int64_t dim1, int64_t dim2) {
    const int64_t n = features * dim1 * dim2;
    if (batch_size <= 0 || batch_size > MAX_ROWS || n <= 0) return 1;
    clear_sums<<<(unsigned)((batch_size + 255) / 256), 256>>>(batch_size);
    row_sums<<<dim3(CHUNKS, (unsigned)batch_size), THREADS>>>(x, n);
    normalise<<<(unsigned)((batch_size * n + 255) / 256), 256>>>(x, ln_weight, ln_bias, out, batch_size, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
