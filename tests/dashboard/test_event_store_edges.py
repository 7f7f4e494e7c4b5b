"""The event store's edges, through the worker socket's batch path (`events` / `acks` / `nack`), on whichever
database the suite runs on (CI runs it on SQLite and on PostgreSQL). Each test kills a change to the store that
the rest of the suite let through (docs/testing.md): a run's totals overwritten instead of added, its last seq
moved backwards, bad data stored and acked, or a database's refusal answered as success (the worker would then
drop an event that was never stored)."""

from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from runs.models import RefusedEvent, Run, Step
from tests.dashboard.helpers import connected_worker, event, make_worker
from tests.dashboard.test_worker_socket import answers_for, batch, claimed_run

pytestmark = pytest.mark.django_db(transaction=True)


async def stored(run) -> tuple:
    row = await sync_to_async(Run.objects.get)(pk=run.pk)
    return row.step_count, row.last_seq, row.tokens_in, row.tokens_out, row.cost_usd


async def test_a_runs_totals_are_added_batch_after_batch_and_its_last_seq_never_moves_back():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(batch(event(run.pk, 5, "note", {"text": "late"}, tokens_in=3, cost_usd=0.25)))
    assert (await answers_for(socket, 1))[0] == [(run.pk, 5)]
    # seqs below the last one arrive after it (a worker's spool resent after a reconnect)
    await socket.send_json_to(
        batch(
            event(run.pk, 2, "note", {"text": "two"}, tokens_in=4, tokens_out=1, cost_usd=0.5),
            event(run.pk, 3, "note", {"text": "three"}, tokens_out=2, cost_usd=0.125),
        )
    )
    assert sorted((await answers_for(socket, 2))[0]) == [(run.pk, 2), (run.pk, 3)]
    assert await stored(run) == (3, 5, 7, 3, Decimal("0.875"))
    await socket.disconnect()


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ({"kind": "no_such_kind"}, "unknown step kind"),
        ({"payload": ["not", "an", "object"]}, "payload must be a JSON object"),
        ({"payload": "text"}, "payload must be a JSON object"),
        ({"ts": "not a time"}, "not an ISO 8601 timestamp"),
        ({"ts": "2026-13-45T99:00:00Z"}, "timestamp"),
        ({"seq": -1}, "seq must be a non-negative integer"),
        ({"seq": 2**31}, "seq must be at most"),
        ({"usage": {"tokens_in": True}}, "usage.tokens_in"),
        ({"usage": {"cost_usd": "free"}}, "usage.cost_usd"),
    ],
)
async def test_bad_data_in_a_batch_is_refused_for_good_alone_and_nothing_of_it_is_stored(bad, why):
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "note", {"text": "fine"}, tokens_in=1),
            {**event(run.pk, 1, "note", {"text": "bad"}, tokens_in=100), **bad},
            event(run.pk, 2, "note", {"text": "fine too"}, tokens_in=1),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    assert sorted(acked) == [(run.pk, 0), (run.pk, 2)]
    [nack] = nacks
    assert nack["retry"] is False and why in nack["error"], nack
    steps = await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", flat=True).order_by("seq"))
    assert steps == [0, 2]
    assert (await stored(run))[:3] == (2, 2, 2)
    await socket.disconnect()


async def test_a_string_the_database_cannot_hold_is_refused_on_postgresql_and_stored_where_it_can_be():
    # PostgreSQL's jsonb cannot hold a NUL character; SQLite can. Either way the worker's answer must be the truth.
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "note", {"text": "before"}),
            event(run.pk, 1, "note", {"text": "a NUL \u0000 here"}),
            event(run.pk, 2, "note", {"text": "after"}),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    seqs = await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", flat=True).order_by("seq"))
    if connection.vendor == "postgresql":
        assert sorted(acked) == [(run.pk, 0), (run.pk, 2)] and seqs == [0, 2]
        [nack] = nacks
        assert nack["seq"] == 1 and nack["retry"] is False and "the database cannot store" in nack["error"]
        kept = await sync_to_async(list)(RefusedEvent.objects.filter(run=run).values_list("seq", flat=True))
        assert kept == [1]
    else:
        assert sorted(acked) == [(run.pk, 0), (run.pk, 1), (run.pk, 2)] and nacks == [] and seqs == [0, 1, 2]
    await socket.disconnect()
