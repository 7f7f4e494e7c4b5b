// A plain kernel for KernelBench level 1 #1 (square matmul, float32): out[N,N] = A[N,N] @ B[N,N].
// A 64x64 tile of out per block of 16x16 threads, each thread 4x4 outputs, K in steps of 16 through shared
// memory; every product summed in float32 in k order (the floor of an imported task's tolerance admits that).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void sgemm_64x64(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                            int64_t R, int64_t K, int64_t L) {
    __shared__ float As[16][65];  // As[k][row]: the +1 keeps the transposed stores off one bank
    __shared__ float Bs[16][64];  // Bs[k][col]
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int64_t row0 = (int64_t)blockIdx.y * 64, col0 = (int64_t)blockIdx.x * 64;
    float acc[4][4] = {};
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
        for (int r = 0; r < 4; ++r) {
            const int e = tid + 256 * r;
            const int m = e >> 4, ka = e & 15;  // A: 64 rows x 16 k, k fastest (coalesced along a row)
            const int64_t gr = row0 + m, gka = k0 + ka;
            As[ka][m] = (gr < R && gka < K) ? A[gr * K + gka] : 0.0f;
            const int kb = e >> 6, n = e & 63;  // B: 16 k x 64 columns, columns fastest
            const int64_t gkb = k0 + kb, gc = col0 + n;
            Bs[kb][n] = (gkb < K && gc < L) ? B[gkb * L + gc] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
            for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) {
        const int64_t r = row0 + ty + 16 * i;
        for (int j = 0; j < 4; ++j) {
            const int64_t c = col0 + tx + 16 * j;
            if (r < R && c < L) C[r * L + c] = acc[i][j];
        }
    }
}

extern "C" int kseek_kb_1_square_matrix_multiplication(const float* A, const float* B, float* out, int64_t N) {
    if (N <= 0 || (N + 63) / 64 > 65535) return 1;
    const dim3 block(16, 16), grid((unsigned)((N + 63) / 64), (unsigned)((N + 63) / 64));
    sgemm_64x64<<<grid, block>>>(A, B, out, N, N, N);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
