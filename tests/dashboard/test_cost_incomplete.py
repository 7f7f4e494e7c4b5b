"""A run's cost where a model's price is unknown (docs/protocol.md 1.1: a usage event's `cost_usd` is null, never
invented): the run's total is a floor, and every page and export that shows it says so ("at least …"), whether a
worker sent the event or a trace import read it; a re-sent event marks nothing twice. Runs are made through the
real event store and trace import, pages through the views."""

import csv
import html
import importlib
import io
import json
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from questionbank.bank import load_bank
from questionbank.services import bank_sync
from runs.event_parser import Refusal, parse_event
from runs.models import Run, Step
from runs.services import run_claim, run_start, worker_events_record
from tests.dashboard.helpers import make_user, make_worker, usage_event
from tests.foundation.factories import make_task

pytestmark = pytest.mark.django_db

DEMO_TRACE = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"
FLOOR = "at least $0.0123 (a model's price is unknown)"


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def held_run(host):
    run = run_start(task=make_task(), model="claude-sonnet-4-6")
    assert run_claim(worker=host).pk == run.pk
    return run


def spend(run, host, seq, **counts):
    """A model call's usage event, stored as the server stores its worker's."""
    [outcome] = worker_events_record(items=[(host, usage_event(run.pk, seq, **counts))])
    assert outcome.stored, outcome.error
    return outcome


def shown(response) -> str:
    return html.unescape(response.content.decode())


def run_cost_cell(page: str) -> str:
    return re.search(r'id="run-cost"[^>]*>([^<]*)</dd>', page).group(1)


def listed_cost_cell(page: str, run_id: int) -> str:
    row = page[page.index(f'<tr data-run="{run_id}">') :].split("</tr>")[0]
    return re.search(r'<td class="cost[^"]*">([^<]*)</td>', row).group(1)


def compare_rows(client, runs, export: str) -> dict[int, dict]:
    url = reverse("run_compare") + f"?runs={','.join(str(r.pk) for r in runs)}&format={export}"
    response = client.get(url)
    rows = csv.DictReader(io.StringIO(response.content.decode())) if export == "csv" else response.json()["summary"]
    return {int(row["run_id"]): row for row in rows}


@pytest.fixture
def priced_and_unpriced():
    """Two worker runs that each spent $0.0123 on priced calls; the second also made a call whose model has no
    price (tokens, cost null)."""
    host, _ = make_worker()
    priced = held_run(host)
    spend(priced, host, 0, tokens_in=100, tokens_out=10, cost_usd=0.0123)
    unpriced = held_run(host)
    spend(unpriced, host, 0, tokens_in=100, tokens_out=10, cost_usd=0.0123)
    spend(unpriced, host, 1, tokens_in=2000, tokens_out=300, cost_usd=None)
    return Run.objects.get(pk=priced.pk), Run.objects.get(pk=unpriced.pk), host


def test_a_worker_run_with_an_unpriced_model_call_shows_its_cost_as_a_floor_everywhere(operator, priced_and_unpriced):
    priced, unpriced, _ = priced_and_unpriced
    # The totals' arithmetic is unchanged: the unpriced call adds its tokens and nothing to the cost.
    assert (unpriced.tokens_in, float(unpriced.cost_usd), unpriced.cost_incomplete) == (2100, 0.0123, True)
    assert run_cost_cell(shown(operator.get(reverse("run_detail", args=[unpriced.pk])))) == FLOOR
    summary = operator.get(reverse("run_summary", args=[unpriced.pk])).json()
    assert (summary["cost_usd"], summary["cost_complete"], summary["cost_text"]) == (0.0123, False, FLOOR)
    assert listed_cost_cell(shown(operator.get(reverse("home"))), unpriced.pk) == FLOOR
    compare_page = shown(operator.get(reverse("run_compare") + f"?runs={priced.pk},{unpriced.pk}"))
    assert f'<td class="cost cost-incomplete">{FLOOR}</td>' in compare_page
    assert compare_rows(operator, [priced, unpriced], "csv")[unpriced.pk]["cost_complete"] == "False"
    row = compare_rows(operator, [priced, unpriced], "json")[unpriced.pk]
    assert (row["cost_usd"], row["cost_complete"]) == (0.0123, False)


def test_a_run_with_only_priced_calls_shows_its_cost_as_complete(operator, priced_and_unpriced):
    priced, unpriced, _ = priced_and_unpriced
    assert not priced.cost_incomplete
    assert run_cost_cell(shown(operator.get(reverse("run_detail", args=[priced.pk])))) == "$0.0123"
    summary = operator.get(reverse("run_summary", args=[priced.pk])).json()
    assert (summary["cost_complete"], summary["cost_text"]) == (True, "$0.0123")
    assert listed_cost_cell(shown(operator.get(reverse("home"))), priced.pk) == "$0.0123"
    assert compare_rows(operator, [priced, unpriced], "csv")[priced.pk]["cost_complete"] == "True"
    assert compare_rows(operator, [priced, unpriced], "json")[priced.pk]["cost_complete"] is True


def test_a_resent_unpriced_call_changes_nothing_twice(priced_and_unpriced):
    _, unpriced, host = priced_and_unpriced
    before = Run.objects.values("step_count", "tokens_in", "tokens_out", "cost_usd", "cost_incomplete").get(
        pk=unpriced.pk
    )
    again = usage_event(unpriced.pk, 1, tokens_in=2000, tokens_out=300, cost_usd=None)
    # Alone, and twice in one batch: the same event, stored before, added to nothing.
    assert not spend(unpriced, host, 1, tokens_in=2000, tokens_out=300, cost_usd=None).created
    outcomes = worker_events_record(items=[(host, again), (host, again)])
    assert [(o.stored, o.created) for o in outcomes] == [(True, False), (True, False)]
    after = Run.objects.values(*before).get(pk=unpriced.pk)
    assert after == before
    # The same number with a price is another event, refused: a floor is not turned into a complete cost.
    [priced_again] = worker_events_record(items=[(host, usage_event(unpriced.pk, 1, tokens_in=2000, tokens_out=300))])
    assert priced_again.conflict and Run.objects.get(pk=unpriced.pk).cost_incomplete
    # A priced call after it adds its cost; the total stays a floor.
    spend(unpriced, host, 2, tokens_in=1, cost_usd=0.5)
    assert Run.objects.values_list("cost_incomplete", flat=True).get(pk=unpriced.pk) is True


def import_lines(client, records, name="run.jsonl") -> Run:
    known = set(Run.objects.values_list("pk", flat=True))
    text = "\n".join(json.dumps(r) for r in records)
    response = client.post(reverse("trace_import"), {"trace": SimpleUploadedFile(name, text.encode())})
    assert response.status_code == 302, shown(response)[:2000]
    return Run.objects.exclude(pk__in=known).get()


def demo_records(cost_usd: float | None) -> list[dict]:
    """The demo trace (its scripted model has no price: every usage event's cost is null), every call's cost
    set to `cost_usd`."""
    records = [json.loads(line) for line in DEMO_TRACE.read_text().splitlines() if line.strip()]
    for record in records:
        if record.get("kind") == "usage":
            record["payload"]["cost_usd"] = record["usage"]["cost_usd"] = cost_usd
    return records


def test_an_imported_trace_with_an_unpriced_call_shows_its_claimed_cost_as_a_floor(operator):
    make_task()
    bank_sync(load_bank())  # the demo's question names a bank entry
    unpriced = import_lines(operator, demo_records(None), "unpriced.jsonl")
    priced = import_lines(operator, demo_records(0.5), "priced.jsonl")
    assert (unpriced.cost_incomplete, priced.cost_incomplete) == (True, False)
    page = shown(operator.get(reverse("run_detail", args=[unpriced.pk])))
    assert run_cost_cell(page) == "at least $0.0000 (a model's price is unknown)"
    assert run_cost_cell(shown(operator.get(reverse("run_detail", args=[priced.pk])))) == "$3.0000"
    rows = compare_rows(operator, [unpriced, priced], "json")
    assert [(rows[r.pk]["cost_complete"], rows[r.pk]["usage"]) for r in (unpriced, priced)] == [
        (False, "the trace's claim"),
        (True, "the trace's claim"),
    ]


def test_an_exported_unpriced_run_imported_again_is_still_a_floor(operator, priced_and_unpriced):
    """The export writes an unpriced call's envelope cost as null, as its payload and the worker said it (a usage
    event's envelope repeats its payload: each exported event passes the worker's own strict reading), and the
    import reads it."""
    _, unpriced, _ = priced_and_unpriced
    body = b"".join(operator.get(reverse("trace_export", args=[unpriced.pk])).streaming_content).decode()
    records = [json.loads(line) for line in body.splitlines()]
    usage = [r for r in records if r.get("kind") == "usage"]
    assert [r["usage"]["cost_usd"] for r in usage] == [0.0123, None]
    for record in usage:
        read = parse_event(record, strict=True)
        assert not isinstance(read, Refusal), read
    again = import_lines(operator, records, "export.jsonl")
    assert (float(again.cost_usd), again.cost_incomplete) == (0.0123, True)


def test_an_exported_call_priced_to_eight_places_imports_again_as_the_worker_sent_it(operator):
    """The worker's price has 8 places (agentloop/prices.py), the stored cost 6: the export repeats the payload's,
    so its usage event's envelope still repeats its payload, as the import requires (docs/protocol.md 1.1)."""
    host, _ = make_worker()
    run = held_run(host)
    spend(run, host, 0, tokens_in=100, tokens_out=10, cost_usd=0.00123456)
    body = b"".join(operator.get(reverse("trace_export", args=[run.pk])).streaming_content).decode()
    records = [json.loads(line) for line in body.splitlines()]
    [call] = [r for r in records if r.get("kind") == "usage"]
    assert call["usage"] == {"tokens_in": 100, "tokens_out": 10, "cost_usd": 0.00123456}
    again = import_lines(operator, records, "export.jsonl")
    assert (again.tokens_in, str(again.cost_usd), again.cost_incomplete) == (100, "0.001235", False)


def test_the_migration_marks_runs_stored_before_it(priced_and_unpriced):
    priced, unpriced, _ = priced_and_unpriced
    Run.objects.update(cost_incomplete=False)
    assert Step.objects.filter(run=unpriced, kind="usage").count() == 2
    migration = importlib.import_module("runs.migrations.0026_run_cost_incomplete")
    migration.mark_runs_with_unpriced_usage(apps, None)
    marked = dict(Run.objects.filter(pk__in=[priced.pk, unpriced.pk]).values_list("pk", "cost_incomplete"))
    assert marked == {priced.pk: False, unpriced.pk: True}
