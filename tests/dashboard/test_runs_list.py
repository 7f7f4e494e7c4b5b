"""The runs list: search, sort, pages of 50, cost and duration; the start form on its own page."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.models import Run
from runs.services import run_set_status
from tests.dashboard.helpers import make_user
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def listed(client, **params) -> list[int]:
    html = client.get(reverse("home"), params).content.decode()
    return [int(pk) for pk in re.findall(r'<tr data-run="(\d+)">', html)]


def test_the_list_searches_by_task_model_status_and_number(viewer):
    matmul, attention = make_task(), make_task("attention_fwd", target="cuda-sm90")
    a = make_run(matmul, model="claude-sonnet-4-6")
    b = make_run(attention, model="replay:agentloop/replays/demo.jsonl")
    c = make_run(attention, model="openai:qwen3-coder")
    run_set_status(run=c, status="failed", reason="no key")
    assert listed(viewer, q="attention") == [c.pk, b.pk]
    assert listed(viewer, q="QWEN") == [c.pk]
    assert listed(viewer, q="failed") == [c.pk]
    assert listed(viewer, q="queued") == [b.pk, a.pk]
    assert listed(viewer, q=f"#{a.pk}") == [a.pk]
    assert listed(viewer, q="attention", status="queued") == [b.pk]
    # The live refresh of the rows keeps the same search.
    rows = viewer.get(reverse("runs_rows"), {"q": "sonnet"}).content.decode()
    assert re.findall(r'<tr data-run="(\d+)">', rows) == [str(a.pk)]


def test_the_list_sorts_by_cost_duration_and_age_and_shows_both_columns(viewer):
    task = make_task()
    cheap, dear, long = make_run(task), make_run(task), make_run(task)
    now = timezone.now()
    Run.objects.filter(pk=cheap.pk).update(
        cost_usd=Decimal("0.01"), started_at=now - timedelta(minutes=2), finished_at=now
    )
    Run.objects.filter(pk=dear.pk).update(
        cost_usd=Decimal("3.5"), started_at=now - timedelta(minutes=5), finished_at=now
    )
    Run.objects.filter(pk=long.pk).update(started_at=now - timedelta(hours=2, seconds=3), finished_at=now)
    assert listed(viewer, sort="cost") == [dear.pk, cheap.pk, long.pk]
    assert listed(viewer, sort="duration") == [long.pk, dear.pk, cheap.pk]
    assert listed(viewer, sort="oldest") == [cheap.pk, dear.pk, long.pk]
    assert listed(viewer) == [long.pk, dear.pk, cheap.pk]
    html = viewer.get(reverse("home")).content.decode()
    assert ">Cost</th>" in html and ">Duration</th>" in html
    assert '<td class="cost narrow-hide">$3.5000</td>' in html
    assert (
        '<td class="duration narrow-hide">2h 00m 03s</td>' in html
        and '<td class="duration narrow-hide">5m 00s</td>' in html
    )


def test_the_list_shows_fifty_runs_a_page_with_links_that_keep_the_filters(viewer):
    task = make_task()
    runs = [make_run(task) for _ in range(120)]
    newest_first = [run.pk for run in reversed(runs)]
    assert listed(viewer) == newest_first[:50]
    assert listed(viewer, page=3) == newest_first[100:]
    html = viewer.get(reverse("home"), {"q": "matmul", "page": 2}).content.decode()
    assert "page 2 of 3 (120 runs)" in html
    assert 'href="?q=matmul&amp;page=3"' in html and 'href="?q=matmul&amp;page=1"' in html


def test_the_start_form_has_its_own_page_linked_above_the_list(client):
    task = make_task()
    for _ in range(60):
        make_run(task)
    client.force_login(make_user("olga", "operator"))
    html = client.get(reverse("home")).content.decode()
    assert 'id="start-run"' not in html
    assert html.index('id="start-run-link"') < html.index('<table class="runs">')
    start = client.get(reverse("run_start"))
    assert start.status_code == 200 and 'id="start-run-button"' in start.content.decode()
    client.force_login(make_user("vera"))
    assert 'id="start-run-link"' not in client.get(reverse("home")).content.decode()
    assert client.get(reverse("run_start")).status_code == 403
