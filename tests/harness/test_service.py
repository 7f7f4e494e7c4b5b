"""The harness as a long-lived process (gpu_harness/service.py) and the child booted ahead for it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness import evaluate
from gpu_harness.report import render_table

from .conftest import needs_gxx

REPO = Path(__file__).resolve().parents[2]
NAIVE = REPO / "tasks" / "matmul_cpu" / "naive.cpp"
SMALL = ["m7_n13_k5"]

pytestmark = needs_gxx


def _evaluate_module():
    import importlib

    return importlib.import_module("gpu_harness.evaluate")  # the package's `evaluate` name is the function


def test_each_evaluation_gets_a_fresh_child_booted_ahead_and_spares_are_stopped():
    ev = _evaluate_module()
    first = evaluate("matmul_cpu", NAIVE, scenarios=SMALL, spare_child=True)
    assert first.status == "correct", render_table(first)
    (spare,) = ev._SPARES.values()
    assert spare.alive() and not spare.started
    second = evaluate("matmul_cpu", NAIVE, scenarios=SMALL, spare_child=True)
    assert second.status == "correct", render_table(second)
    assert spare.started and not spare.alive()  # the second evaluation ran in it, then it ended
    (next_spare,) = ev._SPARES.values()
    assert next_spare is not spare and next_spare.alive()
    ev.close_spares()
    assert not ev._SPARES and not next_spare.alive()


def test_a_spare_that_died_is_replaced_not_used():
    ev = _evaluate_module()
    evaluate("matmul_cpu", NAIVE, scenarios=SMALL, spare_child=True)
    (spare,) = ev._SPARES.values()
    spare.proc.kill()
    spare.proc.wait()
    again = evaluate("matmul_cpu", NAIVE, scenarios=SMALL, spare_child=True)
    assert again.status == "correct", render_table(again)
    ev.close_spares()


def _service():
    return subprocess.Popen(
        [sys.executable, "-m", "gpu_harness.service"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answers(proc, rid):
    """Every answer to request `rid`, up to its result or error."""
    got = []
    for line in proc.stdout:
        msg = json.loads(line)  # every line on stdout is protocol
        if msg.get("id") == rid:
            got.append(msg)
            if "result" in msg or "error" in msg:
                return got
    raise AssertionError(f"the service ended without answering {rid}: {proc.stderr.read()[-2000:]}")


def test_service_answers_bad_requests_with_errors_and_keeps_serving():
    proc = _service()
    try:
        for line in (
            "this is not json",
            json.dumps([1, 2]),
            json.dumps({"id": 1, "task": "matmul_cpu"}),
            json.dumps({"id": 2, "task": "no_such_task", "kernel": str(NAIVE)}),
            json.dumps({"id": 3, "task": "matmul_cpu", "kernel": str(NAIVE), "scenarios": ["nope"]}),
            json.dumps({"id": 4, "task": "matmul_cpu", "kernel": str(NAIVE), "timeout_s": -1}),
        ):
            proc.stdin.write(line + "\n")
        proc.stdin.flush()
        errors = [_answers(proc, rid)[-1] for rid in (None, None, 1, 2, 3, 4)]
        assert all("error" in e for e in errors)
        assert "unreadable request" in errors[0]["error"] and "JSON object" in errors[1]["error"]
        assert "'kernel'" in errors[2]["error"] and "no_such_task" in errors[3]["error"]
        assert "nope" in errors[4]["error"] and "timeout_s" in errors[5]["error"]
        proc.stdin.write(json.dumps({"id": 5, "task": "matmul_cpu", "kernel": str(NAIVE), "scenarios": SMALL}) + "\n")
        proc.stdin.flush()
        answers = _answers(proc, 5)
        assert any("progress" in a for a in answers)
        assert answers[-1]["result"]["status"] == "correct"
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0  # stdin closed: it ends, and its spare child with it
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("extra", [{"baselines": ["naive"]}, {"seed": 12345}])
def test_service_passes_baselines_and_seed_on(extra):
    proc = _service()
    try:
        proc.stdin.write(
            json.dumps({"id": "a", "task": "matmul_cpu", "kernel": str(NAIVE), "scenarios": SMALL, **extra}) + "\n"
        )
        proc.stdin.flush()
        result = _answers(proc, "a")[-1]["result"]
        assert result["status"] == "correct"
        if "baselines" in extra:
            assert result["baselines"] == ["naive"]
        else:
            assert result["seed"] == 12345
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()


def test_a_wrong_guess_that_candidates_cannot_run_here_still_gets_a_child(monkeypatch):
    from gpu_harness import get_task

    monkeypatch.setattr(get_task("matmul_cpu"), "may_run_here", lambda: False)
    r = evaluate("matmul_cpu", NAIVE, scenarios=SMALL)
    assert r.status == "correct", render_table(r)


def test_timing_stops_early_only_when_every_implementation_is_settled():
    from gpu_harness.child import _settled

    cmd = {"early_min": 5, "ci_rel": 0.005}
    tight, noisy = [1.0, 1.001, 0.999, 1.0, 1.0], [1.0, 1.2, 0.8, 1.1, 0.9]
    assert _settled([tight, tight], cmd)
    assert not _settled([tight, noisy], cmd)  # a baseline still moving keeps everyone going
    assert not _settled([tight], {"early_min": None, "ci_rel": 0.005})  # early stopping switched off
