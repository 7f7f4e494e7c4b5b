"""What a run's page says about why: its status reason, a host whose token was revoked, the events the server
refused; and the confirmation an operator gives before revoking a host."""

import pytest
from django.urls import reverse

from runs.models import RefusedEvent, WorkerHost
from runs.services import event_refusal_record, run_claim, trace_import, worker_events_record
from tests.dashboard.helpers import evaluation_payload, event, make_user, make_worker
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    client.force_login(make_user("olga", "operator"))
    return client


def held_run():
    host, _ = make_worker()
    make_run()
    return host, run_claim(worker=host)


def test_revoking_a_host_asks_first_and_says_what_it_does_to_its_runs(operator):
    host, run = held_run()
    workers_page = operator.get(reverse("workers")).content.decode()
    assert f'href="{reverse("worker_revoke", args=[host.pk])}"' in workers_page  # a link to the question, no form
    confirm = operator.get(reverse("worker_revoke", args=[host.pk])).content.decode()
    host.refresh_from_db()
    assert host.revoked_at is None, "looking at the confirmation revoked the host"
    assert f"Revoke the token of {host.name}?" in confirm and f"#{run.pk}" in confirm
    assert 'id="confirm-revoke"' in confirm
    operator.post(reverse("worker_revoke", args=[host.pk]))
    host.refresh_from_db()
    assert host.revoked_at is not None
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "its token was revoked" in page
    summary = operator.get(reverse("run_summary", args=[run.pk])).json()
    assert summary["worker_revoked"] is True


def test_a_run_page_shows_why_it_ended_in_its_header_and_summary(operator):
    host, run = held_run()
    ended = event(
        run.pk,
        0,
        "status",
        {"status": "failed", "reason": "model_error", "detail": "the model API answered 400: bad request"},
    )
    [outcome] = worker_events_record(items=[(host, ended)])
    assert outcome.stored
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert '<span class="status-reason">(model_error: the model API answered 400: bad request)</span>' in page
    assert operator.get(reverse("run_summary", args=[run.pk])).json()["status_reason"] == (
        "model_error: the model API answered 400: bad request"
    )


def test_a_run_page_lists_the_events_the_server_refused(operator):
    host, run = held_run()
    event_refusal_record(
        worker=host,
        event=event(run.pk, 7, "evaluation", {}),
        size_bytes=5 * 2**20,
        error="an event of 5242880 bytes is over the server's limit of 4194304 bytes",
    )
    other, _ = make_worker("gpu-b")
    # Another host cannot write on this run's page.
    assert event_refusal_record(worker=other, event=event(run.pk, 8, "note", {}), error="x") is None
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'id="refused-events"' in page and "#7 (evaluation, 5.0\xa0MB)" in page and "over the server" in page
    assert list(RefusedEvent.objects.values_list("seq", flat=True)) == [7]
    assert WorkerHost.objects.count() == 2


def test_a_refused_event_under_a_number_the_feed_holds_is_shown_as_a_different_event(operator):
    """The audit's page: "#0 (status): run 5 already has a different step #0" while step #0 is in the feed. The
    page says no more that the feed has no step under a refused number; it says which refusals share their
    number with a stored step, another event."""
    host, run = held_run()
    first = event(run.pk, 0, "note", {"text": "stored", "level": "info"})
    outcomes = worker_events_record(
        items=[(host, first), (host, first | {"payload": {"text": "changed", "level": "info"}})]
        + [(host, event(run.pk, 1, "evaluation", {"purpose": "tool", "result": "no object"}))]
    )
    assert [o.stored for o in outcomes] == [True, False, False]
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "the feed has no step under their numbers" not in page
    assert "already has a different step #0" in page
    assert page.count("in the feed is a different event)") == 1 and "(step #0 in the feed is a different event)" in page
    worker_events_record(items=[(host, event(run.pk, 1, "note", {"text": "sent again", "level": "info"}))])
    page = operator.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "(step #1 in the feed is a different event)" in page


@pytest.mark.parametrize("speedup, status", [(2.5, "succeeded"), (1.5, "failed")])
def test_an_imported_trace_that_says_succeeded_is_shown_succeeded_only_when_an_evaluation_in_it_confirms_it(
    speedup, status
):
    import json

    task = make_run().task
    events = [
        event(1, 0, "status", {"status": "running", "reason": "started", "config": {"task": task.name}}),
        event(1, 1, "evaluation", evaluation_payload(speedup) | {"scenario_set": "full"}),
        event(1, 2, "status", {"status": "succeeded", "reason": "goal_met"}),
    ]
    run = trace_import(lines=[json.dumps({k: v for k, v in e.items() if k != "type"}) for e in events], name="t")
    assert run.status == status
    if status == "failed":
        assert "no evaluation in it confirms the goal" in run.status_reason
