"""The verdict stored once (issue 37, item 5): an evaluation keeps the harness's verdict as the harness wrote it,
under its own names (device_name, each scenario's speedup), less its kernel's source and any malformed field; and
the evidence view takes a scenario's rates, GB/s and TFLOP/s alike, from one source."""

import html as html_lib

import pytest
from django.urls import reverse

from gpu_harness import figures
from gpu_harness.result import EvalResult, ScenarioOutcome
from runs.models import Evaluation
from runs.services import evaluation_record, kernel_record
from runs.services.kernels import NOT_STORED
from tests.dashboard.helpers import make_user
from tests.dashboard.test_evidence_memory_bound import _table
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def harness_verdict() -> dict:
    """A verdict as the harness writes it (EvalResult.to_dict()), every field filled in the way it fills them."""
    timed = ScenarioOutcome(
        id="n256",
        params={"n": 256},
        correct=True,
        error=1.5e-7,
        time_ms=2.0,
        tflops=0.0168,
        speedup={"naive": 3.0, "numpy": None},
        spread_ms=0.02,
        repeats=30,
        tolerance=1e-4,
        baseline_ms={"naive": 6.0},
        host_ms=2.1,
        bytes=786432.0,
        time_ci_ms=[1.95, 2.05],
        baseline_ci_ms={"naive": [5.9, 6.1]},
        details={"inproc_ms": 2.0, "numpy_na": "numpy is not installed"},
    )
    untimed = ScenarioOutcome(id="n512", params={"n": 512}, correct=False, error=0.4, reason="max error 0.4")
    return EvalResult(
        task="matmul_cpu",
        kernel_sha256="ab" * 32,
        kernel_source="// the kernel\n",
        status="incorrect",
        reason="1 of 2 scenarios is wrong",
        host="gpu-node-1",
        device_name="NVIDIA H200",
        scenarios=[timed, untimed],
        geomean={"naive": {"speedup": 3.0, "count": 1}, "numpy": {"speedup": None, "count": 0}},
        started_at="2026-12-04T10:00:00+00:00",
        finished_at="2026-12-04T10:00:09+00:00",
        wall_s=9.2,
        kernel_path="/work/kernel.cpp",
        seed=1234,
        baselines=["naive", "numpy"],
        baseline_notes={"numpy": "numpy is not installed"},
        build={"cache_hit": True, "log": "", "compile_s": 0.8},
        geomean_tflops=0.0168,
        phases={"build_s": 0.8, "timing_s": 4.1},
        reference="float64 numpy",
        peaks={"peak_tflops": 750.0, "peak_gbps": 4000.0},
        host_load={"load_1m": 0.5, "cores": 16},
    ).to_dict()


def test_the_stored_verdict_is_the_harnesss_dict_under_its_own_names_less_the_kernels_source():
    verdict = harness_verdict()
    run = make_run(task=make_task())
    kernel = kernel_record(source=verdict["kernel_source"], run=run, language="cpp")
    evaluation = evaluation_record(kernel=kernel, run=run, result=verdict)
    stored = Evaluation.objects.get(pk=evaluation.pk).verdict
    assert stored == {name: value for name, value in verdict.items() if name not in NOT_STORED}
    assert NOT_STORED == {"kernel_source"} and kernel.source == verdict["kernel_source"]  # the source: its kernel's
    assert stored["device_name"] == "NVIDIA H200" and stored["scenarios"][0]["speedup"] == {"naive": 3.0, "numpy": None}
    assert "gpu_name" not in stored and "speedups" not in stored["scenarios"][0]
    # Its index, which the lists read instead of it: each scenario's correctness, and so the same standing.
    index = Evaluation.objects.get(pk=evaluation.pk)
    assert index.scenarios_correct == {s["id"]: s["correct"] for s in verdict["scenarios"]}
    light = index.standing_verdict(stored["geomean"])
    for baseline in ("naive", "numpy"):
        assert figures.verified_speedup(light, baseline) == figures.verified_speedup(stored, baseline)
    assert figures.standing(light, ["m512", "m1024"]) == figures.standing(stored, ["m512", "m1024"])


def test_a_malformed_field_is_dropped_and_never_stored():
    verdict = harness_verdict()
    verdict |= {
        "device_name": 7,
        "seed": "twelve",
        "peaks": {"peak_tflops": -1, "peak_gbps": 4000},
        "host_load": {"load_1m": "high", "cores": 16},
        "forged": "not a field of the harness",
    }
    timed = verdict["scenarios"][0]
    timed |= {
        "time_ci_ms": [2.5, 1.0],
        "baseline_ci_ms": {"naive": "wide"},
        "error": "tiny",
        "bytes": -5,
        "tflops": None,
    }
    evaluation = evaluation_record(kernel=kernel_record(source="// k\n"), result=verdict)
    stored = Evaluation.objects.get(pk=evaluation.pk).verdict
    assert not {"device_name", "seed", "forged", "kernel_source"} & set(stored)
    assert stored["peaks"] == {"peak_gbps": 4000.0} and stored["host_load"] == {}
    kept = stored["scenarios"][0]
    assert not {"time_ci_ms", "baseline_ci_ms", "error", "bytes"} & set(kept)
    assert kept["tflops"] is None and kept["time_ms"] == 2.0 and kept["baseline_ms"] == {"naive": 6.0}
    assert stored["host"] == "gpu-node-1"  # the well-formed fields beside them are kept


# A task whose summary's counts differ from what the harness used when it judged (its formulas changed since).
SPEC = {
    "parameters": ["n"],
    "scenarios": [{"id": "n256", "params": {"n": 256}, "flops": 1e9, "bytes": 1e6}],
    "baselines": [{"name": "naive"}],
}


def rates_row(client, scenario: dict) -> dict[str, str]:
    task = make_task(scenario_ids=["n256"], spec=SPEC)
    verdict = {
        "status": "correct",
        "device_name": "NVIDIA H200",
        "peaks": {"peak_tflops": 800.0, "peak_gbps": 4000.0},
        "geomean": {"naive": {"speedup": 2.0, "count": 1}},
        "scenarios": [{"id": "n256", "params": {"n": 256}, "correct": True, "speedup": {"naive": 2.0}} | scenario],
    }
    evaluation = evaluation_record(kernel=kernel_record(source="// k\n", task=task), result=verdict)
    client.force_login(make_user("vera"))
    page = html_lib.unescape(client.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode())
    return _table(page)[1]["n256"]


def sig(value, suffix=""):
    return figures.format_significant(value, suffix=suffix)


def test_the_evidence_rates_both_come_from_the_verdict_where_it_records_its_bytes(client):
    # 2 TFLOP/s and 4e9 bytes in 1 ms: 0.5 FLOP a byte, memory-bound at the full measured bandwidth; the task's
    # summary (1e9 FLOP, 1e6 bytes) would make it compute-bound at 1 TFLOP/s
    row = rates_row(client, {"time_ms": 1.0, "tflops": 2.0, "bytes": 4e9})
    assert (row["Bound"], row["Rate"], row["% peak"]) == ("memory", sig(4000, " GB/s"), sig(100, "%"))
    assert row["% nominal"] == sig(4000 / 4800 * 100, "%")
    assert row["Also"] == f"{sig(2.0, ' TFLOP/s')} ({sig(2.0 / 800 * 100, '%')})"


def test_a_verdict_from_before_the_harness_recorded_bytes_takes_both_counts_from_the_task(client):
    # the verdict's own 2 TFLOP/s is not put beside the task's bytes: both rates are of the task's counts
    row = rates_row(client, {"time_ms": 1.0, "tflops": 2.0})
    assert (row["Bound"], row["Rate"]) == ("compute", sig(1.0, " TFLOP/s"))
    assert row["Also"].startswith(sig(1.0, " GB/s"))


def test_a_trace_exports_evaluation_line_keeps_its_shape_read_from_the_verdict():
    from runs.run_pages.selectors import trace_export_records

    verdict = harness_verdict()
    run = make_run(task=make_task())
    kernel = kernel_record(source=verdict["kernel_source"], run=run, language="cpp")
    evaluation = evaluation_record(kernel=kernel, run=run, result=verdict)
    [line] = [r for r in trace_export_records(run) if r.get("type") == "evaluation"]
    assert line == {
        "v": line["v"],
        "type": "evaluation",
        "id": evaluation.pk,
        "seq": None,
        "kernel_sha256": kernel.sha256,
        "status": "incorrect",
        "geomean": verdict["geomean"],
        "scenarios": [
            {
                "id": s["id"],
                "params": s["params"],
                "correct": s["correct"],
                "time_ms": s["time_ms"],
                "speedup": s["speedup"],
            }
            for s in verdict["scenarios"]
        ],
    }
