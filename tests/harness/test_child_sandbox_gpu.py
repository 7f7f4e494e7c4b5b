"""A GPU task's candidate in a sandbox of its own (gpu_harness/childbox.py), the default where bubblewrap works. The
parent and the child share device memory through CUDA IPC across the sandbox's namespaces: the released softmax
kernel's quick set must come out correct, with timings, from a contained child (passed on an H200, 2026-12-05). The
baselines run in the child too, and some write caches (the second test: passed on an H100 on 2026-12-05, once a
contained child's cache variables named its scratch folder)."""

from pathlib import Path

import pytest

from gpu_harness import childbox, evaluate

pytestmark = [pytest.mark.gpu, pytest.mark.sandbox]
RELEASED = Path(__file__).resolve().parents[2] / "kernels" / "softmax_rows" / "softmax_rows.cu"


def test_a_gpu_tasks_candidate_runs_contained_when_asked(monkeypatch):
    monkeypatch.delenv(childbox.GPU_OPT_OUT, raising=False)
    result = evaluate("softmax_rows", RELEASED, scenarios="quick", baselines=["eager"], timeout_s=600)
    assert result.child_sandbox == childbox.BUBBLEWRAP
    assert result.status == "correct" and result.all_correct, (result.reason, [s.reason for s in result.scenarios])
    assert all(s.time_ms for s in result.scenarios)


RMSNORM = Path(__file__).resolve().parents[2] / "kernels" / "rmsnorm" / "rmsnorm.cu"


def test_a_contained_childs_library_baselines_run(monkeypatch):
    """The baselines run in the child too: torch.compile writes its and Triton's caches, which a contained child
    keeps in its scratch folder (TMPDIR and HOME there, gpu_harness/runner.py). None of them may turn n/a."""
    monkeypatch.delenv(childbox.GPU_OPT_OUT, raising=False)
    asked = ["compile", "functional", "eager"]
    result = evaluate("rmsnorm", RMSNORM, scenarios="quick", baselines=asked, timeout_s=600)
    assert result.child_sandbox == childbox.BUBBLEWRAP
    assert result.status == "correct", (result.reason, [s.reason for s in result.scenarios])
    assert not result.baseline_notes, result.baseline_notes
    for scenario in result.scenarios:
        why = {k: v for k, v in scenario.details.items() if k.endswith("_na")}  # the child's note per baseline
        assert all(scenario.baseline_ms.get(name) for name in asked), (scenario.id, scenario.baseline_ms, why)
