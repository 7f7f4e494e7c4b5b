// CHEAT: rounds the inputs to bfloat16 (8-bit mantissa) before multiplying: faster on some hardware, wrong here.
// expect: above tolerance
#include <cstdint>
#include <cstring>

static float to_bf16(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= 0xffff0000u;
    std::memcpy(&x, &u, 4);
    return x;
}

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += to_bf16(a[i * k + p]) * to_bf16(b[p * n + j]);
            c[i * n + j] = s;
        }
    return 0;
}
