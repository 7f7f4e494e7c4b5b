"""The compare page's detail: the best kernels' ratios scenario by scenario, laid out as the evidence view lays
out an evaluation, and the questions of every run aligned by the evaluations before them, with the bank's gain."""

import pytest
from django.urls import reverse

from runs.models import Run
from runs.run_pages.selectors_compare import compare_runs_get, run_comparison
from runs.run_pages.selectors_compare_detail import best_evaluation, question_timeline, ratio_grids
from runs.services import run_claim
from tests.dashboard.helpers import evaluation_payload, make_user, make_worker
from tests.dashboard.test_compare import record, two_runs  # noqa: F401 - the fixture
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


def timed(speedup, times: dict[str, float], source: str = "// fast\n") -> dict:
    """An evaluation payload of `source` whose scenarios ran in `times` (scenario id -> ms)."""
    payload = evaluation_payload(speedup, source=source)
    for s in payload["result"]["scenarios"]:
        s["time_ms"] = times[s["id"]]
    return payload


def test_the_grid_holds_how_many_times_faster_the_first_runs_best_kernel_ran_each_scenario():
    host, _ = make_worker()
    task = make_task()
    make_run(task=task, model="a")
    a = run_claim(worker=host)
    make_run(task=task, model="b")
    b = run_claim(worker=host)
    record(a, 0, "evaluation", timed(1.5, {"n256": 4.0, "n512": 4.0}))
    record(a, 1, "evaluation", timed(3.0, {"n256": 1.0, "n512": 2.0}))  # a's best
    record(b, 0, "evaluation", timed(1.2, {"n256": 2.0, "n512": 3.0}, source="// b\n"))  # b's best
    record(b, 1, "evaluation", evaluation_payload(None, correct=False))  # wrong: never its best
    a, b = Run.objects.get(pk=a.pk), Run.objects.get(pk=b.pk)
    assert best_evaluation(a).step.seq == 1 and best_evaluation(b).step.seq == 0
    (grid,) = ratio_grids([a, b])
    cells = {c["id"]: c for row in grid["grid_rows"] for c in row["cells"] if c}
    assert {sid: c["text"] for sid, c in cells.items()} == {"n256": "2.00×", "n512": "1.50×"}
    assert grid["faster"] == 2 and grid["measured"] == 2 and grid["geomean"] == "1.73×"
    assert cells["n256"]["tone"] == "up3" and cells["n512"]["tone"] == "up2"


def test_a_run_of_another_task_or_without_a_verified_kernel_gets_a_note_instead_of_a_grid():
    host, _ = make_worker()
    make_run(task=make_task(), model="a")
    a = run_claim(worker=host)
    make_run(task=make_task(name="other_op"), model="b")
    b = run_claim(worker=host)
    make_run(task=a.task, model="c")
    c = run_claim(worker=host)
    record(a, 0, "evaluation", timed(2.0, {"n256": 1.0, "n512": 1.0}))
    record(c, 0, "evaluation", evaluation_payload(None, correct=False))
    other, unverified = ratio_grids([Run.objects.get(pk=a.pk), Run.objects.get(pk=b.pk), Run.objects.get(pk=c.pk)])
    assert "another task" in other["note"] and not other["grid_rows"]
    assert unverified["note"] == (
        f"run {c.pk} has no verified evaluation yet: none measured here on its task's full set of scenarios "
        "and correct on all of them"
    )


def test_a_runs_best_kernel_is_its_best_full_set_figure_never_a_quick_one():
    # A quick-set figure is not verified (gpu_harness.figures.headline_speedup): the quick x9.0 is neither run
    # a's best kernel nor makes one of run b's, whose figures are all quick.
    host, _ = make_worker()
    task = make_task()
    make_run(task=task, model="a")
    a = run_claim(worker=host)
    make_run(task=task, model="b")
    b = run_claim(worker=host)
    quick = timed(9.0, {"n256": 0.1, "n512": 0.1}, source="// quick\n")
    quick["result"]["scenarios"] = quick["result"]["scenarios"][:1]  # one of the task's two: the quick set
    record(a, 0, "evaluation", timed(1.2, {"n256": 1.0, "n512": 1.0}, source="// full\n"))
    record(a, 1, "evaluation", quick)
    record(b, 0, "evaluation", quick)
    a, b = Run.objects.get(pk=a.pk), Run.objects.get(pk=b.pk)
    assert best_evaluation(a).step.seq == 0 and best_evaluation(b) is None
    (grid,) = ratio_grids([a, b])
    assert grid["note"].startswith(f"run {b.pk} has no verified evaluation yet") and not grid["grid_rows"]


def test_questions_are_aligned_by_the_evaluations_before_them_with_the_banks_gain(two_runs):  # noqa: F811
    a, b = two_runs
    runs, _ = compare_runs_get([a.pk, b.pk])
    comparison = run_comparison(runs)
    markers = {s["run_id"]: s["questions"] for s in comparison["series"]}
    timeline = question_timeline(runs, markers)
    assert timeline["runs"] == [a.pk, b.pk]
    by_point = {row["evaluation"]: row["cells"] for row in timeline["rows"]}
    assert sorted(by_point) == [1, 2, 3]
    (tiled,) = by_point[1][0]
    assert tiled["text"] == "Is the loop tiled?" and tiled["decision"] == "approved" and tiled["decided_by"] == "rita"
    # the bank's own attribution: the best after it up to the next question asked (a vetoed one is not), 2.4,
    # over the best before it, 1.2; these verdicts hold no intervals, so the gain's noise is unknown and says so
    assert tiled["gain_text"] == "2.000× (noise unknown)"
    (simd,) = by_point[2][0]
    assert simd["decision"] == "vetoed" and simd["gain_text"] == "no gain measured"
    assert all(cell == [] for cells in by_point.values() for cell in cells[1:])  # run B asked nothing


def test_the_compare_page_shows_the_timeline_and_the_grid(client, two_runs):  # noqa: F811
    a, b = two_runs
    client.force_login(make_user("vera"))
    page = client.get(reverse("run_compare") + f"?runs={a.pk},{b.pk}").content.decode()
    assert 'id="compare-timeline"' in page and "“Is the loop tiled?”" in page and "2.000× (noise unknown)" in page
    assert 'id="compare-grids"' in page and f"#{a.pk} over #{b.pk}" in page
    assert 'class="evidence-grid ratio-grid"' in page and 'data-scenario="n256"' in page


def test_the_grids_summary_counts_as_faster_only_the_scenarios_faster_beyond_the_noise(client):
    # n256: a's 1.0 ms against b's 1.05 ms, each median's interval wide enough that the ratio's holds 1.0 (its
    # cell says "no difference"); n512: 1.0 ms against 2.0 ms, both tight: faster beyond the noise.
    host, _ = make_worker()
    task = make_task()
    make_run(task=task, model="a")
    a = run_claim(worker=host)
    make_run(task=task, model="b")
    b = run_claim(worker=host)
    fast = timed(3.0, {"n256": 1.0, "n512": 1.0})
    slow = timed(1.2, {"n256": 1.05, "n512": 2.0}, source="// b\n")
    for payload, spans in ((fast, {"n256": (0.9, 1.1), "n512": (0.99, 1.01)}), (slow, {"n256": (0.95, 1.2)})):
        for s in payload["result"]["scenarios"]:
            low, high = spans.get(s["id"], (s["time_ms"] * 0.99, s["time_ms"] * 1.01))
            s["time_ci_ms"] = [low, high]
    record(a, 0, "evaluation", fast)
    record(b, 0, "evaluation", slow)
    (grid,) = ratio_grids([Run.objects.get(pk=a.pk), Run.objects.get(pk=b.pk)])
    cells = {c["id"]: c["text"] for row in grid["grid_rows"] for c in row["cells"] if c}
    assert cells == {"n256": "no difference", "n512": "2.00×"}
    assert (grid["faster"], grid["measured"]) == (1, 2)
    assert grid["geomean"] == "1.45× (1.30–1.65×)", grid[
        "geomean"
    ]  # with its interval: sqrt(0.864·1.96), sqrt(1.33·2.04)
    client.force_login(make_user("vera"))
    page = client.get(reverse("run_compare") + f"?runs={a.pk},{b.pk}").content.decode()
    assert f"#{a.pk} faster beyond the noise on 1 of 2 scenarios timed in both" in page
