"""A small CPU suite for tests: task folders of one elementwise problem (out = x * scale + y) and the manifest
(suite.json) `python -m gpu_harness task import-kernelbench` would write for them, so that the suite pages, the
suite study and its scoreboard run on real task folders without importing KernelBench (which needs torch and
minutes). Its `eager` baseline walks the elements in Python: a C++ kernel is about 100x faster, a kernel that
spins (SLOW_KERNEL) over 10x slower; neither is close to the thresholds fast_p reports (1, 1.5 and 2x), even at
the low end of a speed-up's interval on a loaded 2-core machine. The shapes are large enough for that: at 32x64
and 64x64 the C++ kernel's fixed cost per call (~20 us) held it to ~13x, and on a loaded CI machine the low end
of one run's interval once fell under 2x."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

TASK_TOML = """description = "out = x * scale + y, float32 (problem {index} of a test suite)"
target = "cpu"

[kernel]
symbol = "kseek_scale_add"
starting = "kernel.cpp"

[[args]]
name = "x"
kind = "input"
dtype = "float32"
shape = ["rows", "cols"]
init = {{ dist = "normal", mean = 0.0, std = 1.0 }}

[[args]]
name = "y"
kind = "input"
dtype = "float32"
shape = ["rows", "cols"]
init = {{ dist = "uniform", low = -1.0, high = 1.0 }}

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
function = "reference"

[scenarios]
id = "r{{rows}}_c{{cols}}"
list = [{{ rows = 128, cols = 256, scale = 0.5 }}, {{ rows = 256, cols = 256, scale = 2.0 }}]
quick = ["r128_c256"]

[formulas]
flops = "2*rows*cols"
bytes = "3*4*rows*cols"

[tolerance]
rel_l2 = 1e-5

[baselines]
default = ["eager"]
eager = {{ function = "eager" }}

[goal]
baseline = "eager"
speedup = 1.0
"""

REFERENCE = '''"""A test suite's problem: the reference, and an `eager` baseline that walks the elements in Python."""


def reference(x, y, scale, rows, cols):
    return x * scale + y


def eager(x, y, out, scale, rows, cols):
    flat_x, flat_y, flat_out = x.reshape(-1), y.reshape(-1), out.reshape(-1)
    for i in range(flat_out.size):
        flat_out[i] = flat_x[i] * scale + flat_y[i]
'''

STUB_KERNEL = """extern "C" int kseek_scale_add(const float* x, const float* y, float* out, float scale, int rows, int cols) {
    return 1;  // not supported: the agent writes the kernel
}
"""

FAST_KERNEL = """extern "C" int kseek_scale_add(const float* x, const float* y, float* out, float scale, int rows, int cols) {
    if (rows < 0 || cols < 0) return 1;
    const long n = (long)rows * cols;
    for (long i = 0; i < n; ++i) out[i] = x[i] * scale + y[i];
    return 0;
}
"""
# Correct, and over 10x slower than eager (~80 ms a call against ~5-9 ms): it spins before computing.
SLOW_KERNEL = FAST_KERNEL.replace(
    "    const long n",
    "    volatile float spin = 0.0f;\n    for (long r = 0; r < 30000000; ++r) spin = spin + 1.0f;\n    const long n",
)
WRONG_KERNEL = FAST_KERNEL.replace("+ y[i]", "- y[i]")


def problem_name(index: int) -> str:
    return f"suite_p{index:02d}"


def write_problem(root: Path, index: int) -> Path:
    """The task folder of problem `index` under `root`."""
    folder = root / problem_name(index)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(TASK_TOML.format(index=index))
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "kernel.cpp").write_text(STUB_KERNEL)
    return folder


def manifest(imported: int, *, refused: int = 0, check_failed: int = 0, **top) -> dict:
    """suite.json for `imported` problems (suite_p00...) and the given numbers of refused and failed ones."""
    problems = []
    for index in range(imported):
        file = f"{index + 1}_ScaleAdd.py"
        problems.append(
            {
                "file": file,
                "sha256": hashlib.sha256(file.encode()).hexdigest(),
                "name": problem_name(index),
                "outcome": "imported",
                "scenarios": ["main", "double"],
                "check": "r32_c64 (cpu): outputs of the right shape and dtype",
            }
        )
    for index in range(refused):
        problems.append(
            {
                "file": f"{imported + index + 1}_HubModel.py",
                "sha256": "0" * 64,
                "name": f"kb_hub_{index}",
                "outcome": "refused",
                "reason": "downloads its model from a hub (from_pretrained)",
            }
        )
    for index in range(check_failed):
        problems.append(
            {
                "file": f"{imported + refused + index + 1}_Broken.py",
                "sha256": "1" * 64,
                "name": f"kb_broken_{index}",
                "outcome": "check failed",
                "reason": "task check exited 2",
            }
        )
    return {
        "suite": "level_test",
        "written_by": "python -m gpu_harness task import-kernelbench",
        **top,
        "problems": problems,
    }


def write_suite(root: Path, imported: int, **kwargs) -> Path:
    """A suite folder: `imported` task folders and its suite.json."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(imported):
        write_problem(root, index)
    (root / "suite.json").write_text(json.dumps(manifest(imported, **kwargs), indent=1))
    return root
