"""A verdict's geometric means come from workers and imported traces: a malformed one is dropped when it is stored
(runs.services.kernels.stored_verdict), and one stored before that check (an older server's row) is read as no
measurement (gpu_harness.figures.geomean_entries), so that no page fails for everyone on one forged number."""

import json
from pathlib import Path

import pytest
from django.urls import reverse

from gpu_harness import figures
from runs.models import Evaluation, Kernel
from runs.services import trace_import
from runs.services.kernels import stored_verdict
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
MALFORMED = [{"naive": 5}, {"naive": [1.5]}, {"naive": "fast"}, [{"naive": {"speedup": 2.0}}], "2x"]


def test_a_malformed_geomean_entry_is_dropped_and_a_well_formed_one_kept():
    given = {
        "naive": 5,
        "numpy": {"speedup": -5.0, "count": 1},
        "twice": {"speedup": 2.0, "count": "two"},
        "na": {"speedup": None, "count": 0},
        "ok": {"speedup": 1.5, "count": 3},
    }
    stored = stored_verdict({"status": "correct", "geomean": given, "scenarios": []})
    assert stored["geomean"] == {"twice": {"speedup": 2.0}, "na": {"speedup": None, "count": 0}, "ok": given["ok"]}
    assert "geomean" not in stored_verdict({"status": "correct", "geomean": ["naive"], "scenarios": []})


@pytest.mark.parametrize("geomean", MALFORMED)
def test_readers_take_a_malformed_geomean_as_no_measurement(geomean):
    verdict = {"status": "correct", "geomean": geomean, "scenarios": [{"id": "a", "correct": True}]}
    assert figures.speedup_over(verdict, "naive") is None and figures.verified_speedup(verdict, "naive") is None
    assert figures.best_per_baseline({"naive": 1.2}, verdict) == {"naive": 1.2}
    assert figures.best_intervals_after({}, {}, verdict) == {}
    negative = {"status": "correct", "geomean": {"naive": {"speedup": -5.0}}, "scenarios": verdict["scenarios"]}
    assert figures.speedup_over(negative, "naive") is None


def _imported_run_with(geomean):
    """The demo trace imported, then each of its evaluations' stored geomean replaced by `geomean`, as a server
    that stored any mapping wrote it."""
    make_task()
    lines = DEMO.read_text().splitlines(keepends=True)
    run = trace_import(lines=lines, name="demo.jsonl")
    evaluations = Evaluation.objects.filter(run=run)
    assert evaluations.exists()
    for evaluation in evaluations:
        evaluation.verdict = {**evaluation.verdict, "geomean": geomean}
        evaluation.save(update_fields=["verdict"])
    return run


@pytest.mark.parametrize("geomean", MALFORMED[:2] + MALFORMED[3:4])
def test_every_page_an_imported_run_reaches_loads_with_a_malformed_geomean_stored(client, geomean):
    run = _imported_run_with(geomean)
    client.force_login(make_user("viewer"))
    evaluation = Evaluation.objects.filter(run=run).first()
    kernel = Kernel.objects.filter(evaluations__run=run).first()
    pages = [
        reverse("kernels"),
        reverse("bank"),
        reverse("run_detail", args=[run.pk]),
        reverse("run_chart", args=[run.pk]),
        reverse("run_summary", args=[run.pk]),
        reverse("evaluation_detail", args=[evaluation.pk]),
        reverse("kernel_detail", args=[kernel.pk]),
        reverse("trace_export", args=[run.pk]),
        reverse("tasks"),
        f"{reverse('run_compare')}?runs={run.pk},{_imported_run_with({}).pk}",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, (page, response.status_code)
    exported = b"".join(client.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    assert all(json.loads(line) for line in exported.splitlines())
