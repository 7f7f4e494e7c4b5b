"""nvcc gives every __device__ function of external linkage a host stub that calls exit (cudafe's body
`{ int volatile ___ = 1; ::exit(___); }`, never callable from the host), so a plain kernel with __device__
helpers imports exit: a correct KernelBench softmax was refused "refused symbols: exit" on an H200 (issue 38).
Those stubs are allowed; exit called, or its address taken, anywhere else is refused naming the function."""

import subprocess

from gpu_harness import depcheck
from gpu_harness.build import build

from .conftest import needs_gxx, needs_nvcc

SOFTMAX_WITH_DEVICE_HELPERS = r"""
#include <cuda_runtime.h>
#include <cfloat>

// plain __device__ helpers (external linkage, not inline): nvcc writes a host stub for each
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}
__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
__device__ float block_reduce(float v, bool is_max) {
    __shared__ float s[32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = is_max ? warp_max(v) : warp_sum(v);
    if (lane == 0) s[w] = v;
    __syncthreads();
    v = (threadIdx.x < blockDim.x / 32) ? s[lane] : (is_max ? -FLT_MAX : 0.f);
    v = is_max ? warp_max(v) : warp_sum(v);
    __syncthreads();
    return v;
}
__global__ void softmax_rows(const float* x, float* y, long cols) {
    const float* row = x + blockIdx.x * cols;
    float m = -FLT_MAX, s = 0.f;
    for (long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_reduce(m, true);
    for (long c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    s = block_reduce(s, false);
    for (long c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = expf(row[c] - m) / s;
}
extern "C" int kseek_softmax(const float* x, float* out, long batch_size, long dim) {
    softmax_rows<<<batch_size, 256>>>(x, out, dim);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"""


@needs_nvcc
def test_a_softmax_with_plain_device_helpers_builds(tmp_path):
    src = tmp_path / "softmax.cu"
    src.write_text(SOFTMAX_WITH_DEVICE_HELPERS)
    built = build(src, "cuda", "sm_90a")
    assert built.ok, built.reason
    assert any(s.split("@")[0] == "exit" for s in built.undefined_symbols)  # the stubs' import, allowed


@needs_nvcc
def test_a_kernels_host_code_that_calls_exit_is_refused_naming_it(tmp_path):
    src = tmp_path / "host_exit.cu"
    src.write_text(
        SOFTMAX_WITH_DEVICE_HELPERS.replace(
            "    softmax_rows<<<", "    if (dim < 0) exit(int(dim));  // not a stub's call\n    softmax_rows<<<"
        )
    )
    built = build(src, "cuda", "sm_90a")
    assert not built.ok
    assert built.reason.startswith("refused symbols: exit (called by kseek_softmax;")
    assert "warp_sum" not in built.reason  # the stubs are not what is refused


def _library(tmp_path, source: str) -> str:
    src, lib = tmp_path / "k.cpp", tmp_path / "k.so"
    src.write_text(source)
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-Wl,-z,now", "-o", str(lib), str(src)], check=True, timeout=120)
    return str(lib)


@needs_gxx
def test_exit_called_from_host_code_is_refused_naming_the_function(tmp_path):
    lib = _library(
        tmp_path,
        "#include <cstdlib>\nnamespace ns { void leave(int code) { if (code) exit(code); } }\n"
        'extern "C" int kseek_x(int a) { ns::leave(a == 7); return 0; }\n',
    )
    report = depcheck.check_library(lib)
    assert not report.ok and report.refused == ["exit"]
    assert "exit (called by ns::leave(int)" in report.reason


@needs_gxx
def test_the_address_of_exit_taken_is_refused(tmp_path):
    lib = _library(
        tmp_path,
        '#include <cstdlib>\nextern "C" { void (*volatile hook)(int) = nullptr; }\n'
        'extern "C" int kseek_x(int a) { hook = &exit; if (a == 7) hook(0); return 0; }\n',
    )
    report = depcheck.check_library(lib)
    assert not report.ok and "its address taken" in report.reason


def test_only_a_stubs_instructions_make_a_stub():
    stub = ["sub    $0x18,%rsp", "movl   $0x1,0xc(%rsp)", "mov    0xc(%rsp),%edi", "call   10a0 <exit@plt>",
            "data16 cs nopw 0x0(%rax,%rax,1)"]  # fmt: skip
    assert depcheck.is_device_stub(stub, "exit")
    assert depcheck.is_device_stub(["endbr64", *stub], "exit")
    assert not depcheck.is_device_stub(["mov    %esi,%edi", *stub[3:]], "exit")  # a code chosen by the caller
    assert not depcheck.is_device_stub([*stub[:3], "jmp    10a0 <exit@plt>"], "exit")
    assert not depcheck.is_device_stub([*stub[:4], "mov    $0x0,%eax", "ret"], "exit")  # code after the call
