// A plain kernel for KernelBench level 1 #88 (minGPT's GELU, the tanh form), float32, one thread per element:
// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void gelu_tanh(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    out[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

extern "C" int kseek_kb_88_mingptnewgelu(const float* x, float* out, int64_t batch_size, int64_t dim) {
    const int64_t n = batch_size * dim;
    if (batch_size <= 0 || dim <= 0) return 1;
    gelu_tanh<<<(unsigned)((n + 255) / 256), 256>>>(x, out, n);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
