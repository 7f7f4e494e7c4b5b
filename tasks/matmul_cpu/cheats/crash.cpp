// CHEAT (or bug): writes through a null pointer; the harness must survive and say so.
// expect: crash
extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    volatile float* p = nullptr;
    *p = 1.0f;
    return 0;
}
