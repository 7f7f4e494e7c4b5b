// A plain kernel for KernelBench level 1 #42: MaxPool2d(kernel_size=4, stride=1, padding=1, dilation=1) over
// x[batch, channels, height, width], one thread per output element; padding never wins (as torch's -inf).
#include <cmath>
#include <cstdint>
#include <cuda_runtime.h>

constexpr int KSIZE = 4, STRIDE = 1, PAD = 1, DILATION = 1;  // the problem's get_init_inputs()

__global__ void max_pool_2d(const float* __restrict__ x, float* __restrict__ out, int64_t planes, int64_t H,
                            int64_t W, int64_t OH, int64_t OW) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= planes * OH * OW) return;
    const int64_t ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
    const float* src = x + plane * H * W;
    float best = -INFINITY;
    for (int kh = 0; kh < KSIZE; ++kh) {
        const int64_t h = oh * STRIDE - PAD + kh * DILATION;
        if (h < 0 || h >= H) continue;
        for (int kw = 0; kw < KSIZE; ++kw) {
            const int64_t w = ow * STRIDE - PAD + kw * DILATION;
            if (w >= 0 && w < W) best = fmaxf(best, src[h * W + w]);
        }
    }
    out[i] = best;
}

extern "C" int kseek_kb_42_max_pooling_2d(const float* x, float* out, int64_t batch_size, int64_t channels,
                                          int64_t height, int64_t width, int64_t out_dim2, int64_t out_dim3) {
    const int64_t n = batch_size * channels * out_dim2 * out_dim3;
    if (n <= 0 || height <= 0 || width <= 0) return 1;
    max_pool_2d<<<(unsigned)((n + 255) / 256), 256>>>(x, out, batch_size * channels, height, width, out_dim2,
                                                      out_dim3);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
