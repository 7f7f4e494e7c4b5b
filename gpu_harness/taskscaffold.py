"""`python -m gpu_harness task new NAME`: a commented task folder that `task check` accepts as it is.

The example it writes is a small elementwise operation (out = x * scale + y) with a stub starting kernel that
says "not supported" for every shape: the author replaces the operation, keeps the structure. docs/tasks.md
explains each field.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from .taskspec import NAME_RE, REFERENCE_FILE, SPEC_FILE, TaskSpec

STUB_STEM = "kernel"  # the stub starting kernel: kernel.cpp (cpu) or kernel.cu (cuda-sm90)

TASK_TOML = Template("""\
# $name: a task for KernelSeek (docs/tasks.md explains every field). `python -m gpu_harness task check <this
# folder>` validates it; `python -m gpu_harness eval <this folder> kernel.cpp` judges a kernel on it.
description = "out[r, c] = x[r, c] * scale + y[r, c], float32, row-major"
target = "$target"  # "cpu": a C++ kernel built with g++; "cuda-sm90": a .cu kernel built with nvcc for Hopper

[kernel]
symbol = "kseek_$name"  # the exported C function; its declaration is generated from [[args]] below
# abi_text = '''extern "C" int kseek_$name(...);'''  # optional: the declaration agents see, written by hand
starting = "$stub"  # optional: without it the agent starts from a stub that says "not supported"

# The kernel's arguments, in order. The kernel returns 0 on success, non-zero for a shape it does not support.
# kind: "input" (made from the judge's seed), "output" (poisoned with NaN before each call, then judged),
# "scalar" (passed by value; value is a formula of the scenario's symbols) or, on cuda-sm90, "stream" (a
# cudaStream_t; the harness passes 0, the default stream).
# dtype: float32, float64, int8, uint8, int32, int64 (float16, bfloat16: cuda-sm90 only); or chosen by a
# scenario symbol, {by = "prec", half = <a dtype>, full = <a dtype>}. A scalar's value may be chosen the same
# way: value = {by = "prec", half = 0, full = 1}.
# shape: one scenario symbol (or a number) per dimension.
# init: {dist = "normal", mean, std} | {dist = "uniform", low, high} | {dist = "integers", low, high} (high
# excluded) | {function = "make_x"}: reference.py's make_x(rng, shape, params) returns the array (rng: a numpy
# Generator for cpu, a torch.Generator on the judge's device for cuda-sm90). With native set to true, normal
# and uniform values are drawn in the tensor's own dtype rather than in float32 rounded to it.
[[args]]
name = "x"
kind = "input"
dtype = "float32"
shape = ["rows", "cols"]
init = { dist = "normal", mean = 0.0, std = 1.0 }

[[args]]
name = "y"
kind = "input"
dtype = "float32"
shape = ["rows", "cols"]
init = { dist = "uniform", low = -1.0, high = 1.0 }

[[args]]
name = "out"
kind = "output"
dtype = "float32"
shape = ["rows", "cols"]

[[args]]
name = "scale"
kind = "scalar"
dtype = "float32"
value = "scale"

[[args]]
name = "rows"
kind = "scalar"
dtype = "int32"
value = "rows"

[[args]]
name = "cols"
kind = "scalar"
dtype = "int32"
value = "cols"

[reference]
function = "reference"  # in reference.py: gets float64 copies of the inputs, returns the outputs
# precision = "float32"  # float32 copies instead (TF32 off), where float64 is too slow on the GPU

# Scenarios: an explicit list and/or products of axes. `id` makes each one's stable id from its symbols;
# `quick` is the subset an agent checks often (ids that must exist).
[scenarios]
id = "r{rows}_c{cols}_s{scale}"
list = [{ rows = 1, cols = 1, scale = 2.0 }]
quick = ["r1_c1_s2.0", "r7_c33_s0.5", "r1000_c257_s0.5"]

[[scenarios.product]]
rows = [7, 128, 1000]
cols = [33, 257, 1024]
scale = [0.5]

# Formulas of the scenario's symbols (numbers, symbols, + - * / // ** ( ) min max): the useful operations of
# one call, and its compulsory memory traffic (default: every tensor read or written once).
[formulas]
flops = "2*rows*cols"
bytes = "3*4*rows*cols"

# The tolerance rule on each output's relative L2 error: here "factor x the $baseline baseline's own error on the
# same inputs + floor"; or rel_l2 = 1e-5 (a fixed bound), or atol/rtol (element by element).
[tolerance]
baseline = "$baseline"
factor = 2.0
floor = 1e-6

# Baselines: functions of reference.py (called like the kernel: every argument by name, writing the outputs),
# or compiled kernels, e.g. naive = { kernel = "naive$suffix" } once a correct simple kernel exists.
[baselines]
default = ["$baseline"]
$baseline = { function = "${baseline}_scale_add" }

[goal]
baseline = "$baseline"
speedup = 1.0

# Optional, within bounds the harness keeps (docs/tasks.md): [timing] batch_ms = ..., [host_clock]
# host_ratio = ..., [call_timeout] base_s = ..., [child.env] NAME = "value".
""")

CUDA_REFERENCE_PY = Template('''\
"""$name: the reference and the baselines, as plain functions on torch tensors (the cuda-sm90 target)."""


def reference(x, y, scale, rows, cols):
    """What the kernel must compute, on float64 copies of the inputs (on the judge's device); returns the
    output (or a tuple/dict of outputs, in the ABI's order)."""
    return x * scale + y


def torch_scale_add(x, y, out, scale, rows, cols):
    """A baseline: called like the kernel (every argument by name, inputs in their own dtype on the GPU),
    writing `out` in place."""
    out.copy_(x * scale + y)
''')

REFERENCE_PY = Template('''\
"""$name: the reference and the baselines, as plain functions on numpy arrays (the cpu target)."""

import numpy as np


def reference(x, y, scale, rows, cols):
    """What the kernel must compute, on float64 copies of the inputs; returns the output (or a tuple/dict of
    outputs, in the ABI's order)."""
    return x * scale + y


def numpy_scale_add(x, y, out, scale, rows, cols):
    """A baseline: called like the kernel (every argument by name), writing `out` in place."""
    np.multiply(x, np.float32(scale), out=out)
    out += y
''')


def stub_kernel(spec: TaskSpec) -> str:
    """A starting kernel that compiles and declines every shape (returns 1: "not supported")."""
    unused = "".join(f"    (void){a.name};\n" for a in spec.args)
    headers = "#include <cstdint>\n"
    if spec.target.language == "cuda":  # the ABI's __half and __nv_bfloat16
        headers += "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
    return (
        f'// {spec.name} starting kernel: a stub that says "not supported" (returns 1) for every shape, so\n'
        "// every scenario fails until it is written. Return 0 once the outputs are computed.\n"
        f"{headers}\n"
        f"{spec.declaration()[:-1]} {{\n{unused}    return 1;  // not supported\n}}\n"
    )


def scaffold(name: str, parent: str | Path = ".", target: str = "cpu") -> Path:
    """Write the folder `parent/name` for `target`; raises ValueError for a bad name or target, or an existing
    folder."""
    from .taskspec import TARGETS, load_spec

    if not NAME_RE.match(name):
        raise ValueError(f"task name {name!r}: use lowercase letters, digits and _ (it names a C symbol too)")
    if target not in TARGETS:
        raise ValueError(f"target {target!r}: known targets are {', '.join(TARGETS)}")
    folder = Path(parent) / name
    if folder.exists():
        raise ValueError(f"{folder} already exists")
    suffix = TARGETS[target].source_suffix
    stub = STUB_STEM + suffix
    torch_arrays = TARGETS[target].arrays == "torch"
    folder.mkdir(parents=True)
    spec_text = TASK_TOML.substitute(
        name=name, stub=stub, target=target, suffix=suffix, baseline="torch" if torch_arrays else "numpy"
    )
    (folder / SPEC_FILE).write_text(spec_text)
    (folder / REFERENCE_FILE).write_text((CUDA_REFERENCE_PY if torch_arrays else REFERENCE_PY).substitute(name=name))
    (folder / stub).write_text("")  # the spec names it; its text comes from the spec's own ABI
    (folder / stub).write_text(stub_kernel(load_spec(folder)))
    return folder
