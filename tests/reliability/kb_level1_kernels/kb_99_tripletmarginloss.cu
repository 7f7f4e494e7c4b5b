// A plain kernel for KernelBench level 1 #99: TripletMarginLoss(margin=1.0, p=2, eps=1e-6, mean) over rows of
// 8192, a float32 scalar: mean over rows of max(|a - p + eps| - |a - n + eps| + margin, 0) (torch's
// pairwise_distance adds eps to the difference). One block per row, its two sums of squares in float64; the
// row's loss added to a __device__ sum; a last launch writes sum / batch.
#include <cstdint>
#include <cuda_runtime.h>

constexpr int COLS = 8192;  // the problem's input_shape (a fixed dimension of the task's ABI)
constexpr int THREADS = 256;
constexpr float MARGIN = 1.0f, EPS = 1e-6f;
__device__ double g_total;

__global__ void clear_total() { g_total = 0.0; }

__global__ void row_losses(const float* __restrict__ a, const float* __restrict__ p, const float* __restrict__ n) {
    const int64_t base = (int64_t)blockIdx.x * COLS;
    double sp = 0.0, sn = 0.0;
    for (int i = threadIdx.x; i < COLS; i += THREADS) {
        const float av = a[base + i];
        const float dp = av - p[base + i] + EPS, dn = av - n[base + i] + EPS;
        sp += (double)dp * dp;
        sn += (double)dn * dn;
    }
    for (int o = 16; o > 0; o >>= 1) {
        sp += __shfl_down_sync(0xffffffffu, sp, o);
        sn += __shfl_down_sync(0xffffffffu, sn, o);
    }
    __shared__ double sums[THREADS / 32][2];
    if ((threadIdx.x & 31) == 0) {
        sums[threadIdx.x >> 5][0] = sp;
        sums[threadIdx.x >> 5][1] = sn;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < THREADS / 32; ++w) {
            sp += sums[w][0];
            sn += sums[w][1];
        }
        atomicAdd(&g_total, fmax(sqrt(sp) - sqrt(sn) + (double)MARGIN, 0.0));
    }
}

__global__ void write_mean(float* out, int64_t batch) { out[0] = (float)(g_total / (double)batch); }

extern "C" int kseek_kb_99_tripletmarginloss(const float* anchor, const float* positive, const float* negative,
                                             float* out, int64_t batch_size) {
    if (batch_size <= 0 || batch_size > 0x7fffffff) return 1;
    clear_total<<<1, 1>>>();
    row_losses<<<(unsigned)batch_size, THREADS>>>(anchor, positive, negative);
    write_mean<<<1, 1>>>(out, batch_size);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
