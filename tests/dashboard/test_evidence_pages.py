"""The evidence view on the evaluation and kernel pages: a grid by the task's axes, coloured against the goal
baseline, the spread of the speed-ups, rates with their share of the measured peak, and "not run" apart from
"wrong"."""

import re

import pytest
from django.urls import reverse

from gpu_harness import figures
from runs.models import Evaluation
from runs.services import evaluation_record, kernel_record
from tests.dashboard.evidence_seed import NOT_RUN, OVER_PEAK, WRONG, attention_evaluation
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def cells(html: str) -> dict[str, tuple[str, str]]:
    """scenario id -> (tone, text) of every grid cell."""
    found = re.findall(r'<td class="cell tone-([\w-]+)[^"]*"[^>]*data-scenario="([^"]+)"[^>]*>([^<]*)</td>', html)
    return {sid: (tone, text) for tone, sid, text in found}


def test_the_evaluation_page_lays_180_scenarios_out_by_the_tasks_axes(viewer):
    evaluation = attention_evaluation()
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    grid = re.search(r'<table class="evidence-grid"[^>]*data-row-axes="([^"]*)" data-column-axes="([^"]*)"', html)
    assert grid.group(2) == "dtype,causal"
    assert grid.group(1).split(",")[:2] == ["seqlen_q", "seqlen_k"]
    found = cells(html)
    assert len(found) == 180
    ids = [s["id"] for s in evaluation.kernel.task.spec["scenarios"]]
    # Wrong and never run are told apart; neither shows a speed-up.
    assert {found[ids[i]] for i in WRONG} == {("wrong", "✗ wrong")}
    assert {found[ids[i]] for i in NOT_RUN} == {("not-run", "not run")}
    # The failing banner names the wrong scenarios only, not those never run.
    banner = re.search(r'id="failing-banner">(.*?)</div>', html, re.S).group(1)
    assert "3 failing scenarios" in banner and ids[min(NOT_RUN)] not in banner
    assert "3 wrong" in html and "4 not run" in html


def test_each_cell_shows_its_speedup_over_the_goal_baseline_in_three_digits(viewer):
    evaluation = attention_evaluation()
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    assert re.search(r'<option value="cudnn" selected>cudnn \(goal\)</option>', html)
    found = cells(html)
    for row in [s for s in evaluation.verdict["scenarios"] if s["correct"]][:20]:
        expected = figures.format_significant(row["speedup"]["cudnn"], suffix="×")
        assert found[row["id"]][1] == expected
    assert "0.002201252665921785" not in html and "0.00220" in html


def test_the_spread_gives_min_median_geomean_and_the_count_below_one_per_baseline(viewer):
    evaluation = attention_evaluation()
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    verdict = evaluation.verdict
    for baseline in ("cudnn", "fa4"):
        spread = figures.speedup_spread(verdict, baseline)
        row = re.search(rf'<tr data-baseline="{baseline}"[^>]*>(.*?)</tr>', html).group(1)
        texts = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert texts == [
            baseline,
            str(spread["count"]),
            figures.format_significant(spread["min"], suffix="×"),
            figures.format_significant(spread["median"], suffix="×"),
            figures.format_significant(figures.speedup_over(verdict, baseline), suffix="×"),
            str(spread["below_one"]),
        ]
        assert spread["below_one"] > 0 and spread["count"] == 180 - len(WRONG) - len(NOT_RUN)


def test_rates_show_their_share_of_the_measured_peak_and_a_figure_above_it_stands_out(viewer):
    evaluation = attention_evaluation()
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    assert "Measured peak: 800 TFLOP/s · 4000 GB/s" in html
    ids = [s["id"] for s in evaluation.kernel.task.spec["scenarios"]]
    suspect = re.search(rf'<tr class="outcome-correct suspect" data-scenario="{ids[OVER_PEAK]}">(.*?)</tr>', html, re.S)
    assert suspect and "125%" in suspect.group(1)  # 1000 TFLOP/s against a measured 800
    # The table of every scenario is folded, and gives each parameter a column.
    table = re.search(r'<details id="scenario-table">(.*?)</details>', html, re.S).group(1)
    assert "<th>seqlen_q</th>" in table and "<th>% peak</th>" in table
    # each row leads with the rate that bounds it (GB/s where memory-bound), the other one after it
    assert "<th>Bound</th><th>Rate</th>" in table and "<th>Also</th>" in table


def test_an_evaluation_without_measured_peaks_says_so_and_shows_no_share(viewer):
    evaluation = attention_evaluation()
    Evaluation.objects.filter(pk=evaluation.pk).update(verdict=evaluation.verdict | {"peaks": {}})
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    assert "No share of the peak" in html and "<th>% peak</th>" not in html


def test_a_scenario_never_run_is_not_counted_as_failing(viewer):
    kernel = kernel_record(source="// k\n")
    verdict = {
        "status": "error",
        "reason": "no GPU",
        "scenarios": [{"id": "a", "params": {"n": 1}, "correct": False, "reason": "not run: no GPU on this host"}],
        "geomean": {},
    }
    evaluation = evaluation_record(kernel=kernel, result=verdict)
    html = viewer.get(reverse("evaluation_detail", args=[evaluation.pk])).content.decode()
    assert "failing-banner" not in html and "FAIL" not in html
    assert cells(html) == {"a": ("not-run", "not run")}


def test_the_kernel_page_leads_with_its_provenance_and_the_evidence_and_then_the_source(viewer):
    evaluation = attention_evaluation()
    html = viewer.get(reverse("kernel_detail", args=[evaluation.kernel_id])).content.decode()
    provenance, evidence, source = (html.index(mark) for mark in ("Came from", 'id="evidence"', "<h2>Source</h2>"))
    assert provenance < evidence < source
    assert len(cells(html)) == 180 and '<details id="scenario-table">' in html


def test_the_kernel_list_shows_identical_sources_once_and_the_best_kernel_of_each_task(viewer):
    from tests.dashboard.helpers import eval_result
    from tests.foundation.factories import make_run, make_task

    task = make_task()
    runs = [make_run(task=task) for _ in range(3)]
    same = [kernel_record(task=task, source="// same\n", run=run) for run in runs[:2]]
    for kernel, speedup in zip(same, (1.5, 2.5)):
        evaluation_record(kernel=kernel, result=eval_result(speedup, source="// same\n"), run=kernel.run)
    other = kernel_record(task=task, source="// other\n", run=runs[2])
    evaluation_record(kernel=other, result=eval_result(9.0, source="// other\n", failing="n512"), run=runs[2])
    evaluation_record(kernel=other, result=eval_result(3.0, source="// other\n"), run=runs[2])
    html = viewer.get(reverse("kernels")).content.decode()
    rows = re.findall(r'<tr data-sha="(\w+)">(.*?)</tr>', html, re.S)
    assert [sha for sha, _ in rows].count(same[0].sha256) == 1 and len(rows) == 2
    cells_of = {sha: re.findall(r"<td>([^<]*)</td>", row) for sha, row in rows}
    # kernels, runs, evaluations; the best verified speed-up of the group (over the task's goal baseline).
    assert cells_of[same[0].sha256][1:4] == ["2", "2", "2"]
    assert "2.500× over naive" in rows[[sha for sha, _ in rows].index(same[0].sha256)][1]
    # The best kernel of the task: 3.0x verified beats 2.5x; the 9.0x of an incorrect evaluation is no figure.
    best = re.search(r'<tr data-task="matmul_cpu">(.*?)</tr>', html, re.S).group(1)
    assert f'href="/kernels/{other.pk}/"' in best and "3.000× over naive" in best


def test_only_positive_numeric_peaks_are_stored():
    kernel = kernel_record(source="// p\n")
    verdict = {"status": "error", "scenarios": [], "geomean": {}}
    stored = evaluation_record(kernel=kernel, result=verdict | {"peaks": {"peak_tflops": 750, "peak_gbps": "fast"}})
    assert stored.verdict["peaks"] == {"peak_tflops": 750.0}
    for bad in ({"peak_tflops": -1, "peak_gbps": float("nan")}, "800", None):
        assert evaluation_record(kernel=kernel, result=verdict | {"peaks": bad}).verdict["peaks"] == {}
