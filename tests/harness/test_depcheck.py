"""Dependency-free is checked: headers, imported symbols, raw system calls."""

import pytest

from gpu_harness import depcheck
from gpu_harness.build import build

from .conftest import needs_gxx


def test_cuda_runtime_and_std_headers_are_allowed():
    src = "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cstdint>\n#include <cuda/barrier>\n"
    assert depcheck.check_headers(src, "cuda").ok


@pytest.mark.parametrize(
    "header",
    [
        "cublas_v2.h",
        "cudnn.h",
        "cutlass/gemm/device/gemm.h",
        "cute/tensor.hpp",
        "thread",
        "dlfcn.h",
        "pthread.h",
        "unistd.h",
        "cuda/../../etc/x.h",
    ],
)
def test_library_and_os_headers_are_refused(header):
    rep = depcheck.check_headers(f"#include <{header}>\n", "cuda")
    assert not rep.ok and header in rep.reason


def test_cuda_headers_are_refused_in_the_cpu_task():
    assert not depcheck.check_headers("#include <cuda_runtime.h>\n", "cpp").ok


def test_quoted_and_computed_includes_are_refused():
    assert not depcheck.check_headers('#include "helper.h"\n', "cpp").ok
    assert not depcheck.check_headers("#define H <cblas.h>\n#include H\n", "cpp").ok


def test_include_hidden_by_line_continuation_is_seen():
    rep = depcheck.check_headers("#inc\\\nlude <cblas.h>\n", "cpp")
    assert not rep.ok


def test_include_in_a_comment_is_ignored():
    assert depcheck.check_headers("// #include <cblas.h>\n/* #include <thread> */\n", "cpp").ok


@pytest.mark.parametrize(
    "name", ["cudaLaunchKernel", "memcpy@GLIBC_2.14", "cuTensorMapEncodeTiled", "__cudaRegisterFatBinary", "expf"]
)
def test_allowed_symbols(name):
    assert depcheck.symbol_allowed(name)


@pytest.mark.parametrize(
    "name",
    [
        "dlopen",
        "dlsym",
        "pthread_create",
        "fork",
        "cudaStreamCreateWithFlags",
        "cudaGetDriverEntryPoint",
        "cublasSgemm_v2",
        "clock_gettime",
        "fopen",
        "syscall",
        "mprotect",
        "cudaEventRecord",
        "cudaGraphLaunch",
        "execve",
    ],
)
def test_refused_symbols(name):
    assert not depcheck.symbol_allowed(name)


@needs_gxx
def test_built_library_imports_are_listed_and_checked(tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(
        'extern "C" int getpid(void);\nextern "C" int kseek_matmul(const float*, const float*, float*,'
        " int, int, int) { return getpid() < 0; }\n"
    )
    b = build(src, "cpp")
    assert not b.ok and "getpid" in b.reason
    assert any(s.startswith("getpid") for s in b.undefined_symbols)
