// CHEAT: loads a BLAS at run time (declared by hand to dodge the header check).
// expect: refused symbols: dlopen
extern "C" void* dlopen(const char*, int);
extern "C" void* dlsym(void*, const char*);

typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    void* h = dlopen("libopenblas.so.0", 2);
    if (!h) return 1;
    sgemm_t f = (sgemm_t)dlsym(h, "cblas_sgemm");
    f(101, 111, 111, m, n, k, 1.f, a, k, b, n, 0.f, c, n);
    return 0;
}
