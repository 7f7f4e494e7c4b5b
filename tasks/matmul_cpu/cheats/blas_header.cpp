// CHEAT: calls a BLAS library.
// expect: refused includes: <cblas.h>
#include <cblas.h>

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a, k, b, n, 0.f, c, n);
    return 0;
}
