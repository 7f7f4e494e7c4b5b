// A correct starting kernel for examples/kernelbench/sum_dim.py once imported: out[b, 0, c] = sum over r of
// x[b, r, c], one thread per output element, summed in float32 in row order.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void sum_rows(const float* __restrict__ x, float* __restrict__ out, int64_t batch, int64_t rows,
                         int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= batch * cols) return;
    int64_t b = i / cols, c = i % cols;
    const float* p = x + b * rows * cols + c;
    float s = 0.0f;
    for (int64_t r = 0; r < rows; ++r) s += p[r * cols];
    out[i] = s;
}

extern "C" int kseek_sum_dim(const float* x, float* out, int64_t batch_size, int64_t rows, int64_t cols) {
    int64_t n = batch_size * cols;
    if (n <= 0 || rows <= 0) return 1;
    sum_rows<<<(unsigned)((n + 255) / 256), 256>>>(x, out, batch_size, rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
