"""The evidence view of a data task's evaluation against its libraries (issue 35): the speed-up over the best
library on each scenario, beside each library's, naming which library that was, and chosen by default because the
task's goal names it. The verdict is the harness's own, from an H200 (docs/device-runs/)."""

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from gpu_harness import figures, get_task
from gpu_harness.tasks.summary import task_summary
from runs.services import evaluation_record, kernel_record, task_upsert
from tests.dashboard.helpers import make_user

pytestmark = pytest.mark.django_db
RUN = Path(__file__).resolve().parents[2] / "docs/device-runs/2026-12-04_libraries_softmax_rows_naive_full.json"


def _recorded(verdict: dict):
    """`verdict` recorded as an evaluation of the softmax task (its summary from the registry)."""
    spec = task_summary(get_task("softmax_rows"))
    task = task_upsert(
        name="softmax_rows",
        target="cuda-sm90",
        starting_kernel="// naive\n",
        goal_baseline=spec["goal"]["baseline"],
        goal_speedup=spec["goal"]["speedup"],
        title="softmax",
        scenario_ids=[s["id"] for s in spec["scenarios"]],
        spec=spec,
    )
    kernel = kernel_record(task=task, source=verdict["kernel_source"], filename="naive.cu", run=None)
    return evaluation_record(kernel=kernel, result=verdict, run=None)


@pytest.fixture
def evaluation():
    verdict = json.loads(RUN.read_text())
    return _recorded(verdict), verdict


def _scenario_table_cells(html: str, scenario: str) -> list[str]:
    row = re.search(rf'<tr class="outcome-[^"]*" data-scenario="{scenario}">(.*?)</tr>', html, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]


def test_each_scenario_shows_the_speedup_over_its_best_library_and_names_it(client, evaluation):
    ev, verdict = evaluation
    client.force_login(make_user("vera"))
    html = client.get(reverse("evaluation_detail", args=[ev.pk])).content.decode()
    # the goal, best_library, is the baseline the grid is coloured by
    assert re.search(r'<option value="best_library" selected>best_library \(goal\)</option>', html)
    header = re.search(r"<table class=\"scenarios\">\s*<thead><tr>(.*?)</tr>", html, re.S).group(1)
    columns = re.findall(r"<th>vs ([\w]+)</th>", header)
    assert columns == ["eager", "compile", "quack", "naive", "best_library"]
    by_id = {s["id"]: s for s in verdict["scenarios"]}
    for sid, library in (("r8192_c8192", "quack"), ("r2048_c4097", "eager")):  # QuACK refuses 4097 columns
        cells = _scenario_table_cells(html, sid)[-len(columns) :]
        best = cells[-1]
        expected = figures.format_significant(by_id[sid]["speedup"]["best_library"], suffix="×")
        assert best.startswith(expected) and best.endswith(library)
        assert by_id[sid]["details"]["best_library"] == library
    assert "fastest of the task&#x27;s libraries" in html or "fastest of the task's libraries" in html


def test_a_scenario_the_library_refused_says_why_it_has_no_figure(client, evaluation):
    # QuACK refuses a row length 8 does not divide: the harness's note for that scenario, not a bare dash
    ev, verdict = evaluation
    client.force_login(make_user("vera"))
    html = client.get(reverse("evaluation_detail", args=[ev.pk])).content.decode()
    note = {s["id"]: s for s in verdict["scenarios"]}["r2048_c4097"]["details"]["quack_na"]
    escaped = note.replace("'", "&#x27;")
    row = re.search(r'<tr class="outcome-[^"]*" data-scenario="r2048_c4097">(.*?)</tr>', html, re.S).group(1)
    assert f'<abbr class="na-note" title="{escaped}">n/a</abbr>' in row
    cell = re.search(r'data-scenario="r2048_c4097" title="([^"]*)">([^<]*)</td>', html)
    assert f"vs quack n/a ({escaped})" in cell.group(1)
    # the grid's cell, coloured by the goal (best_library, which ran here), keeps its figure; over quack it says n/a
    cells = json.loads(re.search(r'<script id="evidence-cells" type="application/json">(.*?)</script>', html).group(1))
    assert cells["r2048_c4097"]["quack"] == ["n/a", "none"]
    assert cells["r2048_c4097"]["best_library"][0] == cell.group(2) != "n/a"
    # a shape QuACK ran keeps its figure, with no note
    ran = re.search(r'<tr class="outcome-[^"]*" data-scenario="r8192_c8192">(.*?)</tr>', html, re.S).group(1)
    assert "na-note" not in ran


def test_a_baseline_time_that_holds_a_host_wait_says_so_where_its_figure_is_shown(client):
    """The harness notes a library whose host path outlasted the GPU's pre-call spin on most of its calls (its time
    may hold the GPU waiting on the host): the folded table marks that figure and the grid cell's hover says why,
    for the library and for the best library where it was the best."""
    verdict = json.loads(RUN.read_text())
    note = "the host path outlasted the GPU's pre-call spin on 9 of 9 timed calls: the time may hold the GPU waiting"
    waited = next(s for s in verdict["scenarios"] if s["id"] == "r8192_c8192")
    assert waited["details"]["best_library"] == "quack"
    waited["details"]["quack_host_wait"] = note
    ev = _recorded(verdict)
    client.force_login(make_user("vera"))
    html = client.get(reverse("evaluation_detail", args=[ev.pk])).content.decode()
    escaped = note.replace("'", "&#x27;")
    row = re.search(r'<tr class="outcome-[^"]*" data-scenario="r8192_c8192">(.*?)</tr>', html, re.S).group(1)
    assert row.count(f'<abbr class="host-wait" title="{escaped}">host wait</abbr>') == 2  # quack, best_library
    title = re.search(r'data-scenario="r8192_c8192" title="([^"]*)"', html).group(1)
    assert f"[quack: {escaped}]" in title and f"[best_library: {escaped}]" in title
    other = re.search(r'<tr class="outcome-[^"]*" data-scenario="r4096_c2048">(.*?)</tr>', html, re.S).group(1)
    assert "host-wait" not in other
    # the kernel page's headline over the goal (best_library) says on how many scenarios, as the summary line does
    kernel_page = client.get(reverse("kernel_detail", args=[ev.kernel_id])).content.decode()
    headline = re.search(r'<span class="evidence-headline" id="evidence-headline">(.*?)</span> ·', kernel_page, re.S)
    assert '<span class="host-wait">(its time may hold a host wait on 1)</span>' in headline.group(1)
    # and so does each evaluation's line on the kernel page's list, and the kernel lists' figure
    from runs.kernel_pages.selectors import _speedup_texts
    from runs.templatetags.kseek import speedup_interval

    assert speedup_interval(ev, "quack").endswith("(its time may hold a host wait on 1)")
    assert "host wait" not in speedup_interval(ev, "eager")
    assert _speedup_texts({ev.pk: "best_library"})[ev.pk].endswith("(its time may hold a host wait on 1)")
