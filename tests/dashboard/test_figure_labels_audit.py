"""The figure-labels audit: every speed-up a page, export or chart shows says whether it was measured here or is
a claim, whether it is a quick-set figure or a full one, and whether it is inside the noise. Each test holds one
finding of the audit; every verdict comes in through the worker's store (or the trace import), pages through
their views."""

import html
import re
from pathlib import Path

import pytest
from django.urls import reverse

from runs.models import Evaluation
from tests.dashboard.helpers import evaluation_payload, make_user, question_payload
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def shown(response) -> str:
    """A page as its reader sees its text: HTML entities unescaped."""
    return html.unescape(response.content.decode())


def text_of(markup: str) -> str:
    """Markup as its words: tags dropped, white space as one space."""
    return " ".join(re.sub(r"<[^>]+>", " ", markup).split())


def test_the_kernel_pages_verified_here_writes_a_figure_inside_the_noise_as_no_difference(viewer):
    """Finding 1: "Verified here" wrote the bare point (1.060× over naive · verified: full set, measured here)
    where the interval holds 1.0, which every other page writes "no difference (…)"."""
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    kernel = Evaluation.objects.get(run=run).kernel
    page = shown(viewer.get(reverse("kernel_detail", args=[kernel.pk])))
    row = text_of(re.search(r'<li class="verified-row">(.*?)</li>', page, re.S).group(1))
    assert "no difference (0.820–1.31×) over naive" in row
    assert "1.060×" not in row


def test_the_compare_charts_best_line_and_question_markers_carry_the_best_as_the_summary_writes_it(viewer):
    """Finding 2: the compare chart's hover wrote each best as a bare point ("evaluation 1: 1.060× over naive",
    "best verified then: 1.060×") beside a summary that says "no difference (…)"; its series now carries each
    point's text (`best_text`), which the hover writes."""
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    record(run, 1, "question_proposed", {**question_payload("q-1"), "decision_point": "plateau"})
    record(run, 2, "evaluation", measured(2.4, 2.2, 2.6, source="// tiled\n"))
    other = a_run(run.task, "b")
    url = reverse("run_compare") + f"?runs={run.pk},{other.pk}&format=json"
    series = viewer.get(url).json()["series"][0]
    noise, real = "no difference (0.820–1.31×)", "2.400× (2.20–2.60×)"
    assert series["best"] == [1.06, 2.4] and series["best_text"] == [noise, real]
    assert [(q["best"], q["best_text"]) for q in series["questions"]] == [(1.06, noise)]
    chart = (Path(__file__).resolve().parents[2] / "static" / "js" / "compare_chart.js").read_text()
    assert "run.best_text[j]" in chart and "q.best_text" in chart and "toFixed" not in chart


def test_the_run_charts_best_so_far_line_carries_each_best_as_the_header_writes_it(viewer):
    """Finding 3: the run page's "best so far (verified)" line had no hover text of its own, so Plotly showed the
    bare point (1.06) where the header and the Evaluations table say "no difference (…)"; each of the chart's
    best points now carries its text, which the line's hover writes."""
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    record(run, 1, "evaluation", measured(0.9, 0.85, 0.95, source="// slower\n"))
    record(run, 2, "evaluation", measured(2.4, 2.2, 2.6, source="// tiled\n"))
    chart = viewer.get(reverse("run_chart", args=[run.pk])).json()
    noise, real = "no difference (0.820–1.31×)", "2.400× (2.20–2.60×)"
    assert [(b["x"], b["best"], b["text"]) for b in chart["best"]] == [
        (0, 1.06, noise),
        (1, 1.06, noise),
        (2, 2.4, real),
    ]
    script = (Path(__file__).resolve().parents[2] / "static" / "js" / "run_page.js").read_text()
    assert "best so far %{text}" in script


def test_the_feed_line_never_writes_the_senders_own_speedup_where_the_stored_verdict_has_none(viewer):
    """Finding 4: where the stored verdict held no figure over the goal baseline (a malformed geomean, dropped when
    stored), the feed line fell back on the payload's own `speedup` ("correct, speedup 5.000× over naive (tool,
    full)") while the Evaluations table beside it said "—"; the line now says "—" too."""
    run = a_run()
    payload = evaluation_payload(5.0)
    payload["result"]["geomean"] = {"naive": 5}  # no mapping: dropped when stored
    payload["scenario_set"] = "full"
    record(run, 0, "evaluation", payload)
    assert Evaluation.objects.get(run=run).verdict["geomean"] == {}
    [step] = viewer.get(reverse("run_steps", args=[run.pk])).json()["steps"]
    assert "5.000" not in step["summary"] and step["summary"].startswith("correct, speedup — over naive")
    assert viewer.get(reverse("run_chart", args=[run.pk])).json()["points"][0]["speedup_text"] == "—"
