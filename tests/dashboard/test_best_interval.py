"""The run header's best and the kernel page's list of evaluations carry their noise as the Evaluations table does
(issue 34 item 4, gpu_harness.figures): the verified best with its interval, "no difference" where that holds 1.0,
a quick best above it labelled quick with its interval; the run summary the page redraws from says the same.
Every verdict comes in through the worker's store."""

import re

import pytest
from django.urls import reverse

from runs.models import Evaluation
from tests.dashboard.helpers import evaluation_payload, make_user
from tests.dashboard.test_compare import record
from tests.dashboard.test_noise_pages import a_run, measured

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def header_best(page: str) -> dict[str, str]:
    """The header's best figures: {"run-best": text, "run-best-quick": text, ...}, hidden ones left out."""
    found = re.findall(r'<dd id="(run-best[\w-]*)"[^>]*?(\shidden)?>([^<]*)</dd>', page)
    return {name: text for name, hidden, text in found if not hidden}


def quick(payload: dict) -> dict:
    """The payload on one scenario of the task's two: a quick-set figure, not verified."""
    payload["result"]["scenarios"] = payload["result"]["scenarios"][:1]
    return payload


@pytest.mark.parametrize(
    "speedup,low,high,shown",
    [
        (1.06, 0.82, 1.31, "no difference (0.820–1.31×) (verified: full set)"),
        (2.4, 2.2, 2.6, "2.400× (2.20–2.60×) (verified: full set)"),
    ],
)
def test_the_headline_best_shows_its_interval_and_no_difference_where_it_holds_one(viewer, speedup, low, high, shown):
    run = a_run()
    record(run, 0, "evaluation", measured(speedup, low, high))
    page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert header_best(page) == {"run-best": shown}
    # The summary the page redraws its header from (run_page.js) writes the same text.
    assert viewer.get(reverse("run_summary", args=[run.pk])).json()["best_text"] == shown


def test_a_quick_best_above_the_verified_one_shows_its_interval_and_its_label_on_load_and_in_the_chart(viewer):
    run = a_run()
    record(run, 0, "evaluation", measured(1.2, 1.1, 1.3, source="// full\n"))
    record(run, 1, "evaluation", quick(measured(3.7, 0.9, 9.0, source="// outlier\n")))
    page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert header_best(page) == {
        "run-best": "1.200× (1.10–1.30×) (verified: full set)",
        "run-best-quick": "no difference (0.900–9.00×) (quick: on the quick set only, not verified)",
    }
    chart = viewer.get(reverse("run_chart", args=[run.pk])).json()
    assert chart["unverified"]["quick_text"] == header_best(page)["run-best-quick"]


def test_a_best_from_before_intervals_shows_its_point_figure_with_its_label(viewer):
    run = a_run()
    record(run, 0, "evaluation", evaluation_payload(1.5))
    page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert header_best(page) == {"run-best": "1.500× (verified: full set)"}
    empty = a_run(model="b")
    assert header_best(viewer.get(reverse("run_detail", args=[empty.pk])).content.decode()) == {"run-best": "—"}


def test_every_evaluation_of_a_kernel_shows_its_interval_and_no_difference_and_a_busy_host(viewer):
    run = a_run()
    record(run, 0, "evaluation", measured(1.06, 0.82, 1.31))
    record(run, 1, "evaluation", measured(2.4, 2.2, 2.6, host_load={"load_1m": 9.0, "cores": 2}))
    first, second = Evaluation.objects.filter(run=run).order_by("pk")
    assert first.kernel_id == second.kernel_id  # one source, evaluated twice
    page = viewer.get(reverse("kernel_detail", args=[first.kernel_id])).content.decode()
    listed = page[page.index('id="other-evaluations"') :]
    lines = {
        int(pk): " ".join(re.sub(r"<[^>]+>", "", line).split())
        for pk, line in re.findall(r'<li><a href="/evaluations/(\d+)/">(.*?)</li>', listed, re.S)
    }
    assert "naive no difference (0.820–1.31×)" in lines[first.pk] and "host was busy" not in lines[first.pk]
    assert "naive 2.400× (2.20–2.60×)" in lines[second.pk]
    assert "host was busy (load 9.00 on 2 cores while timing)" in lines[second.pk]
