"""The harness reads a kernel file as a kernel source or not at all (gpu_harness.build.read_kernel_source): a FIFO is
not waited on, a device is not read without end, a file over the wire's limit is refused, and a file that changes
between the read that names the verdict's source and the build's read gets no verdict of another source's. The
agent's own evaluator guards its workspace's files already (agentloop/kernel_file.py); these are the harness's
CLI, its service and `evaluate` called directly."""

import os
import subprocess
import sys
from pathlib import Path

from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES as WIRE_LIMIT
from gpu_harness import build as build_module
from gpu_harness import evaluate

from .conftest import needs_gxx

evaluate_module = sys.modules["gpu_harness.evaluate"]  # (the package's `evaluate` is the function)
REPO = Path(__file__).resolve().parents[2]
NAIVE = REPO / "tasks" / "matmul_cpu" / "naive.cpp"
KERNEL_SOURCE_MAX_BYTES = build_module.KERNEL_SOURCE_MAX_BYTES


def test_a_fifo_named_as_the_kernel_is_refused_not_waited_on(tmp_path):
    # The CLI refuses it as a bad argument (exit 2) before evaluating; evaluate() itself gives an error verdict
    # (the test below, with /dev/zero)
    fifo = tmp_path / "kernel.cpp"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "gpu_harness", "eval", "matmul_cpu", str(fifo), "--scenarios", "m7_n13_k5"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)  # it waited for ever before
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not a regular file" in done.stdout + done.stderr


def test_a_device_or_an_oversized_file_is_refused_before_it_is_read_whole(tmp_path):
    result = evaluate("matmul_cpu", "/dev/zero", scenarios=["m7_n13_k5"])
    assert result.status == "error" and "/dev/zero is not a regular file" in result.reason
    large = tmp_path / "large.cpp"
    large.write_bytes(NAIVE.read_bytes() + b"//" + b"x" * KERNEL_SOURCE_MAX_BYTES)
    result = evaluate("matmul_cpu", large, scenarios=["m7_n13_k5"])
    assert result.status == "error" and "over the harness's limit of 1,048,576 bytes" in result.reason


def test_the_harnesss_limit_on_a_kernel_source_is_the_wires():
    assert KERNEL_SOURCE_MAX_BYTES == WIRE_LIMIT


@needs_gxx
def test_a_kernel_file_changed_before_its_build_is_not_judged_as_the_source_first_read(tmp_path, monkeypatch):
    kernel = tmp_path / "kernel.cpp"
    kernel.write_bytes(NAIVE.read_bytes())
    real_build = build_module.build

    def build_after_an_edit(path, *args, **kwargs):
        Path(path).write_bytes(NAIVE.read_bytes() + b"\n// edited while evaluated\n")
        return real_build(path, *args, **kwargs)

    monkeypatch.setattr(evaluate_module, "build", build_after_an_edit)
    result = evaluate("matmul_cpu", kernel, scenarios=["m7_n13_k5"])
    assert result.status == "error" and "changed while it was evaluated" in result.reason
    assert result.kernel_source == NAIVE.read_text()  # the verdict names the source it read, and judged none
