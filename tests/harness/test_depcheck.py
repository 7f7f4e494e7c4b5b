"""Dependency-free is checked: headers, imported symbols, raw system calls."""

import re
import shutil
import subprocess
from pathlib import Path

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


# ---- the lists themselves: held to the ones docs/harness.md documents, and what is left off them refused ----

HARNESS_DOC = Path(__file__).resolve().parents[2] / "docs" / "harness.md"


def documented_list(name: str) -> list[str]:
    """The names of the block docs/harness.md marks `<!-- depcheck.NAME -->`."""
    blocks = dict(re.findall(r"<!-- depcheck\.(\w+) -->\n```\n(.*?)```", HARNESS_DOC.read_text(), re.S))
    return blocks[name].split()


@pytest.mark.parametrize(
    "name", ["STD_HEADERS", "CUDA_HEADERS", "CUDA_HEADER_DIRS", "ALLOWED_SYMBOLS", "STUB_ONLY_SYMBOLS", "HARD_DENY"]
)
def test_each_list_of_the_dependency_check_is_the_one_the_docs_give(name):
    # mutation tools change no module-level data: a name slipped onto a list (mmap on the symbols) fails here
    documented = documented_list(name)
    assert len(documented) == len(set(documented)), "a name is listed twice in docs/harness.md"
    assert sorted(getattr(depcheck, name)) == sorted(documented)


@pytest.mark.parametrize("word", documented_list("HARD_DENY"))
def test_a_symbol_holding_a_hard_denied_word_is_refused_even_on_the_allowlist(monkeypatch, word):
    name = f"cuda{word.upper()}_v2"  # in any case, anywhere in the name
    monkeypatch.setattr(depcheck, "ALLOWED_SYMBOLS", depcheck.ALLOWED_SYMBOLS | {name, f"x{word}"})
    assert not depcheck.symbol_allowed(name) and not depcheck.symbol_allowed(f"x{word}@GLIBC_2.2.5")


# Symbols a kernel could use to escape the judge: map or protect memory (and run code no scan saw), load code,
# start processes or threads, touch files, the network, clocks, signals or the environment, make streams or
# graphs the timer does not see, or call a vendor library. None is on the allowlist.
ESCAPES = """
mmap mmap64 munmap mremap madvise mprotect pkey_mprotect shm_open memfd_create
dlopen dlsym dlvsym dlmopen cudaGetDriverEntryPoint cudaGetDriverEntryPointByVersion cuGetProcAddress_v2
cuModuleLoadData cuLaunchKernel cudaLibraryLoadData
fork vfork clone execve execvp execl posix_spawn system popen kill ptrace syscall prctl
pthread_create thrd_create _ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE
open openat creat fopen read write unlink ioctl
socket connect bind sendto
clock_gettime gettimeofday time clock nanosleep usleep _ZNSt6chrono3_V212system_clock3nowEv
signal sigaction raise alarm setitimer getenv setenv
cudaStreamCreate cudaStreamCreateWithFlags cudaStreamCreateWithPriority cudaEventCreate cudaEventRecord
cudaGraphLaunch cudaLaunchHostFunc cudaDeviceSynchronize cudaSetDevice cudaDeviceReset cudaMallocHost
cudaHostAlloc cudaIpcOpenMemHandle cudaMemcpyPeer
cublasSgemm_v2 cublasLtMatmul cudnnCreate curandGenerateUniform
""".split()


@pytest.mark.parametrize("name", ESCAPES)
def test_a_symbol_left_off_the_allowlist_is_refused(name):
    assert not depcheck.symbol_allowed(name) and not depcheck.symbol_allowed(f"{name}@GLIBC_2.2.5")


@needs_gxx
@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs binutils' objdump")
def test_a_kernel_importing_any_of_them_is_refused_naming_each(tmp_path):
    # one library that imports every one (called on a path never taken): the linker's view is what is judged
    src, lib = tmp_path / "k.cpp", tmp_path / "k.so"
    declared = "".join(f'extern "C" void {name}();\n' for name in ESCAPES if not name.startswith("_Z"))
    called = "".join(f"{name}(); " for name in ESCAPES if not name.startswith("_Z"))
    mangled = "".join(f'extern "C" void {name}();\n' for name in ESCAPES if name.startswith("_Z"))
    src.write_text(
        f"{declared}{mangled}"
        f'extern "C" int kseek_probe(int x) {{ if (x == 12345) {{ {called}'
        + "".join(f"{name}(); " for name in ESCAPES if name.startswith("_Z"))
        + "} return x; }\n"
    )
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-w", "-o", str(lib), str(src)], check=True, timeout=120)
    report = depcheck.check_library(str(lib))
    assert report.ok is False and sorted(report.refused) == sorted(ESCAPES)
    assert report.reason.startswith("refused symbols: ") and f"(+{len(ESCAPES) - 12} more)" in report.reason


# Headers that would bring a vendor library, threads, clocks, files, processes or the network in, each left off
# the header lists; the CUDA ones are refused in a CUDA kernel too.
REFUSED_HEADERS = """
thread mutex future atomic condition_variable chrono ctime fstream iostream sstream filesystem csignal regex
random unistd.h dlfcn.h pthread.h sys/mman.h sys/socket.h sys/syscall.h signal.h time.h fcntl.h setjmp.h
cublas_v2.h cublasLt.h cudnn.h curand.h cufft.h cusparse.h nvrtc.h cub/cub.cuh thrust/sort.h
cutlass/gemm/device/gemm.h cute/tensor.hpp nvToolsExt.h cuda/../../usr/include/dlfcn.h
""".split()


@pytest.mark.parametrize("language", ["cpp", "cuda"])
@pytest.mark.parametrize("header", REFUSED_HEADERS)
def test_a_header_left_off_the_lists_is_refused(header, language):
    report = depcheck.check_headers(f"#include <{header}>\n", language)
    assert report.ok is False and report.refused == [f"<{header}>"]


@pytest.mark.parametrize("header", documented_list("STD_HEADERS"))
def test_each_standard_header_listed_is_allowed_in_both_languages(header):
    assert depcheck.check_headers(f"#include <{header}>\n", "cpp").ok
    assert depcheck.check_headers(f"#include <{header}>\n", "cuda").ok


@pytest.mark.parametrize("header", documented_list("CUDA_HEADERS") + ["cuda/barrier", "cooperative_groups/reduce.h"])
def test_each_cuda_header_listed_is_allowed_in_a_cuda_kernel_only(header):
    assert depcheck.check_headers(f"#include <{header}>\n", "cuda").ok
    assert not depcheck.check_headers(f"#include <{header}>\n", "cpp").ok


@pytest.mark.parametrize(
    "line, raw",
    [
        ("  401000:\tsyscall", True),
        ("  401000:\tsysenter", True),
        ("  401000:\tint    $0x80", True),
        ("  401000:\tsvc\t#0x0", True),
        ("  401000:\tsvc\t#0", True),
        ("  401000:\tcall   401030 <syscall@plt>", False),  # a call through the PLT: the symbol check's
        ("  401000:\tcall   401030 <my_syscall_free>", False),
        ("  401000:\tint3", False),
        ("  401000:\tint    $0x3", False),
    ],
)
def test_the_raw_system_call_pattern_matches_the_instructions_only(line, raw):
    assert bool(depcheck._SYSCALL_INSN.search(line)) is raw
