// CHEAT (or bug): never returns.
// expect: hang/timeout
extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    volatile int forever = 1;
    while (forever) {}
    return 0;
}
