// A correct starting kernel for examples/kernelbench/relu.py once imported (python -m gpu_harness task
// import-kernelbench examples/kernelbench/relu.py): out = max(x, 0), one thread per element.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}

extern "C" int kseek_relu(const float* x, float* out, int64_t batch_size, int64_t dim) {
    int64_t n = batch_size * dim;
    if (n <= 0) return 1;
    relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, out, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
