"""Dependency-free is checked, not trusted.

Three checks, each defending something different (docs/harness.md has the threat model):
1. headers: the source may include only the CUDA toolkit's own runtime/device headers and the C/C++ standard
   library; no quoted (local) includes, no computed includes. This refuses cuBLAS, cuDNN, CUTLASS/CuTe, ...
   before anything is compiled, with a readable reason.
2. undefined symbols of the built library: every symbol it needs from outside must be on an allowlist (CUDA
   runtime launch/memory/attribute calls, the tensor-map encoder, libc/libm basics, C++ runtime support).
   No dlopen/dlsym, no threads, no new streams, no fork/exec, no files or clocks: whatever the source did
   to hide a call, the linker's view is what counts.
3. the host code's machine instructions: no raw system calls (`syscall`, `sysenter`, `int 0x80`, `svc`),
   which would bypass the symbol check entirely.
"""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

# C and C++ standard headers a kernel may reasonably need. Deliberately absent: <thread>, <mutex>, <future>,
# <atomic> (host threads), <chrono>/<ctime> (clocks), <fstream>/<iostream> (files), <cstdio> is allowed for
# printf debugging (fopen is refused by the symbol check).
STD_HEADERS = frozenset(
    """
algorithm array bit bitset cassert cfloat cinttypes climits cmath complex cstddef cstdint cstdio cstdlib
cstring functional initializer_list iterator limits memory new numeric optional tuple type_traits utility
vector span concepts
assert.h float.h inttypes.h limits.h math.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h
""".split()
)

# Top-level CUDA toolkit headers that are part of the runtime or device programming model.
CUDA_HEADERS = frozenset(
    """
cuda.h cuda_runtime.h cuda_runtime_api.h cuda_bf16.h cuda_fp16.h cuda_fp8.h cuda_fp6.h cuda_fp4.h
cuda_pipeline.h cuda_pipeline_primitives.h cuda_awbarrier.h cuda_awbarrier_primitives.h
cooperative_groups.h mma.h device_launch_parameters.h vector_types.h cudaTypedefs.h
cuda_device_runtime_api.h driver_types.h builtin_types.h sm_90_rt.h
""".split()
)
# Header folders of the toolkit that are device-side building blocks, not libraries.
CUDA_HEADER_DIRS = ("cooperative_groups/", "cuda/")

CPP_ONLY_HEADERS = STD_HEADERS  # the CPU task: the standard library, nothing else

# A directive line, as the preprocessor sees it: `#` or its digraph `%:` (or the trigraph `??=`, where a
# compiler still reads trigraphs) first on the line. `include_next`, `import` and `embed` are refused outright.
_INCLUDE = re.compile(r"^\s*(?:#|%:|\?\?=)\s*(include|include_next|import|embed)\b\s*(.*)$")

_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")


@dataclass
class HeaderReport:
    ok: bool
    refused: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str | None:
        if self.ok:
            return None
        return "refused includes: " + ", ".join(self.refused)


def _splice(src: str) -> tuple[str, list[int]]:
    """The source with its line continuations (backslash-newline) removed, as the preprocessor's second phase
    does, and for each remaining character its index in the source."""
    chars, where, i, n = [], [], 0, len(src)
    while i < n:
        if src.startswith("\\\n", i):
            i += 2
        elif src.startswith("\\\r\n", i):
            i += 3
        else:
            chars.append(src[i])
            where.append(i)
            i += 1
    return "".join(chars), where


def _token_before(text: str, i: int) -> str:
    """The identifier or number that ends right before position i ('' if none): a literal's prefix (u8, L, R)
    or the digits in front of a C++14 digit separator."""
    j = i
    while j > 0 and text[j - 1] in _IDENT_CHARS:
        j -= 1
    return text[j:i]


def _raw_string_end(src: str, start: int) -> int | None:
    """In the unspliced source, the index just past the raw string R"delim( ... )delim" whose opening quote is
    at `start`; None if no delimiter opens there. The compiler undoes line continuations inside a raw string,
    so its end is looked for in the source as written: a continuation cannot fake or hide a terminator."""
    open_paren = src.find("(", start + 1, start + 18)  # a delimiter has at most 16 characters
    if open_paren < 0 or any(c in src[start + 1 : open_paren] for c in ' ()\\\t\n"'):
        return None
    end = src.find(")" + src[start + 1 : open_paren] + '"', open_paren + 1)
    return len(src) if end < 0 else end + (open_paren - start) + 1


def _ordinary_literal_end(text: str, i: int) -> int:
    """Position just past the string or character literal starting at text[i]: its closing quote (backslash
    escapes honoured) or, unterminated, the end of its line."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1 if j < n and text[j] == quote else j


def _strip_comments(src: str) -> str:
    """The source as the preprocessor splits it into lines, with comments replaced by a space and raw strings
    emptied, so that a directive is seen exactly where the compiler sees one: not inside a comment or a
    literal, and never hidden or revealed by a quote the compiler reads differently (a `'"'`, a raw string
    holding `/*` or ending in a continuation, a digit separator)."""
    text, where = _splice(src)
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        elif text[i] == "'" and _token_before(text, i)[:1].isdigit():  # 1'000'000: a digit separator
            out.append(text[i])
            i += 1
        elif (
            text[i] == '"'
            and _token_before(text, i) in _RAW_PREFIXES
            and ((end := _raw_string_end(src, where[i])) is not None)
        ):
            out.append('""')  # it may span lines holding anything; none of them is a directive
            i = bisect.bisect_left(where, end)
        elif text[i] in "\"'":
            end = _ordinary_literal_end(text, i)
            out.append(text[i:end])  # on one line; a quoted include's name reads better in the refusal
            i = end
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def check_headers(source: str, language: str) -> HeaderReport:
    """language: 'cuda' or 'cpp'."""
    refused, includes = [], []
    for line in _strip_comments(source).splitlines():
        m = _INCLUDE.match(line)
        if not m:
            continue
        directive, rest = m.group(1), m.group(2).strip()
        if directive != "include":
            refused.append(f"#{directive} {rest}")
            continue
        hm = re.match(r"^<([^<>]+)>", rest)
        if not hm:
            refused.append(f"#include {rest} (only <system> headers; the kernel is one file)")
            continue
        name = hm.group(1).strip()
        includes.append(name)
        if not _header_allowed(name, language):
            refused.append(f"<{name}>")
    return HeaderReport(not refused, refused, includes)


def _header_allowed(name: str, language: str) -> bool:
    if ".." in name:
        return False
    if name in STD_HEADERS:
        return True
    if language == "cuda":
        if name in CUDA_HEADERS:
            return True
        return any(name.startswith(d) for d in CUDA_HEADER_DIRS)
    return False


# ---- symbols --------------------------------------------------------------------------------------------

# Exact names a candidate library may import. This list, the header lists above and HARD_DENY are given in full
# in docs/harness.md, and tests/harness/test_depcheck.py holds them equal: a name changes in both, with its reason.
ALLOWED_SYMBOLS = frozenset(
    """
cudaLaunchKernel cudaLaunchKernelExC cudaLaunchCooperativeKernel cudaFuncSetAttribute cudaFuncGetAttributes
cudaFuncSetCacheConfig cudaGetDevice cudaGetDeviceCount cudaGetDeviceProperties cudaGetDeviceProperties_v2
cudaDeviceGetAttribute cudaGetLastError cudaPeekAtLastError cudaGetErrorString cudaGetErrorName
cudaMalloc cudaFree cudaMallocAsync cudaFreeAsync cudaMemsetAsync cudaMemcpyAsync cudaMemset cudaMemcpy
cudaMemcpyToSymbol cudaMemcpyToSymbolAsync cudaGetSymbolAddress cudaPointerGetAttributes
cudaOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
cudaOccupancyMaxPotentialClusterSize cudaOccupancyMaxActiveClusters cudaFuncGetName
cudaDriverGetVersion cudaRuntimeGetVersion
cuTensorMapEncodeTiled cuTensorMapEncodeIm2col cuTensorMapReplaceAddress cuGetErrorString cuGetErrorName
__cudaRegisterFatBinary __cudaRegisterFatBinaryEnd __cudaUnregisterFatBinary __cudaRegisterFunction
__cudaRegisterVar __cudaRegisterManagedVar __cudaRegisterTexture __cudaRegisterSurface
__cudaPushCallConfiguration __cudaPopCallConfiguration __cudaLaunchKernel __cudaGetKernel __cudaInitModule __cudaRegisterLinkedBinary
memcpy memmove memset memcmp strlen strcmp strncmp abort
malloc free calloc realloc posix_memalign aligned_alloc
printf fprintf puts putchar fputs fputc stderr stdout vprintf snprintf
expf exp logf log sqrtf sqrt fabsf fabs fmaxf fminf fmax fmin powf pow exp2f exp2 log2f log2 ceilf floorf
ceil floor roundf round tanhf tanh erff erf
__stack_chk_fail __assert_fail __gmon_start__ _ITM_deregisterTMCloneTable _ITM_registerTMCloneTable
__cxa_finalize __cxa_atexit atexit __cxa_guard_acquire __cxa_guard_release __cxa_guard_abort
__cxa_begin_catch __cxa_end_catch __cxa_rethrow __cxa_allocate_exception __cxa_free_exception __cxa_throw
__cxa_pure_virtual __gxx_personality_v0 _Unwind_Resume
_Znwm _Znam _ZdlPv _ZdaPv _ZdlPvm _ZdaPvm _ZnwmSt11align_val_t _ZdlPvmSt11align_val_t _ZdlPvSt11align_val_t
_ZSt9terminatev _ZSt17__throw_bad_allocv _ZSt20__throw_length_errorPKc _ZSt24__throw_out_of_range_fmtPKcz
_ZSt19__throw_logic_errorPKc _ZSt28__throw_bad_array_new_lengthv _ZSt20__throw_out_of_rangePKc
_ZSt21__glibcxx_assert_failPKciS0_S0_ _ZSt25__throw_bad_function_callv
_ZTVN10__cxxabiv117__class_type_infoE _ZTVN10__cxxabiv120__si_class_type_infoE
""".split()
)


# Allowed only where nvcc's own host stubs of __device__ functions are what imports them. cudafe gives every
# __device__ function of external linkage a host-side body `{ int volatile ___ = 1; ::exit(___); }` that host
# code can never call, so a plain kernel with `__device__ float warp_sum(float)` helpers imports exit (issue 38: a
# correct KernelBench softmax, nvcc 13.0, refused). exit is allowed where every reference to it is such a stub's
# call (and no relocation takes its address); any other reference is refused, naming the functions that make it.
# This list is given in full in docs/harness.md with the lists above, held to it by the same test.
STUB_ONLY_SYMBOLS = frozenset(
    """
exit
""".split()
)


@dataclass
class SymbolReport:
    ok: bool
    refused: list[str] = field(default_factory=list)
    undefined: list[str] = field(default_factory=list)
    raw_syscalls: list[str] = field(default_factory=list)
    tool_error: str | None = None
    callers: dict[str, Any] = field(
        default_factory=dict
    )  # a refused STUB_ONLY symbol -> the functions that reference it

    @property
    def reason(self) -> str | None:
        if self.tool_error:
            return self.tool_error
        parts = []
        if self.refused:
            parts.append(
                "refused symbols: "
                + ", ".join(self._named(n) for n in self.refused[:12])
                + (f" (+{len(self.refused) - 12} more)" if len(self.refused) > 12 else "")
            )
        if self.raw_syscalls:
            parts.append("raw system-call instructions in host code: " + "; ".join(self.raw_syscalls[:3]))
        return "; ".join(parts) or None

    def _named(self, name: str) -> str:
        """A refused name, with what in the source made it where that is known (a STUB_ONLY symbol's callers)."""
        callers = self.callers.get(name)
        if not callers:
            return name
        shown = ", ".join(callers[:6]) + (f" (+{len(callers) - 6} more)" if len(callers) > 6 else "")
        return (
            f"{name} (called by {shown}; host code may not call it, nvcc's stubs of __device__ functions may: a"
            f" __device__ function named here, declare it `static __device__` or `__device__ __forceinline__`)"
        )


# Refused even if a future allowlist entry matched them (belt and braces).
HARD_DENY = (
    "dlopen",
    "dlsym",
    "dlvsym",
    "pthread",
    "fork",
    "syscall",
    "mprotect",
    "mmap",  # as mprotect: executable memory would run code the machine-code scan never saw
    "stream",
    "entrypoint",
    "procaddress",
    "cublas",
    "cudnn",
    "cutlass",
    "exec",
    "ptrace",
)


def symbol_allowed(name: str) -> bool:
    base = name.split("@", 1)[0]
    low = base.lower()
    return base in ALLOWED_SYMBOLS and not any(d in low for d in HARD_DENY)


# How long nm or objdump may take on one library; a tool that hangs fails the check, never passes it.
TOOL_TIMEOUT_S = 120.0


def undefined_symbols(lib_path: str) -> list[str]:
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", lib_path], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S
    )
    if out.returncode != 0:
        raise RuntimeError(f"nm failed: {out.stderr.strip()}")
    names = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts:
            names.append(parts[-1])
    return names


_SYSCALL_INSN = re.compile(r"\s(syscall|sysenter|svc\s+#?0x0|svc\s+#0|int\s+\$0x80)\b")


def _objdump(lib_path: str, *flags: str) -> str:
    out = subprocess.run(["objdump", *flags, lib_path], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    if out.returncode != 0:
        raise RuntimeError(f"objdump failed: {out.stderr.strip()}")
    return out.stdout


def disassembly(lib_path: str) -> str:
    return _objdump(lib_path, "-d", "--no-show-raw-insn")


def raw_syscall_sites(lib_path: str, text: str | None = None) -> list[str]:
    text = disassembly(lib_path) if text is None else text
    return [line.strip() for line in text.splitlines() if _SYSCALL_INSN.search(line)]


_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(.*?)\s*$")
# the stub's instructions before its call, as g++ writes them at any optimisation level (CET's endbr64 included)
_STUB_SETUP = re.compile(
    r"endbr64|push\s+%r\w+|sub\s+\$0x[0-9a-f]+,%rsp|mov\s+%rsp,%rbp"
    r"|movl\s+\$0x1,(?:-?0x[0-9a-f]+)?\(%r[sb]p\)|mov\s+(?:-?0x[0-9a-f]+)?\(%r[sb]p\),%e(?:di|ax)|mov\s+%eax,%edi"
)
_PADDING = re.compile(r"(?:(?:data16|cs)\s+)*(?:nop[wl]?\b.*|int3|xchg\s+%ax,%ax|hlt)")


def functions_of(text: str) -> dict[str, list[str]]:
    """The disassembly by function: name -> its instructions (objdump's text, without the addresses)."""
    functions: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            current = functions.setdefault(m.group(1), [])
        elif current is not None and (m := _INSN.match(line)):
            current.append(m.group(1))
    return functions


def is_device_stub(instructions: list[str], symbol: str) -> bool:
    """nvcc's host stub of a __device__ function: set up the volatile 1, call `symbol`, nothing after but padding."""
    call = f"<{symbol}@plt>"
    at = next((i for i, ins in enumerate(instructions) if call in ins), None)
    return (
        at is not None
        and re.fullmatch(rf"call\s+[0-9a-f]+ {re.escape(call)}", instructions[at]) is not None
        and all(_STUB_SETUP.fullmatch(ins) for ins in instructions[:at])
        and all(_PADDING.fullmatch(ins) for ins in instructions[at + 1 :])
    )


def stub_only_callers(lib_path: str, text: str, symbol: str) -> list[str]:
    """The functions that reference `symbol` other than through an nvcc device stub's call (demangled; its address
    taken shows as a relocation other than the PLT's, named "its address"); [] when the stubs are all there is."""
    ref = re.compile(rf"<{re.escape(symbol)}(?:@|\+|>)")
    callers = [
        name
        for name, instructions in functions_of(text).items()
        if not name.endswith("@plt")
        and any(ref.search(ins) for ins in instructions)
        and not is_device_stub(instructions, symbol)
    ]
    relocs = _objdump(lib_path, "-R")
    if any(
        ref.search(f"<{f[-1]}>") and "JUMP_SLOT" not in f[1]
        for f in (ln.split() for ln in relocs.splitlines())
        if len(f) == 3
    ):
        callers.append("its address taken")
    return [_demangled(n) for n in callers]


def _demangled(name: str) -> str:
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        return out.stdout.strip() or name
    except (OSError, subprocess.TimeoutExpired):
        return name


def check_library(lib_path: str) -> SymbolReport:
    for tool in ("nm", "objdump"):
        if shutil.which(tool) is None:
            return SymbolReport(False, tool_error=f"cannot check dependencies: '{tool}' (binutils) is missing")
    try:
        names = undefined_symbols(lib_path)
        text = disassembly(lib_path)
        sites = raw_syscall_sites(lib_path, text)
        refused, callers = set(), {}
        for base in {n.split("@", 1)[0] for n in names if not symbol_allowed(n)}:
            if base in STUB_ONLY_SYMBOLS:
                who = stub_only_callers(lib_path, text, base)
                if not who:
                    continue  # only nvcc's device stubs call it
                callers[base] = who
            refused.add(base)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return SymbolReport(False, tool_error=f"cannot check dependencies: {e}")
    return SymbolReport(not refused and not sites, sorted(refused), sorted(names), sites, callers=callers)
