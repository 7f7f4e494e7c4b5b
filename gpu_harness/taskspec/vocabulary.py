"""The words a task.toml is written in: its files, targets, dtypes and distributions, and the bounds within which a
task may set the harness's knobs and size (docs/tasks.md, "task.toml, field by field")."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

SPEC_FILE = "task.toml"
REFERENCE_FILE = "reference.py"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# names a C/C++/CUDA argument may not take, though Python allows them (an argument is also a parameter of
# reference.py's functions, so Python's keywords are refused too: keyword.iskeyword): every C++20 keyword and
# alternative token (`true`, `nullptr`, `and_eq`: a parameter of that name is a syntax error in the generated
# declaration), CUDA's declaration specifiers, NULL (a macro), and the type names a kernel's declaration or body
# uses (a parameter of such a name hides the type)
C_RESERVED = frozenset(
    # C++20 keywords
    "alignas alignof asm auto bool break case catch char char8_t char16_t char32_t class concept const consteval "
    "constexpr constinit const_cast continue co_await co_return co_yield decltype default delete do double "
    "dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable "
    "namespace new noexcept nullptr operator private protected public register reinterpret_cast requires return "
    "short signed sizeof static static_assert static_cast struct switch template this thread_local throw true try "
    "typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    # the alternative tokens (and, or, not are Python keywords too)
    "and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq "
    # C's own keywords, CUDA's specifiers, and NULL
    "restrict _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local "
    "__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ __forceinline__ __noinline__ "
    "__launch_bounds__ __grid_constant__ NULL "
    # type names of the generated declarations and of <cstdint>, <cuda_fp16.h>, <cuda_bf16.h>, <cuda_runtime.h>
    "half dim3 int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t intptr_t "
    "uintptr_t std __half __half2 half2 __nv_bfloat16 __nv_bfloat162 nv_bfloat16 nv_bfloat162 cudaStream_t".split()
)


def reserved_by(name: str) -> str | None:
    """The language that keeps `name` from being an argument's ("Python" or "C/C++"), or None where it is free."""
    if keyword.iskeyword(name):
        return "Python"
    return "C/C++" if name in C_RESERVED else None


@dataclass(frozen=True)
class Target:
    name: str
    language: str  # what gpu_harness.build compiles: "cpp" or "cuda"
    needs_gpu: bool
    source_suffix: str
    arrays: str  # what reference.py's functions get: "numpy" arrays or "torch" tensors


TARGETS = {
    "cpu": Target("cpu", "cpp", needs_gpu=False, source_suffix=".cpp", arrays="numpy"),
    "cuda-sm90": Target("cuda-sm90", "cuda", needs_gpu=True, source_suffix=".cu", arrays="torch"),
}
# the precision the reference computes in: float inputs reach it as copies of this dtype
REFERENCE_PRECISIONS = ("float64", "float32")


@dataclass(frozen=True)
class DType:
    name: str
    c_type: str  # as written in the generated C declaration
    numpy: str | None  # numpy's name for it (None: no numpy type, e.g. bfloat16)
    itemsize: int
    kind: str  # "float" or "int"
    targets: tuple[str, ...]  # where it may be a tensor's element type


DTYPES = {
    d.name: d
    for d in (
        DType("float32", "float", "float32", 4, "float", ("cpu", "cuda-sm90")),
        DType("float64", "double", "float64", 8, "float", ("cpu", "cuda-sm90")),
        DType("float16", "__half", "float16", 2, "float", ("cuda-sm90",)),
        DType("bfloat16", "__nv_bfloat16", None, 2, "float", ("cuda-sm90",)),
        DType("int8", "int8_t", "int8", 1, "int", ("cpu", "cuda-sm90")),
        DType("uint8", "uint8_t", "uint8", 1, "int", ("cpu", "cuda-sm90")),
        DType("int32", "int32_t", "int32", 4, "int", ("cpu", "cuda-sm90")),
        DType("int64", "int64_t", "int64", 8, "int", ("cpu", "cuda-sm90")),
    )
}
# scalars are passed by value; `int` and `float` read as the C declaration every kernel writer expects
SCALAR_C_TYPES = {"int32": "int", "int64": "int64_t", "float32": "float", "float64": "double"}
DISTRIBUTIONS = {"normal": ("mean", "std"), "uniform": ("low", "high"), "integers": ("low", "high")}

# The harness's timing of a scenario (gpu_harness/evaluation.py's TIMING; a task's [timing] overrides entries
# within TIMING_KEYS' bounds). The candidate gets ~budget_ms of timed calls, between min and max repeats.
# 60 ms / 15 gave the same geometric means as 120 ms / 25 over the full attention grid on an H200 (0.902x vs
# 0.903x cuDNN, 1.471x vs 1.472x FA2) in 15 s less (docs/benchmarks.md).
# Within that, timing stops early once every implementation's median is pinned down to 0.5% (after 5 calls
# at least; verdict.median_settled).
# The host-clock batch is ~10 ms of back-to-back calls (25 ms before: 4.6 s of a 48 s full grid): the parent's
# per-batch latency is subtracted (TimingLimits.batch_latency_ms), and what the check catches (work the events
# do not see) adds a call's worth of time per call, whatever the batch's length.
TIMING_DEFAULTS = {
    "budget_ms": 60.0,
    "min_reps": 3,
    "max_reps": 15,
    "early_min": 5,
    "ci_rel": 0.005,
    "checks": 2,
    "batch_ms": 10.0,
    "batch_max": 200,
}
# what a task may change of the harness's timing, and within which bounds: a task tunes for its machine's
# noise, it never switches a check off (the bounds keep the host clock, the spot checks and the repeats)
TIMING_KEYS = {  # key of gpu_harness/evaluation.py's TIMING -> (lowest, highest)
    "budget_ms": (1.0, 2000.0),
    "min_reps": (1, 100),
    "max_reps": (1, 200),
    "early_min": (3, 100),
    "ci_rel": (0.001, 0.05),
    "checks": (1, 3),  # the median's call(s) are judged, and checks - 1 other timed calls drawn after they ran
    "batch_ms": (1.0, 500.0),
    "batch_max": (10, 10000),
}
HOST_CLOCK_KEYS = {  # verdict.TimingLimits field -> (lowest, highest)
    "host_ratio": (1.0, 2.0),
    "host_overhead_ms": (0.0, 1.0),
    "batch_latency_ms": (0.0, 50.0),
}
CALL_TIMEOUT_KEYS = {"base_s": (1.0, 600.0), "min_rate": (1e6, 1e15)}
# a task's size: scenarios (each is built, checked and, on a full run, judged) and one scenario's tensors (the
# inputs, outputs and the judge's copies live at once; an H200 holds 141 GB)
MAX_SCENARIOS = 10000
MAX_SCENARIO_BYTES = 128 << 30
# the child's environment: a task may add variables, never these (the loader, Python, the harness's own)
FORBIDDEN_ENV_PREFIXES = ("LD_", "PYTHON", "KSEEK_", "CUDA_", "NVIDIA_", "PATH")


FLOAT32_MAX = 3.4028234663852886e38
# the largest finite value of each float dtype, and how far a normal init may reach: mean + 8 std (a draw beyond
# it has odds of about 1e-15, so a task's largest tensor would hold one about once in a million runs)
FLOAT_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": FLOAT32_MAX,
    "float64": 1.7976931348623157e308,
}
NORMAL_REACH_STD = 8
