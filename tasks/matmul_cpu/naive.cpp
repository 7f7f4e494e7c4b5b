// matmul_cpu starting kernel: C[m,n] = A[m,k] @ B[k,n], float32, row-major.
// The simplest correct version: i-k-j loop order so that the inner loop walks B and C contiguously
// (the compiler vectorises it); no blocking, no threads. Baseline "naive" is this file.
#include <cstddef>

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0) return 1;
    for (int i = 0; i < m; ++i) {
        float* crow = c + (size_t)i * n;
        for (int j = 0; j < n; ++j) crow[j] = 0.0f;
        for (int p = 0; p < k; ++p) {
            const float aip = a[(size_t)i * k + p];
            const float* brow = b + (size_t)p * n;
            for (int j = 0; j < n; ++j) crow[j] += aip * brow[j];
        }
    }
    return 0;
}
