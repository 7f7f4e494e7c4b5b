"""A run's best whose noise is unknown (the evaluation that set it lost an interval among others:
`figures.noise_unknown`) is written "(noise unknown)" on every list of run bests, as the run header writes it,
never as a bare point: the runs list, a task's runs, the review queue, the run page's line of baselines, the run
summary's `best_texts`, and the compare summary with its CSV. A best from a verdict from before intervals, which
also has no interval, stays its point figure: the run stores which is which (`Run.best_noise_unknown`), and
migration 0030 filled it for the runs stored before it."""

import csv
import importlib
import io
import re

import pytest
from django.urls import reverse

from gpu_harness import figures
from runs.models import Run
from runs.services import question_propose, step_record
from tests.dashboard.helpers import evaluation_payload, make_user
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured
from tests.foundation.migrating import at_migration

pytestmark = pytest.mark.django_db

UNKNOWN = "1.500× (noise unknown)"
OVER = ' <small class="over">over naive</small>'


def noise_unknown_payload(speedup=1.5, source="// partly timed\n") -> dict:
    """An evaluation whose n512 lost its intervals while n256 kept them: its geomean's noise is unknown."""
    payload = measured(speedup, speedup - 0.3, speedup + 0.3, source=source)
    for name in ("time_ci_ms", "baseline_ci_ms"):
        del payload["result"]["scenarios"][1][name]
    return payload


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera", "reviewer"))
    return client


@pytest.fixture
def unknown_run():
    run = a_run(model="unknown")
    record(run, 0, "evaluation", noise_unknown_payload())
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def old_run(unknown_run):
    """A run of the same task whose best comes from a verdict from before intervals: no interval, held to its point."""
    run = a_run(unknown_run.task, model="old")
    record(run, 0, "evaluation", evaluation_payload(1.25, source="// old\n"))
    return Run.objects.get(pk=run.pk)


def best_cells(page: str, row_pattern: str, cell_class: str = "best") -> list[str]:
    rows = re.findall(row_pattern, page, re.S)
    return [re.search(rf'<td class="{cell_class}">(.*?)</td>', row, re.S).group(1).strip() for row in rows]


def test_a_best_of_unknown_noise_is_marked_where_the_best_is_recorded(unknown_run, old_run):
    assert unknown_run.best_noise_unknown == ["naive"] and unknown_run.best_intervals == {}
    assert unknown_run.best_text() == UNKNOWN and unknown_run.best_texts() == [("naive", UNKNOWN)]
    assert old_run.best_noise_unknown == [] and old_run.best_text() == "1.250×"  # before intervals: its point


def test_a_later_best_with_its_interval_clears_the_marker_and_a_lower_one_keeps_it(unknown_run):
    record(unknown_run, 1, "evaluation", measured(1.2, 1.1, 1.3, source="// slower\n"))  # does not raise the best
    assert Run.objects.get(pk=unknown_run.pk).best_text() == UNKNOWN
    record(unknown_run, 2, "evaluation", measured(1.8, 1.7, 1.9, source="// faster\n"))
    run = Run.objects.get(pk=unknown_run.pk)
    assert run.best_noise_unknown == [] and run.best_text() == "1.800× (1.70–1.90×)"


def test_the_marker_follows_the_verdict_that_raises_each_best():
    known = measured(1.2, 1.1, 1.3)["result"]
    unknown = noise_unknown_payload()["result"]
    assert figures.best_noise_unknown_after({}, [], unknown) == ["naive"]
    assert figures.best_noise_unknown_after({"naive": 2.0}, [], unknown) == []  # not raised: left as it was
    assert figures.best_noise_unknown_after({"naive": 1.0}, ["naive"], known) == []


def test_the_runs_list_and_the_task_page_write_noise_unknown(viewer, unknown_run, old_run):
    home = viewer.get(reverse("home")).content.decode()
    assert sorted(best_cells(home, r"<tr[^>]*data-run=.*?</tr>")) == sorted([UNKNOWN + OVER, "1.250×" + OVER])
    task_page = viewer.get(reverse("task_detail", args=[unknown_run.task.name])).content.decode()
    cells = best_cells(task_page, r'<tr data-run="\d+">.*?</tr>')
    assert sorted(cells) == sorted([UNKNOWN + OVER, "1.250×" + OVER])


def test_the_run_pages_line_of_baselines_and_its_summary_write_noise_unknown(viewer, unknown_run):
    run_page = viewer.get(reverse("run_detail", args=[unknown_run.pk])).content.decode()
    assert re.search(r'<dd id="run-best">([^<]*)</dd>', run_page).group(1).startswith(UNKNOWN)  # the header
    assert re.search(r'<dd id="run-baselines">([^<]*)</dd>', run_page).group(1) == f"naive {UNKNOWN}"
    live = viewer.get(reverse("run_summary", args=[unknown_run.pk])).json()
    assert live["best_texts"] == [["naive", UNKNOWN]]


def test_the_review_queue_writes_the_best_so_far_with_noise_unknown(viewer, unknown_run):
    step = step_record(
        run=unknown_run, seq=1, kind="question_proposed", payload={"question_ref": "q-1", "text": "Why?", "by": "model"}
    ).step
    question_propose(run=unknown_run, text="Why?", source="self", decision_point="plateau", step=step)
    page = viewer.get(reverse("review_queue")).content.decode()
    assert f"best so far {UNKNOWN} " in page


def test_the_compare_summary_and_its_csv_say_which_best_is_of_unknown_noise(viewer, unknown_run, old_run):
    url = reverse("run_compare") + f"?runs={unknown_run.pk},{old_run.pk}"
    summary = viewer.get(url + "&format=json").json()["summary"]
    columns = [(r["best_text"], r["best_speedup_low"], r["best_noise_unknown"]) for r in summary]
    assert columns == [(UNKNOWN, None, True), ("1.250×", None, False)]
    page = viewer.get(url).content.decode()
    assert best_cells(page, r'<tr data-run="\d+">\s*<td><a.*?</tr>') == [UNKNOWN, "1.250×"]
    rows = list(csv.DictReader(io.StringIO(viewer.get(url + "&format=csv").content.decode())))
    assert [row["best_noise_unknown"] for row in rows] == ["True", "False"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_marks_each_best_of_unknown_noise_stored_before_it():
    backfill = importlib.import_module("runs.migrations.0030_run_best_noise_unknown").backfill
    unknown = a_run(model="unknown")
    record(unknown, 0, "evaluation", noise_unknown_payload())
    record(unknown, 1, "evaluation", measured(1.2, 1.1, 1.3, source="// slower\n"))
    old = a_run(unknown.task, model="old")
    record(old, 0, "evaluation", evaluation_payload(1.25, source="// old\n"))
    with at_migration("0030_run_best_noise_unknown") as apps:
        # as stored before it: the field's default, for every run
        apps.get_model("runs", "Run").objects.update(best_noise_unknown=[])
        backfill(apps, None)
    assert Run.objects.get(pk=unknown.pk).best_noise_unknown == ["naive"]
    assert Run.objects.get(pk=old.pk).best_noise_unknown == []
    assert Run.objects.get(pk=unknown.pk).best_text() == UNKNOWN
    with at_migration("0029_question_unheard_decision_reported"):  # backwards: the field goes, nothing else
        pass
    assert Run.objects.get(pk=unknown.pk).best_noise_unknown == ["naive"]  # forwards again: filled from the verdicts
