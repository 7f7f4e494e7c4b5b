"""`python -m gpu_harness eval` as docs/harness.md ("Use") promises it to someone who scripts it: a bad argument
(a kernel that is not a file, an output file that cannot be written, a baseline the task does not have) exits 2
with a message, before the evaluation runs, never a traceback after it; a scenario named twice is one scenario."""

import dataclasses
import json
from pathlib import Path

import pytest

from gpu_harness import EvalResult, ScenarioOutcome, evaluate
from gpu_harness.cli import main
from gpu_harness.report import timed_speedups_text

from .conftest import needs_gxx

REPO = Path(__file__).resolve().parents[2]
NAIVE = str(REPO / "tasks" / "matmul_cpu" / "naive.cpp")
ONE = ["--scenarios", "m7_n13_k5", "--no-timing"]


def _eval(capsys, *args):
    code = main(["eval", "matmul_cpu", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "flag, path, says",
    [
        ("--json", "no/such/folder/r.json", "--json no/such/folder/r.json: no folder no/such/folder"),
        ("--trace", ".", "--trace .: a folder, not a file"),
    ],
)
def test_an_output_file_that_cannot_be_written_is_a_bad_argument_before_the_evaluation(
    capsys, monkeypatch, tmp_path, flag, path, says
):
    monkeypatch.chdir(tmp_path)
    code, out, err = _eval(capsys, NAIVE, *ONE, flag, path)
    assert code == 2 and says in err and "Traceback" not in err
    assert "checking" not in err and out == ""  # nothing was evaluated


def test_a_kernel_path_that_is_a_folder_is_a_bad_argument(capsys, tmp_path):
    code, out, err = _eval(capsys, str(tmp_path), *ONE)
    assert code == 2 and f"error: {tmp_path} is not a regular file" in err and out == ""


@needs_gxx
def test_a_scenario_named_twice_is_judged_once(capsys, tmp_path):
    js = tmp_path / "r.json"
    code, out, err = _eval(capsys, NAIVE, "--scenarios", "m7_n13_k5,m7_n13_k5", "--no-timing", "--json", str(js))
    assert code == 0, out + err
    assert [s["id"] for s in json.loads(js.read_text())["scenarios"]] == ["m7_n13_k5"]
    r = evaluate("matmul_cpu", NAIVE, scenarios=["m7_n13_k5", "m7_n13_k5"], timing=False)
    assert r.status == "correct" and len(r.scenarios) == 1


@pytest.mark.parametrize(
    "baselines, says",
    [
        ("numpy,nmupy", "unknown baseline(s) for task matmul_cpu: nmupy (known: numpy, naive)"),
        ("best_library", "unknown baseline(s) for task matmul_cpu: best_library (it marks no library)"),
    ],
)
def test_a_baseline_the_task_does_not_have_is_a_bad_argument(capsys, baselines, says):
    code, out, err = _eval(capsys, NAIVE, *ONE, "--baselines", baselines)
    assert code == 2 and says in err and out == ""


def _verdict_doc() -> str:
    """docs/harness.md's reference of the verdict JSON: from its heading to the next paragraph that is not it."""
    text = (REPO / "docs" / "harness.md").read_text()
    start = text.index("**The verdict JSON**")
    return text[start : text.index("\nEnvironment: ", start)]


@pytest.mark.parametrize("kind", [EvalResult, ScenarioOutcome])
def test_every_field_of_the_verdict_json_is_documented(kind):
    """A tool that reads verdicts learns their fields from the docs: each field `to_dict()` writes is named there."""
    doc = _verdict_doc()
    missing = [f.name for f in dataclasses.fields(kind) if f"`{f.name}`" not in doc]
    assert not missing, f"docs/harness.md, 'The verdict JSON', does not name: {missing}"


@needs_gxx
def test_a_trace_line_is_the_verdict_with_the_fields_the_docs_name(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    code, _, _ = _eval(capsys, NAIVE, *ONE, "--trace", str(trace))
    line = json.loads(trace.read_text())
    added = set(line) - set(EvalResult.from_dict(line).to_dict())
    assert code == 0 and added == {"kind", "note", "summary"} and line["kind"] == "evaluation" and line["note"] == ""
    use = (REPO / "docs" / "harness.md").read_text()
    assert all(f"`{name}`" in use for name in ("note", "summary")) and '`kind: "evaluation"`' in use


def test_a_progress_line_writes_a_speedup_within_the_noise_as_the_table_does():
    """The "[time i/n]" line on stderr, like the table's cell, never shows a speedup whose interval holds 1.0 as a
    number (x1.09 read as faster when the table says "no diff")."""
    s = ScenarioOutcome("m7_n13_k5", {}, correct=True, time_ms=1.0, time_ci_ms=[0.9, 1.1])
    s.baseline_ms = {"numpy": 0.5, "naive": 1.09}
    s.baseline_ci_ms = {"numpy": [0.48, 0.52], "naive": [0.95, 1.2]}
    s.speedup = {"numpy": 0.5, "naive": 1.09}
    assert timed_speedups_text(s, ["numpy", "naive"]) == ", x0.50 vs numpy, no diff vs naive"


@needs_gxx
def test_compile_says_each_kernels_outcome_and_exits_1_when_one_fails(capsys, tmp_path):
    """docs/harness.md, "Use": a path it cannot read, or a suffix it cannot tell, is that kernel's failure; the
    others are still built."""
    code = main(["compile", str(tmp_path / "missing.cpp"), str(tmp_path / "notes.txt"), NAIVE])
    out = capsys.readouterr().out
    assert code == 1 and f"{tmp_path / 'missing.cpp'}: FAILED: cannot read kernel source" in out
    assert "cannot tell the language" in out and f"{NAIVE}: OK" in out
