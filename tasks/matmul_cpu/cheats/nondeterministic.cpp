// CHEAT: an answer that moves between runs on identical inputs (state carried across calls, like a race).
// expect: outputs differ between two runs
static unsigned counter = 0;

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
    c[0] *= 1.0f + 1e-6f * (float)(++counter & 1);
    return 0;
}
