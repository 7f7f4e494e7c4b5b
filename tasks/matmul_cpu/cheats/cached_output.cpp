// CHEAT: computes once, then returns the cached answer for every later call of the same shape.
// expect: seed b
#include <cstdlib>
#include <cstring>

static float* cache = nullptr;
static int cm = -1, cn = -1, ck = -1;

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (cache && cm == m && cn == n && ck == k) {
        std::memcpy(c, cache, sizeof(float) * m * n);
        return 0;
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
    std::free(cache);
    cache = static_cast<float*>(std::malloc(sizeof(float) * m * n));
    std::memcpy(cache, c, sizeof(float) * m * n);
    cm = m; cn = n; ck = k;
    return 0;
}
