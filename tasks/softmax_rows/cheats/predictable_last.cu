// CHEAT: makes the last timed call predictable, then skips the work on every timed call before it.
// expect: (the median's) is wrong
// (Built from tasks/softmax_rows/naive.cu with one change; see the CHEAT comment below. A slow warm-up makes the
// harness take its fewest repeats, 3, so the 7th call of a shape is the last timed one; the 5th and 6th launch
// nothing, and their times make the median, on shapes of 4M elements or more (the quick set's r2048_c4097 is
// its first). tasks/matmul_cpu/cheats/predictable_last.cpp is the CPU twin.)
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

// CHEAT: the per-shape call number: 1-3 the correctness runs, 4 the timing's warm-up (made slow), 5 and 6 timed
// calls that launch nothing, 7 the last timed call at the fewest repeats (honest).
// a wait on the SM's cycle counter, which the compiler cannot drop (a loop adding into a volatile local was
// compiled away: the warm-up was then fast, the harness took 15 repeats and the median was an honest call)
__global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static long long shapes[8];
static int calls[8], known = 0;

static int call_number(long long key) {
    for (int i = 0; i < known; ++i)
        if (shapes[i] == key) return ++calls[i];
    if (known == 8) return 0;
    shapes[known] = key;
    return calls[known++] = 1;
}

extern "C" int kseek_softmax_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
    // only where an empty call is surely faster than the work: on a launch-bound shape (r7_c33) it is not,
    // the honest last call can make the median, and a drawn check (not the median's) catches a skipped one
    if ((long long)rows * cols < (4LL << 20)) return run_naive(x, y, rows, cols);
    const int call = call_number(((long long)rows << 32) | (unsigned)cols);
    if (call == 5 || call == 6) return 0;
    if (call == 4) spin<<<1, 1>>>(200000000LL);  // ~0.1 s at 2 GHz: 60 ms of budget asks for 3 repeats
    return run_naive(x, y, rows, cols);
}
