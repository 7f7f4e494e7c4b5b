"""The CPU task through the whole flow: build, child process, judge, timing, result, CLI."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_harness import EvalResult, evaluate
from gpu_harness.build import named_as_given
from gpu_harness.report import render_table

from .conftest import needs_gxx

REPO = Path(__file__).resolve().parents[2]
NAIVE = REPO / "tasks" / "matmul_cpu" / "naive.cpp"
SMALL = ["m7_n13_k5", "m127_n255_k65"]

pytestmark = needs_gxx


@pytest.fixture(scope="module")
def naive_result():
    lines = []
    r = evaluate("matmul_cpu", NAIVE, scenarios="quick", progress=lines.append)
    r.progress_lines = lines
    return r


def test_naive_kernel_is_correct_on_every_quick_scenario(naive_result):
    assert naive_result.status == "correct", render_table(naive_result)
    assert naive_result.all_correct
    assert all(s.time_ms and s.time_ms > 0 for s in naive_result.scenarios)


def test_speedups_against_both_baselines_are_reported(naive_result):
    assert naive_result.baselines == ["numpy", "naive"]
    for name in ("numpy", "naive"):
        g = naive_result.geomean[name]
        assert g["count"] == len(naive_result.scenarios) and g["speedup"] > 0
    # the naive kernel against itself: same code, so within noise of 1
    assert 0.3 < naive_result.speedup_over("naive") < 3.0


def test_each_scenario_shows_an_error_within_the_bound_shown(naive_result):
    # numpy's error sets each seed's bound: the error and bound shown are one run's (verdict.nearer_bound)
    for s in naive_result.scenarios:
        assert s.error is not None and s.tolerance and s.error <= s.tolerance, (s.id, s.error, s.tolerance)


def test_progress_lines_are_reported(naive_result):
    assert any("checking" in line for line in naive_result.progress_lines)
    assert any(line.startswith("[time") for line in naive_result.progress_lines)


def test_result_round_trips_through_json(naive_result):
    d = json.loads(json.dumps(naive_result.to_dict()))
    again = EvalResult.from_dict(d)
    assert again.to_dict() == d
    assert again.all_correct and again.scenarios[0].id == naive_result.scenarios[0].id


def test_table_has_a_row_per_scenario_and_a_summary(naive_result):
    table = render_table(naive_result)
    for s in naive_result.scenarios:
        assert s.id in table
    assert "CORRECT" in table.splitlines()[-1] and "vs numpy" in table.splitlines()[-1]


def test_the_seed_is_fresh_for_each_evaluation():
    a = evaluate("matmul_cpu", NAIVE, scenarios=["m7_n13_k5"])
    b = evaluate("matmul_cpu", NAIVE, scenarios=["m7_n13_k5"])
    assert a.seed != b.seed


def test_unreadable_kernel_is_an_error_not_a_crash(tmp_path):
    r = evaluate("matmul_cpu", tmp_path / "missing.cpp", scenarios=SMALL)
    assert r.status == "error" and "cannot read" in r.reason


def test_compile_error_is_reported_with_the_compiler_message(tmp_path):
    bad = tmp_path / "bad.cpp"
    bad.write_text('extern "C" int kseek_matmul(const float* a) { return undeclared; }\n')
    r = evaluate("matmul_cpu", bad, scenarios=SMALL)
    assert r.status == "error" and "compile failed" in r.reason and "undeclared" in r.reason


def test_unsupported_configuration_makes_the_scenario_incorrect(tmp_path):
    src = tmp_path / "picky.cpp"
    src.write_text(NAIVE.read_text().replace("if (m < 0 ||", "if (m == 7 ||"))
    r = evaluate("matmul_cpu", src, scenarios=SMALL)
    assert r.status == "incorrect"
    bad = {s.id: s for s in r.scenarios}["m7_n13_k5"]
    assert not bad.correct and "not supported" in bad.reason
    assert {s.id: s for s in r.scenarios}["m127_n255_k65"].correct


def test_missing_symbol_is_an_error(tmp_path):
    src = tmp_path / "wrong_name.cpp"
    src.write_text('extern "C" int some_other_name(void) { return 0; }\n')
    r = evaluate("matmul_cpu", src, scenarios=SMALL)
    assert r.status == "error" and "kseek_matmul" in r.reason


def _cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "gpu_harness", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_cli_eval_prints_table_writes_json_and_appends_trace(tmp_path):
    js, trace = tmp_path / "r.json", tmp_path / "trace.jsonl"
    for note in ("first", "second"):
        p = _cli(
            "eval",
            "matmul_cpu",
            str(NAIVE),
            "--scenarios",
            "m7_n13_k5",
            "--json",
            str(js),
            "--trace",
            str(trace),
            "--note",
            note,
        )
        assert p.returncode == 0, p.stdout + p.stderr
    assert "m7_n13_k5" in p.stdout and "CORRECT" in p.stdout
    assert "checking" in p.stderr  # progress goes to stderr
    assert EvalResult.from_dict(json.loads(js.read_text())).all_correct
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert [x["note"] for x in lines] == ["first", "second"]
    assert lines[0]["kernel_sha256"] and lines[0]["kernel_source"] and lines[0]["summary"]
    assert lines[0]["scenarios"][0]["id"] == "m7_n13_k5"


def test_cli_bad_scenario_is_a_clear_error_with_status_2():
    p = _cli("eval", "matmul_cpu", str(NAIVE), "--scenarios", "nope")
    assert p.returncode == 2 and "unknown scenario" in p.stderr and "Traceback" not in p.stderr


def test_cli_compile_reports_imports_for_a_cpu_kernel():
    p = _cli("compile", str(NAIVE))
    assert p.returncode == 0 and "OK" in p.stdout and "imports:" in p.stdout


@needs_gxx
@pytest.mark.parametrize("forge", ["drop_slot", "slot_as_text", "slot_out_of_range"])
def test_a_malformed_outputs_message_is_a_protocol_error_not_a_crash(monkeypatch, forge):
    """The candidate can write to the child's message pipe; whatever arrives there, the harness carries on."""
    from gpu_harness import runner

    real_recv = runner.ChildSession.recv

    def recv(self, timeout_s, waiting_for):
        msg = real_recv(self, timeout_s, waiting_for)
        if msg.get("ev") == "outputs":
            if forge == "drop_slot":
                msg.pop("slot")
            elif forge == "slot_as_text":
                msg["slot"] = "0"
            else:
                msg["slot"] = 99
        return msg

    monkeypatch.setattr(runner.ChildSession, "recv", recv)
    r = evaluate("matmul_cpu", NAIVE, scenarios=["m7_n13_k5"], timeout_s=30)
    assert r.status == "error" and r.reason.startswith("protocol error"), r.reason
    assert not r.all_correct


def test_the_child_warms_only_baselines_whose_medians_are_not_cached_yet(monkeypatch):
    """A baseline's warm-up call (Task.baselines_to_warm) is for its first timing: in a process that evaluates
    again (the service), a scenario whose median is cached gets none, and neither does an evaluation without
    timing."""
    import importlib

    from gpu_harness import get_task
    from gpu_harness.runner import ChildSession

    jobs = []
    start = ChildSession.start

    def recording_start(self, job):
        jobs.append(job)
        start(self, job)

    monkeypatch.setattr(ChildSession, "start", recording_start)
    monkeypatch.setattr(get_task("matmul_cpu"), "baselines_to_warm", ("numpy",))
    # the cache is in the module gpu_harness.evaluate (the package exports a function of that name)
    monkeypatch.setattr(importlib.import_module("gpu_harness.evaluate"), "_BASELINE_CACHE", {})
    warm = lambda job: {sc["id"]: sc["warm"] for sc in job["scenarios"]}  # noqa: E731

    assert evaluate("matmul_cpu", NAIVE, scenarios=SMALL[:1]).status == "correct"
    assert warm(jobs[-1]) == {SMALL[0]: ["numpy"]}
    assert evaluate("matmul_cpu", NAIVE, scenarios=SMALL).status == "correct"
    assert warm(jobs[-1]) == {SMALL[0]: [], SMALL[1]: ["numpy"]}  # the first one's median is cached
    assert evaluate("matmul_cpu", NAIVE, scenarios=SMALL, baseline_cache=False).status == "correct"
    assert warm(jobs[-1]) == {SMALL[0]: ["numpy"], SMALL[1]: ["numpy"]}
    assert evaluate("matmul_cpu", NAIVE, scenarios=SMALL, timing=False).status == "correct"
    assert warm(jobs[-1]) == {SMALL[0]: [], SMALL[1]: []}


def test_a_compile_error_names_the_file_the_user_gave_not_the_harness_copy(tmp_path):
    # The harness compiles a copy named kernel.cpp; the error said `kernel.cpp:1:...` of a file called bad.cpp, a
    # name the user never wrote (new-user audit finding 3).
    bad = tmp_path / "bad.cpp"
    bad.write_text('extern "C" int kseek_matmul(const float* a) {\n  return undeclared;\n}\n')
    r = evaluate("matmul_cpu", bad, scenarios=SMALL)
    assert r.reason.startswith("compile failed: bad.cpp:2:") and "kernel.cpp" not in r.reason


def test_the_compilers_log_is_renamed_only_where_it_names_the_copy():
    log = "kernel.cu(12): error: x\nIn file included from kernel.cpp:3:\nmy_kernel.cu:4: note\n/a/kernel.cu: y"
    assert named_as_given(log, "kernel.cu", "relu.cu").splitlines() == [
        "relu.cu(12): error: x",
        "In file included from kernel.cpp:3:",
        "my_kernel.cu:4: note",
        "/a/kernel.cu: y",
    ]
