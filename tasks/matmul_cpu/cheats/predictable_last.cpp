// CHEAT: makes the last timed call predictable, then skips the work on every timed call before it.
// expect: (the median's) is wrong
// A slow warm-up (the 4th call of a shape) makes the harness take its fewest repeats (3), so the 7th call is the
// last; the 5th and 6th return at once without writing, and their times make the median. The harness once judged
// the last timed call and one other at random, and this escaped whenever the draw missed (4 times in 9 a
// scenario); the calls that set the median are judged now.
static int shapes[8][3], calls[8], known = 0;

static int call_number(int m, int n, int k) {
    for (int i = 0; i < known; ++i)
        if (shapes[i][0] == m && shapes[i][1] == n && shapes[i][2] == k) return ++calls[i];
    if (known == 8) return 0;
    shapes[known][0] = m, shapes[known][1] = n, shapes[known][2] = k;
    return calls[known++] = 1;
}

extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k) {
    const int call = call_number(m, n, k);
    if (call == 5 || call == 6) return 0;  // a timed call that is not the last: nothing written
    if (call == 4) {  // the warm-up: slow enough (~100 ms) that 60 ms of budget asks for the fewest repeats
        volatile unsigned long spin = 0;
        for (unsigned long i = 0; i < 100000000UL; ++i) spin = spin + i;
    }
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0.f;
            for (int p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
            c[i * n + j] = s;
        }
    return 0;
}
