// CHEAT: pulls code from outside the one kernel file.
// expect: only <system> headers
#include "../../matmul_cpu/naive.cpp"
