// A plain kernel for KernelBench level 1 #95: cross_entropy(predictions[batch, 4096], targets[batch]) with the
// mean over the batch, a float32 scalar. One block per row: its max, then log-sum-exp, then the row's loss
// lse - x[target] added in float64 to a __device__ sum; a last launch writes sum / batch.
#include <cmath>
#include <cstdint>
#include <cuda_runtime.h>

constexpr int CLASSES = 4096;  // the problem's num_classes (a fixed dimension of the task's ABI)
constexpr int THREADS = 256;
__device__ double g_total;

__global__ void clear_total() { g_total = 0.0; }

__global__ void row_losses(const float* __restrict__ x, const int64_t* __restrict__ targets) {
    const float* row = x + (int64_t)blockIdx.x * CLASSES;
    __shared__ float part[THREADS / 32];
    __shared__ float row_max;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < CLASSES; i += THREADS) m = fmaxf(m, row[i]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
    if (lane == 0) part[warp] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) m = fmaxf(m, part[w]);
        row_max = m;
    }
    __syncthreads();
    m = row_max;
    double s = 0.0;
    for (int i = threadIdx.x; i < CLASSES; i += THREADS) s += (double)expf(row[i] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    __shared__ double sums[THREADS / 32];
    if (lane == 0) sums[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) s += sums[w];
        const double lse = (double)m + log(s);
        atomicAdd(&g_total, lse - (double)row[targets[blockIdx.x]]);
    }
}

__global__ void write_mean(float* out, int64_t batch) { out[0] = (float)(g_total / (double)batch); }

extern "C" int kseek_kb_95_crossentropyloss(const float* predictions, const int64_t* targets, float* out,
                                            int64_t batch_size) {
    if (batch_size <= 0 || batch_size > 0x7fffffff) return 1;
    clear_total<<<1, 1>>>();
    row_losses<<<(unsigned)batch_size, THREADS>>>(predictions, targets);
    write_mean<<<1, 1>>>(out, batch_size);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
