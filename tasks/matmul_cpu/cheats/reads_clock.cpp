// CHEAT: reads the clock to tell timed calls from checked ones.
// expect: refused symbols: clock_gettime
#include <cstdint>
struct ts { long s, ns; };
extern "C" int clock_gettime(int, ts*);

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    ts t;
    clock_gettime(1, &t);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
    return 0;
}
