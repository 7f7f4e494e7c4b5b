"""The KernelBench-format examples (examples/kernelbench/: a problem file and a correct starting kernel each)
import as tasks, and each kernel defines the declaration the import generates and builds under the harness's
checks. On the H200 they run end to end: docs/benchmarks.md, "Folder tasks on the H200" (its
KernelBench imports)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness.build import build
from gpu_harness.taskspec import load_spec

from .conftest import needs_nvcc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernelbench"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py"))


def squashed(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("( ", "(").replace(" )", ")")


def test_there_are_three_examples_each_with_a_kernel():
    assert NAMES == ["linear_gelu", "relu", "sum_dim"]
    assert all((EXAMPLES / f"{n}.cu").is_file() for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_an_example_imports_and_its_kernel_defines_the_generated_declaration(name, tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "gpu_harness", "task", "import-kernelbench", str(EXAMPLES / f"{name}.py"),
         "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    spec = load_spec(tmp_path / name)
    assert spec.target.name == "cuda-sm90" and [s.id.split("_")[0] for s in spec.scenarios][0] == "main"
    declaration = squashed(spec.abi()).removesuffix(";")
    assert declaration in squashed((EXAMPLES / f"{name}.cu").read_text()), declaration


@needs_nvcc
@pytest.mark.parametrize("name", NAMES)
def test_an_examples_kernel_builds_under_the_harness_checks(name):
    b = build(EXAMPLES / f"{name}.cu", "cuda")
    assert b.ok, b.reason
