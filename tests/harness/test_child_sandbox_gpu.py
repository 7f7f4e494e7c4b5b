"""A GPU task's candidate in a sandbox of its own (gpu_harness/childbox.py, `KSEEK_CHILD_SANDBOX_GPU=1`): not the
default until this passes on a GPU, since the parent and the child share device memory through CUDA IPC across
the sandbox's namespaces. The released softmax kernel's quick set must come out correct, with timings, from a
contained child."""

from pathlib import Path

import pytest

from gpu_harness import childbox, evaluate

pytestmark = [pytest.mark.gpu, pytest.mark.sandbox]
RELEASED = Path(__file__).resolve().parents[2] / "kernels" / "softmax_rows" / "softmax_rows.cu"


def test_a_gpu_tasks_candidate_runs_contained_when_asked(monkeypatch):
    monkeypatch.setenv(childbox.GPU_OPT_IN, "1")
    result = evaluate("softmax_rows", RELEASED, scenarios="quick", baselines=["eager"], timeout_s=600)
    assert result.child_sandbox == childbox.BUBBLEWRAP
    assert result.status == "correct" and result.all_correct, (result.reason, [s.reason for s in result.scenarios])
    assert all(s.time_ms for s in result.scenarios)
