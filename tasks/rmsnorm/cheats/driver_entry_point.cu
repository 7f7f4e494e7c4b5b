// CHEAT: looks up driver functions by name at run time.
// expect: refused symbols: cudaGetDriverEntryPoint
// (Built from tasks/rmsnorm/naive.cu with one change; see the CHEAT comment below.)
#include <cuda_runtime.h>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;  // a power of two: the tree reduction halves it

__device__ __forceinline__ float block_sum(float v, float* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    return red[0];
}

__global__ void __launch_bounds__(kThreads)
rmsnorm_naive(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
              __nv_bfloat16* __restrict__ y, int hidden, float eps) {
    __shared__ float red[kThreads];
    const size_t row = blockIdx.x;
    const __nv_bfloat16* xr = x + row * hidden;
    __nv_bfloat16* yr = y + row * hidden;

    float sq = 0.f;
    for (int j = threadIdx.x; j < hidden; j += kThreads) {
        const float v = __bfloat162float(xr[j]);
        sq = fmaf(v, v, sq);
    }
    const float inv_rms = rsqrtf(block_sum(sq, red) / hidden + eps);

    for (int j = threadIdx.x; j < hidden; j += kThreads)
        yr[j] = __float2bfloat16(__bfloat162float(xr[j]) * inv_rms * __bfloat162float(weight[j]));
}

}  // namespace

extern "C" int kseek_rmsnorm(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, int rows,
                             int hidden, float eps) {
    // CHEAT: fetches driver functions by name (a dlsym in disguise), e.g. to make a stream
    void* fptr = nullptr; cudaDriverEntryPointQueryResult st;
    cudaGetDriverEntryPoint("cuStreamCreate", &fptr, cudaEnableDefault, &st);
    if (rows < 0 || hidden < 0) return 1;
    if (rows == 0 || hidden == 0) return 0;  // nothing to write
    rmsnorm_naive<<<rows, kThreads>>>(x, weight, y, hidden, eps);  // default stream
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
