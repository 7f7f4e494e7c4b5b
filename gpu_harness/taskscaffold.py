"""`python -m gpu_harness task new NAME`: a commented task folder that `task check` accepts as it is.

The example it writes is a small elementwise operation (out = x * scale + y) with a stub starting kernel that
says "not supported" for every shape: the author replaces the operation, keeps the structure. docs/tasks.md
explains each field.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from .taskspec import NAME_RE, REFERENCE_FILE, SPEC_FILE, TaskSpec

STUB_FILE = "kernel.cpp"

TASK_TOML = Template("""\
# $name: a task for KernelSeek (docs/tasks.md explains every field). `python -m gpu_harness task check <this
# folder>` validates it; `python -m gpu_harness eval <this folder> kernel.cpp` judges a kernel on it.
description = "out[r, c] = x[r, c] * scale + y[r, c], float32, row-major"
target = "cpu"  # "cpu": a C++ kernel compiled with g++ (cuda-sm90 is declared, not run by the generic task yet)

[kernel]
symbol = "kseek_$name"  # the exported C function; its declaration is generated from [[args]] below
starting = "$stub"  # optional: without it the agent starts from a stub that says "not supported"

# The kernel's arguments, in order. The kernel returns 0 on success, non-zero for a shape it does not support.
# kind: "input" (made from the judge's seed), "output" (poisoned with NaN before each call, then judged) or
# "scalar" (passed by value; value is a formula of the scenario's symbols).
# dtype: float32, float64, int8, uint8, int32, int64 (float16, bfloat16: cuda-sm90 only).
# shape: one scenario symbol (or a number) per dimension.
# init: {dist = "normal", mean, std} | {dist = "uniform", low, high} | {dist = "integers", low, high} (high
# excluded) | {function = "make_x"}: reference.py's make_x(rng, shape, params) returns the array.
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

# The tolerance rule on each output's relative L2 error: here "factor x the numpy baseline's own error on the
# same inputs + floor"; or rel_l2 = 1e-5 (a fixed bound), or atol/rtol (element by element).
[tolerance]
baseline = "numpy"
factor = 2.0
floor = 1e-6

# Baselines: functions of reference.py (called like the kernel: every argument by name, writing the outputs),
# or compiled kernels, e.g. naive = { kernel = "naive.cpp" } once a correct simple kernel exists.
[baselines]
default = ["numpy"]
numpy = { function = "numpy_scale_add" }

[goal]
baseline = "numpy"
speedup = 1.0

# Optional, within bounds the harness keeps (docs/tasks.md): [timing] batch_ms = ..., [host_clock]
# host_ratio = ..., [call_timeout] base_s = ..., [child.env] NAME = "value".
""")

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
    return (
        f'// {spec.name} starting kernel: a stub that says "not supported" (returns 1) for every shape, so\n'
        "// every scenario fails until it is written. Return 0 once the outputs are computed.\n"
        "#include <cstdint>\n\n"
        f"{spec.abi()[:-1]} {{\n{unused}    return 1;  // not supported\n}}\n"
    )


def scaffold(name: str, parent: str | Path = ".") -> Path:
    """Write the folder `parent/name`; raises ValueError for a bad name or an existing folder."""
    if not NAME_RE.match(name):
        raise ValueError(f"task name {name!r}: use lowercase letters, digits and _ (it names a C symbol too)")
    folder = Path(parent) / name
    if folder.exists():
        raise ValueError(f"{folder} already exists")
    folder.mkdir(parents=True)
    (folder / SPEC_FILE).write_text(TASK_TOML.substitute(name=name, stub=STUB_FILE))
    (folder / REFERENCE_FILE).write_text(REFERENCE_PY.substitute(name=name))
    from .taskspec import load_spec

    (folder / STUB_FILE).write_text("")  # the spec names it; its text comes from the spec's own ABI
    (folder / STUB_FILE).write_text(stub_kernel(load_spec(folder)))
    return folder
