// A plain kernel for KernelBench level 1 #98: kl_div(log(predictions), targets, reduction="batchmean") over rows
// of 16384, a float32 scalar: sum of t * (log t - log p) over every element, divided by the batch. One block per
// row adds its terms in float64 to a __device__ sum; a last launch writes sum / batch. A target of 0 adds 0
// (torch's xlogy), which the problem's softmax targets never are.
#include <cstdint>
#include <cuda_runtime.h>

constexpr int COLS = 16384;  // the problem's input_shape (a fixed dimension of the task's ABI)
constexpr int THREADS = 256;
__device__ double g_total;

__global__ void clear_total() { g_total = 0.0; }

__global__ void row_terms(const float* __restrict__ p, const float* __restrict__ t) {
    const int64_t base = (int64_t)blockIdx.x * COLS;
    double s = 0.0;
    for (int i = threadIdx.x; i < COLS; i += THREADS) {
        const float tv = t[base + i];
        if (tv > 0.0f) s += (double)(tv * (logf(tv) - logf(p[base + i])));
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    __shared__ double sums[THREADS / 32];
    if ((threadIdx.x & 31) == 0) sums[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) s += sums[w];
        atomicAdd(&g_total, s);
    }
}

__global__ void write_mean(float* out, int64_t batch) { out[0] = (float)(g_total / (double)batch); }

extern "C" int kseek_kb_98_kldivloss(const float* predictions, const float* targets, float* out, int64_t batch_size) {
    if (batch_size <= 0 || batch_size > 0x7fffffff) return 1;
    clear_total<<<1, 1>>>();
    row_terms<<<(unsigned)batch_size, THREADS>>>(predictions, targets);
    write_mean<<<1, 1>>>(out, batch_size);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
