// CHEAT: hands the work to a thread the harness does not see (declared by hand to dodge the header check).
// expect: refused symbols: pthread_create
extern "C" int pthread_create(void*, const void*, void* (*)(void*), void*);

struct Job { const float* a; const float* b; float* c; int m, n, k; };
static Job job;

static void* work(void*) {
    for (int i = 0; i < job.m; ++i)
        for (int j = 0; j < job.n; ++j) {
            float s = 0.f;
            for (int p = 0; p < job.k; ++p) s += job.a[i * job.k + p] * job.b[p * job.n + j];
            job.c[i * job.n + j] = s;
        }
    return nullptr;
}

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    job = Job{a, b, c, m, n, k};
    unsigned long tid[8];
    return pthread_create(tid, nullptr, work, nullptr);
}
