// CHEAT: forks a helper process (declared by hand to dodge the header check).
// expect: refused symbols: fork
extern "C" int fork(void);

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    if (fork() == 0) return 0;
    for (int i = 0; i < m * n; ++i) c[i] = 0.f;
    return 0;
}
