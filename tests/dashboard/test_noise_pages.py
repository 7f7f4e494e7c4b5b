"""Noise on the dashboard (issue 34, item 4): a speed-up whose interval holds 1.0 is shown as "no difference" on the
run page and the evaluation page, a host that was busy says so, comparing two runs whose best kernels are one
source says "same source", a run's goal is confirmed only beyond the noise, and verdicts from before intervals, or
with malformed ones, still render with their point figure. Every verdict comes in through the worker's store."""

import importlib
import re

import pytest
from django.urls import reverse

from runs.models import Evaluation, Run
from runs.services import run_claim, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker
from tests.dashboard.test_compare import record
from tests.foundation.factories import make_run, make_task
from tests.foundation.migrating import at_migration

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def measured(speedup, low, high, *, source="// fast\n", host_load=None) -> dict:
    """An evaluation payload as the harness writes it now: each scenario's medians with their intervals, such that
    every scenario's speed-up over naive is `speedup` within [low, high] (the candidate's median pinned at 1.5)."""
    payload = evaluation_payload(speedup, source=source)
    for s in payload["result"]["scenarios"]:
        s.update(
            time_ms=1.5,
            time_ci_ms=[1.5, 1.5],
            spread_ms=0.01,
            baseline_ms={"naive": 1.5 * speedup},
            baseline_ci_ms={"naive": [1.5 * low, 1.5 * high]},
        )
    if host_load is not None:
        payload["result"]["host_load"] = host_load
    return payload


def evaluation_cell(run_page: str, evaluation: Evaluation) -> str:
    """The speed-up cell of `evaluation`'s row in the run page's Evaluations table."""
    row = re.search(rf'<tr data-evaluation="{evaluation.pk}">.*?</tr>', run_page, re.S).group(0)
    return re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[2].strip()


def a_run(task=None, model="a"):
    host, _ = make_worker(f"host-{model}")
    make_run(task=task or make_task(), model=model)
    return run_claim(worker=host)


def test_the_naive_kernel_against_itself_shows_no_difference_on_the_run_and_evaluation_pages(viewer):
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    evaluation = Evaluation.objects.get(run=run)
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert evaluation_cell(run_page, evaluation) == "no difference (0.820–1.31×)"
    chart = viewer.get(reverse("run_chart", args=[run.pk])).json()
    assert chart["points"][0]["speedup_text"] == "no difference (0.820–1.31×)"
    page = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    spread = re.search(r'<td class="geomean">([^<]*)<span class="interval">\(([^)]*)\)', page)
    assert spread.groups() == ("no difference ", "0.820–1.31×")
    cells = re.findall(r'<td class="cell tone-([\w-]+)[^"]*"[^>]*data-scenario="([^"]+)"[^>]*>([^<]*)</td>', page)
    assert {sid: (tone, text) for tone, sid, text in cells} == {
        "n256": ("even", "no difference"),
        "n512": ("even", "no difference"),
    }


def test_a_speedup_beyond_its_noise_is_shown_with_its_interval(viewer):
    run = a_run()
    record(run, 0, "evaluation", measured(2.4, 2.2, 2.6))
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert evaluation_cell(run_page, Evaluation.objects.get(run=run)) == "2.400× (2.20–2.60×)"


def test_an_evaluation_on_a_busy_host_says_the_host_was_busy(viewer):
    run = a_run()
    record(run, 0, "evaluation", measured(2.4, 2.2, 2.6, host_load={"load_1m": 7.5, "cores": 2}))
    evaluation = Evaluation.objects.get(run=run)
    assert evaluation.verdict["host_load"] == {"load_1m": 7.5, "cores": 2}
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert evaluation_cell(run_page, evaluation) == "2.400× (2.20–2.60×) · host was busy"
    page = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    assert "The host was busy while timing (load 7.50 on 2 cores while timing)" in page


def test_a_success_whose_interval_does_not_clear_the_goal_is_refused():
    run = a_run()  # the goal: 2x over naive on the full set
    record(run, 0, "evaluation", measured(2.3, 1.7, 2.9))  # 2.3x at its point, down to 1.7x within its noise
    [outcome] = worker_events_record(
        items=[(run.worker, event(run.pk, 1, "status", {"status": "succeeded", "reason": "goal_met"}))]
    )
    assert not outcome.stored and "confirms the goal" in outcome.error
    assert Run.objects.get(pk=run.pk).status != "succeeded"
    cleared = a_run(model="b")
    record(cleared, 0, "evaluation", measured(2.3, 2.1, 2.5))  # beyond the noise
    record(cleared, 1, "status", {"status": "succeeded", "reason": "goal_met"})
    assert Run.objects.get(pk=cleared.pk).status == "succeeded"


def test_two_runs_whose_best_kernels_are_one_source_compare_as_same_source(viewer):
    task = make_task()
    a, b, c = a_run(task, "a"), a_run(task, "b"), a_run(task, "c")
    record(a, 0, "evaluation", measured(0.82, 0.7, 0.95, source="// naive\n"))
    record(b, 0, "evaluation", measured(1.56, 1.3, 1.8, source="// naive\n"))
    record(c, 0, "evaluation", measured(1.1, 1.0, 1.2, source="// tiled\n"))
    page = viewer.get(reverse("run_compare") + f"?runs={a.pk},{b.pk},{c.pk}").content.decode()
    notes = re.findall(r'<p class="empty ratio-note">([^<]*)</p>', page)
    assert len(notes) == 1 and notes[0].startswith(f"same source: the best kernels of runs {a.pk} and {b.pk}")
    assert f'data-run-b="{c.pk}"' in page  # another source still gets its grid
    assert f'data-run-b="{b.pk}"' not in page


def test_a_verdict_from_before_intervals_or_with_malformed_ones_shows_its_point_figure(viewer):
    run = a_run()
    record(run, 0, "evaluation", evaluation_payload(1.06))  # no interval at all
    malformed = measured(1.5, 1.2, 1.8, host_load={"load_1m": "high", "cores": -1})
    for s in malformed["result"]["scenarios"]:
        s["time_ci_ms"] = [2.0, 1.0]  # not ordered
        s["baseline_ci_ms"] = {"naive": "wide"}
    record(run, 1, "evaluation", malformed)
    stored = Evaluation.objects.get(run=run, step__seq=1)
    noise = ("time_ci_ms", "spread_ms", "baseline_ms", "baseline_ci_ms")
    assert stored.verdict["host_load"] == {} and all(
        {k: s[k] for k in noise if k in s} == {"spread_ms": 0.01, "baseline_ms": {"naive": 2.25}}
        for s in stored.verdict["scenarios"]
    )
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    texts = {evaluation_cell(run_page, e) for e in Evaluation.objects.filter(run=run)}
    assert texts == {"1.060×", "1.500×"}
    for evaluation in Evaluation.objects.filter(run=run):
        page = viewer.get(reverse("evaluation_detail", args=[evaluation.pk]))
        assert page.status_code == 200 and 'class="interval"' not in page.content.decode()


def test_a_best_inside_its_noise_is_no_difference_on_every_list_that_shows_it(viewer):
    """The runs list, the task page, the compare summary, the kernel list (its best per task and its row per
    source), the run page's line of baselines and its live summary write a run's best with the interval of the
    evaluation that set it: the naive kernel against itself is "no difference", never 1.060×."""
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    other = a_run(run.task, "b")
    record(other, 0, "evaluation", measured(1.52, 1.41, 1.63, source="// tiled\n"))
    noise, real = "no difference (0.820–1.31×)", "1.520× (1.41–1.63×)"

    over = ' <small class="over">over naive</small>'  # a list of runs says what each best is over

    def best_cells(page: str, row_pattern: str, cell_class: str) -> list[str]:
        rows = re.findall(row_pattern, page, re.S)
        return [re.search(rf'<td class="{cell_class}">(.*?)</td>', row, re.S).group(1).strip() for row in rows]

    home = viewer.get(reverse("home")).content.decode()
    assert sorted(best_cells(home, r"<tr[^>]*data-run=.*?</tr>", "best")) == sorted([noise + over, real + over])
    task_page = viewer.get(reverse("task_detail", args=[run.task.name])).content.decode()
    assert sorted(best_cells(task_page, r'<tr data-run="\d+">.*?</tr>', "best")) == sorted([noise + over, real + over])
    compare = viewer.get(reverse("run_compare") + f"?runs={run.pk},{other.pk}").content.decode()
    assert best_cells(compare, r'<tr data-run="\d+">\s*<td><a.*?</tr>', "best") == [noise, real]
    summary = viewer.get(reverse("run_compare") + f"?runs={run.pk},{other.pk}&format=json").json()["summary"]
    assert [(r["best_speedup_low"], r["best_speedup_high"]) for r in summary] == [(0.82, 1.31), (1.41, 1.63)]
    kernels = viewer.get(reverse("kernels")).content.decode()
    assert best_cells(kernels, r'<tr data-task="[^"]+">.*?</tr>', "speedup") == [f"{real} over naive"]
    groups = best_cells(kernels, r'<tr data-sha="[^"]+">.*?</tr>', "best-verified")
    assert sorted(groups) == sorted([f"{noise} over naive", f"{real} over naive"])
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert re.search(r'<dd id="run-baselines">([^<]*)</dd>', run_page).group(1) == f"naive {noise}"
    live = viewer.get(reverse("run_summary", args=[run.pk])).json()
    assert live["best_texts"] == [["naive", noise]]


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_best_stored_before_it_the_interval_of_the_evaluation_that_set_it():
    backfill = importlib.import_module("runs.migrations.0019_run_best_intervals").backfill
    run = a_run()
    record(run, 0, "evaluation", measured(1.52, 1.41, 1.63))
    record(run, 1, "evaluation", measured(1.06, 0.82, 1.31, source="// later, slower\n"))
    stored = Run.objects.get(pk=run.pk).best_intervals
    # the evaluations as 0019 read them (columns and scenario rows: 0020 and 0021 taken back)
    with at_migration("0019_run_best_intervals") as apps:
        apps.get_model("runs", "Run").objects.filter(pk=run.pk).update(best_intervals={})  # as stored before it
        backfill(apps, None)
    assert Run.objects.get(pk=run.pk).best_intervals == stored == {"naive": [1.41, 1.63]}


def test_the_spread_table_says_noise_unknown_where_a_scenario_lost_its_interval_among_others(viewer):
    run = a_run()
    partial = measured(1.5, 1.2, 1.8)
    for name in ("time_ci_ms", "baseline_ci_ms"):
        del partial["result"]["scenarios"][1][name]  # n512 without its intervals, n256 with them
    record(run, 0, "evaluation", partial)
    evaluation = Evaluation.objects.get(run=run)
    run_page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert evaluation_cell(run_page, evaluation) == "1.500× (noise unknown)"
    page = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    spread = re.search(
        r'<tr data-baseline="naive"[^>]*>.*?<td class="geomean">([^<]*)<span class="interval">\(([^)]*)\)', page, re.S
    )
    assert spread.groups() == ("1.50× ", "noise unknown")
