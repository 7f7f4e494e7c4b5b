"""The verdict stored once (issue 37, item 5): migration 0020 moves each evaluation stored the old way (its columns,
one row per scenario, gpu_name and speedups) into its one `verdict`, under the harness's names; 0021 drops the old
columns and rows; back, the columns and rows are made again from the verdict. On SQLite and PostgreSQL alike."""

from datetime import UTC, datetime

import pytest

from gpu_harness import figures
from runs.models import Evaluation
from runs.services import evaluation_record, kernel_record
from tests.foundation.factories import make_run, make_task
from tests.foundation.migrating import at_migration

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = "0019_run_best_intervals"


def test_an_evaluation_stored_the_old_way_has_its_verdict_under_the_harnesss_names_after_the_migration():
    run = make_run(task=make_task(scenario_ids=["m512", "m1024"]))
    kernel = kernel_record(source="// old\n", run=run, language="cpp")
    with at_migration(BEFORE) as old:
        OldEvaluation, OldScenario = old.get_model("runs", "Evaluation"), old.get_model("runs", "ScenarioResult")
        stored = OldEvaluation.objects.create(
            kernel_id=kernel.pk,
            run_id=run.pk,
            host="h200-a",
            gpu_name="NVIDIA H200",
            status="incorrect",
            reason="1 scenario is wrong",
            scenario_set="full",
            geomean={"naive": {"speedup": 2.5, "count": 1}},
            peaks={"peak_tflops": 750.0},
            host_load={"load_1m": 0.5, "cores": 16},
            started_at=datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
            finished_at=None,
        )
        OldScenario.objects.create(
            evaluation=stored,
            scenario_id="m512",
            params={"m": 512},
            correct=True,
            error=1e-6,
            time_ms=2.0,
            tflops=0.1,
            speedups={"naive": 2.5},
            noise={"spread_ms": 0.01, "time_ci_ms": [1.9, 2.1]},
        )
        OldScenario.objects.create(
            evaluation=stored, scenario_id="m1024", params={}, correct=False, reason="max error 0.4", speedups={}
        )
    verdict = Evaluation.objects.get(pk=stored.pk).verdict
    assert verdict == {
        "status": "incorrect",
        "reason": "1 scenario is wrong",
        "host": "h200-a",
        "device_name": "NVIDIA H200",
        "scenario_set": "full",
        "geomean": {"naive": {"speedup": 2.5, "count": 1}},
        "peaks": {"peak_tflops": 750.0},
        "host_load": {"load_1m": 0.5, "cores": 16},
        "started_at": "2026-11-30T12:00:00+00:00",
        "scenarios": [
            {
                "id": "m512",
                "params": {"m": 512},
                "correct": True,
                "error": 1e-6,
                "time_ms": 2.0,
                "tflops": 0.1,
                "speedup": {"naive": 2.5},
                "spread_ms": 0.01,
                "time_ci_ms": [1.9, 2.1],
            },
            {"id": "m1024", "params": {}, "correct": False, "reason": "max error 0.4", "speedup": {}},
        ],
    }
    assert figures.scenario_interval(verdict["scenarios"][0], "naive") is None  # no baseline interval was stored
    # and its index (migration 0022), which the lists read instead of the verdict
    assert Evaluation.objects.get(pk=stored.pk).scenarios_correct == {"m512": True, "m1024": False}


def test_a_verdict_goes_back_to_the_old_columns_and_rows_and_forward_unchanged():
    run = make_run(task=make_task(scenario_ids=["m512"]))
    kernel = kernel_record(source="// new\n", run=run, language="cpp")
    scenario = {
        "id": "m512",
        "params": {"m": 512},
        "correct": True,
        "error": 1e-6,
        "time_ms": 2.0,
        "tflops": 0.1,
        "speedup": {"naive": 3.0},
        "spread_ms": 0.01,
        "baseline_ms": {"naive": 6.0},
        "baseline_ci_ms": {"naive": [5.8, 6.2]},
        "time_ci_ms": [1.9, 2.1],
    }
    result = {
        "status": "correct",
        "host": "h",
        "device_name": "NVIDIA H200",
        "scenario_set": "full",
        "geomean": {"naive": {"speedup": 3.0, "count": 1}},
        "peaks": {"peak_gbps": 4000.0},
        "host_load": {"load_1m": 1.0, "cores": 8},
        "started_at": "2026-11-30T12:00:00+00:00",
        "finished_at": "2026-11-30T12:00:05+00:00",
        "scenarios": [scenario],
    }
    evaluation = evaluation_record(kernel=kernel, run=run, result=result)
    with at_migration(BEFORE) as old:
        back = old.get_model("runs", "Evaluation").objects.get(pk=evaluation.pk)
        assert (back.gpu_name, back.host, back.scenario_set, back.peaks) == (
            "NVIDIA H200",
            "h",
            "full",
            result["peaks"],
        )
        [row] = old.get_model("runs", "ScenarioResult").objects.filter(evaluation_id=evaluation.pk)
        assert (row.scenario_id, row.speedups, row.time_ms) == ("m512", {"naive": 3.0}, 2.0)
        assert row.noise == {k: scenario[k] for k in ("spread_ms", "baseline_ms", "baseline_ci_ms", "time_ci_ms")}
    assert Evaluation.objects.get(pk=evaluation.pk).verdict == evaluation.verdict == result
