"""A run's page says how it ended when a replay played its whole recording (stopped, not failed), and marks a run
imported from a trace; every import of the same original run remembers that one origin."""

import json

import pytest
from django.urls import reverse

from runs.models import Run
from runs.run_pages.selectors import trace_export_records
from runs.services import run_claim, trace_import, worker_events_record
from tests.dashboard.helpers import event, make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    client.force_login(make_user("vera"))
    return client


def test_a_replay_that_played_its_whole_recording_is_shown_stopped_with_why(viewer):
    host, _ = make_worker()
    make_run(model="replay:agentloop/replays/matmul_cpu_demo.jsonl")
    run = run_claim(worker=host)
    ended = {
        "status": "stopped",
        "reason": "replay_finished",
        "detail": "the recording has no more turns (the recorded run ended succeeded goal_met)",
    }
    [outcome] = worker_events_record(items=[(host, event(run.pk, 0, "status", ended))])
    assert outcome.stored
    page = viewer.get(reverse("run_detail", args=[run.pk])).content.decode()
    status = page[page.index('id="run-status"') :].split("</dd>")[0]
    assert "Stopped" in status and "Failed" not in status
    assert "replay_finished: the recording has no more turns" in status


def trace_lines(task_name: str, run_id="local-1") -> list[str]:
    events = [
        event(run_id, 0, "status", {"status": "running", "reason": "started", "config": {"task": task_name}}),
        event(run_id, 1, "note", {"text": "hello", "level": "info"}),
        event(run_id, 2, "status", {"status": "stopped", "reason": "stopped_by_human"}),
    ]
    return [json.dumps({k: v for k, v in e.items() if k != "type"}) for e in events]


def test_an_imported_run_is_marked_imported_on_its_page_and_in_the_runs_list(viewer):
    task = make_run().task
    native = Run.objects.get()
    imported = trace_import(lines=trace_lines(task.name), name="session.jsonl")
    assert imported.imported_from == "trace session.jsonl" and not native.imported_from
    page = viewer.get(reverse("run_detail", args=[imported.pk])).content.decode()
    assert 'id="run-imported"' in page and "Imported from trace session.jsonl" in page
    assert 'id="run-imported"' not in viewer.get(reverse("run_detail", args=[native.pk])).content.decode()
    rows = viewer.get(reverse("home")).content.decode()
    row = rows[rows.index(f'<tr data-run="{imported.pk}"') :].split("</tr>")[0]
    assert 'class="imported"' in row
    native_row = rows[rows.index(f'<tr data-run="{native.pk}"') :].split("</tr>")[0]
    assert 'class="imported"' not in native_row


def test_every_import_of_one_original_run_has_the_same_origin():
    host, _ = make_worker()
    task = make_run().task
    native = run_claim(worker=host)
    [outcome] = worker_events_record(items=[(host, event(native.pk, 0, "note", {"text": "ran here", "level": "info"}))])
    assert outcome.stored
    first = trace_import(lines=trace_lines(task.name), name="a.jsonl")
    again = trace_import(lines=trace_lines(task.name), name="b.jsonl")
    other = trace_import(lines=trace_lines(task.name, run_id="local-2"), name="c.jsonl")
    assert first.origin == again.origin != other.origin
    # An export of a run, imported, and that import exported and imported again: one origin, the native run's.
    export = [json.dumps(r, default=str) for r in trace_export_records(native)]
    copy = trace_import(lines=export, name="export.jsonl")
    copy_of_copy = trace_import(lines=[json.dumps(r, default=str) for r in trace_export_records(copy)], name="x.jsonl")
    assert copy.origin == copy_of_copy.origin == f"run:{native.pk}:{native.created_at.isoformat()}"
    assert f"an export of run {copy.pk}, itself imported from" in copy_of_copy.imported_from
