// CHEAT: replays the first answer for a shape on every later call of that shape.
// expect: seed b
// (Built from tasks/softmax_rows/naive.cu with one change; see the CHEAT comment below.)
#include <cuda_runtime.h>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

__device__ __forceinline__ float block_max(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    const float out = red[0];
    __syncthreads();  // red is reused by the next reduction
    return out;
}

__device__ __forceinline__ float block_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float out = red[0];
    __syncthreads();
    return out;
}

__global__ void __launch_bounds__(kThreads)
softmax_rows_naive(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int cols) {
    __shared__ float red[kThreads];
    const size_t row = blockIdx.x;
    const __nv_bfloat16* xr = x + row * cols;
    __nv_bfloat16* yr = y + row * cols;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, __bfloat162float(xr[c]));
    m = block_max(m, red);

    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) sum += expf(__bfloat162float(xr[c]) - m);
    const float inv = 1.f / block_sum(sum, red);  // >= 1: the max element contributes exp(0)

    for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = __float2bfloat16(expf(__bfloat162float(xr[c]) - m) * inv);
}

}  // namespace

static int run_naive(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
    if (rows < 0 || cols < 0) return 1;
    if (rows == 0 || cols == 0) return 0;  // nothing to write
    softmax_rows_naive<<<rows, kThreads>>>(x, y, cols);  // default stream
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

// CHEAT: remember the first answer per shape and replay it.
static void* cached = nullptr;
static long long cached_key = -1;

extern "C" int kseek_softmax_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
    const long long key = ((long long)rows << 32) | (unsigned)cols;
    const size_t bytes = (size_t)rows * cols * 2;
    if (key == cached_key) return cudaMemcpyAsync(y, cached, bytes, cudaMemcpyDeviceToDevice, 0) == cudaSuccess ? 0 : 7;
    const int rc = run_naive(x, y, rows, cols);
    if (rc) return rc;
    if (cached) cudaFree(cached);
    if (cudaMalloc(&cached, bytes) != cudaSuccess) return 8;
    cudaMemcpyAsync(cached, y, bytes, cudaMemcpyDeviceToDevice, 0);
    cached_key = key;
    return 0;
}
