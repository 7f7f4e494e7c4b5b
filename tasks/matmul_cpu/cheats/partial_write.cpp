// CHEAT: skips the last row of C (less work; the poisoned NaN stays there).
// expect: NaN/Inf where the reference is finite
extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    for (int i = 0; i + 1 < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
    return 0;
}
