"""The event store's edges (runs/services/steps.py), through the worker socket's batch path (`events` / `acks` /
`nack`) and, where a test needs to see inside one call, through the service the socket's writer calls
(worker_events_record) or step_record; on whichever database the suite runs on (CI runs it on SQLite and on
PostgreSQL). Each test kills a change to the store that the rest of the suite let through (docs/testing.md,
"Mutation testing"): a run's totals overwritten instead of added, its last seq moved backwards, bad data stored
and acked, a database's refusal answered as success (the worker would then drop an event that was never stored),
a re-sent event taken for another, an event another process stored meanwhile answered wrongly."""

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.db import DataError, IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from runs.event_parser import ParsedEvent
from runs.models import Evaluation, RefusedEvent, Run, Step
from runs.nul_escape import unescape_nul
from runs.services import ServiceError, StepConflict, events_store, run_claim, step_record, worker_events_record
from runs.services import steps as store
from tests.dashboard.helpers import connected_worker, evaluation_payload, event, make_worker, usage_event
from tests.dashboard.test_worker_socket import answers_for, batch, claimed_run
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)


NOTE = {"text": "a note", "level": "info"}


async def stored(run) -> tuple:
    row = await sync_to_async(Run.objects.get)(pk=run.pk)
    return row.step_count, row.last_seq, row.tokens_in, row.tokens_out, row.cost_usd


async def test_a_runs_totals_are_added_batch_after_batch_and_its_last_seq_never_moves_back():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(batch(usage_event(run.pk, 5, tokens_in=3, cost_usd=0.25)))
    assert (await answers_for(socket, 1))[0] == [(run.pk, 5)]
    # seqs below the last one arrive after it (a worker's spool resent after a reconnect)
    await socket.send_json_to(
        batch(
            usage_event(run.pk, 2, tokens_in=4, tokens_out=1, cost_usd=0.5),
            usage_event(run.pk, 3, tokens_out=2, cost_usd=0.125),
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
            usage_event(run.pk, 0, tokens_in=1),
            {**usage_event(run.pk, 1, tokens_in=100), **bad},
            usage_event(run.pk, 2, tokens_in=1),
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


async def test_a_string_no_database_can_hold_is_refused_in_words_on_every_database():
    # A lone surrogate, which JSON's \\u escapes can spell: PostgreSQL's jsonb refused the row and SQLite stored
    # it, so the two answered differently; the parser now refuses it on both, naming the field. (A NUL character,
    # which PostgreSQL refused the same way, is escaped before it reaches the database: below.)
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "note", {"text": "before", "level": "info"}),
            event(run.pk, 1, "note", {"text": LONE_SURROGATE, "level": "info"}),
            event(run.pk, 2, "note", {"text": "after", "level": "info"}),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    seqs = await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", flat=True).order_by("seq"))
    assert sorted(acked) == [(run.pk, 0), (run.pk, 2)] and seqs == [0, 2]
    [nack] = nacks
    assert (nack["seq"], nack["retry"]) == (1, False)
    assert nack["error"].startswith("payload.text holds "), nack["error"]
    assert "a lone surrogate" in nack["error"]
    kept = await sync_to_async(list)(RefusedEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert kept == [1]
    await socket.disconnect()


LONE_SURROGATE = "a lone \ud800 surrogate"
TOOL_RESULT = {"call_id": "c1", "name": "shell", "is_error": False, "truncated_chars": 0, "duration_s": 0.1}
BINARY_OUTPUT = {**TOOL_RESULT, "output": "[exit code 0]\na\u0000b", "exit_code": 0}  # printf 'a\000b'
BINARY_STORED = {
    **TOOL_RESULT,
    "output": "[exit code 0]\na\u2400b",
    "exit_code": 0,
    "escaped_nul": {"/output": [[15, 1]]},
}


async def test_an_event_holding_a_nul_character_is_stored_escaped_on_every_database_and_its_resend_is_the_same():
    # On 62245a7 PostgreSQL's jsonb refused it for good ("unsupported Unicode escape sequence"): binary shell
    # output lost. Now it is escaped (runs/nul_escape.py) on SQLite and PostgreSQL alike, and given back exactly.
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    sent = [
        event(run.pk, 0, "note", {"text": "before", "level": "info"}),
        event(run.pk, 1, "tool_result", BINARY_OUTPUT),
        event(run.pk, 2, "note", {"text": "a NUL \u0000\u0000 and a \u2400 here", "level": "info"}),
    ]
    await socket.send_json_to(batch(*sent))
    acked, nacks = await answers_for(socket, 3)
    assert nacks == [] and sorted(acked) == [(run.pk, 0), (run.pk, 1), (run.pk, 2)]
    rows = await sync_to_async(list)(Step.objects.filter(run=run).order_by("seq").values_list("payload", flat=True))
    assert rows[1] == BINARY_STORED
    assert rows[2] == {
        "text": "a NUL \u2400\u2400 and a \u2400 here",
        "level": "info",
        "escaped_nul": {"/text": [[6, 2]]},
    }
    assert [unescape_nul(p) for p in rows] == [e["payload"] for e in sent]  # a literal ␀ stays one
    assert not await sync_to_async(RefusedEvent.objects.filter(run=run).exists)()
    # the worker's re-send after a lost ack is the same event, not a conflict
    await socket.send_json_to(batch(sent[1]))
    assert await answers_for(socket, 1) == ([(run.pk, 1)], [])
    await socket.disconnect()


async def test_a_resent_payload_with_its_keys_in_another_order_is_the_same_event():
    # A JSON object's keys have no order (PostgreSQL's jsonb hands them back in its own), so a worker that
    # re-serialises its spool re-sends the same event, in a later batch or twice in one.
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(batch(event(run.pk, 0, "note", {"text": "t", "level": "info", "to_model": False})))
    assert (await answers_for(socket, 1))[0] == [(run.pk, 0)]
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "note", {"to_model": False, "level": "info", "text": "t"}),
            event(run.pk, 1, "note", {"text": "t", "level": "info", "to_model": False}),
            event(run.pk, 1, "note", {"to_model": False, "level": "info", "text": "t"}),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    assert nacks == [] and sorted(acked) == [(run.pk, 0), (run.pk, 1), (run.pk, 1)]
    assert (await stored(run))[:2] == (2, 1)
    await socket.disconnect()


async def test_a_different_event_under_a_used_seq_is_nacked_naming_the_run_the_seq_and_the_kind_it_holds():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(batch(event(run.pk, 4, "note", {"text": "first", "level": "info"})))
    assert (await answers_for(socket, 1))[0] == [(run.pk, 4)]
    # one against the stored step, one against an earlier event of the same batch
    await socket.send_json_to(
        batch(
            event(run.pk, 4, "tool_call", {"call_id": "c1", "name": "shell", "input": {}}),
            event(run.pk, 6, "model_message", MODEL_MESSAGE),
            event(run.pk, 6, "note", {"text": "two", "level": "info"}),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    assert acked == [(run.pk, 6)]
    assert [(n["seq"], n["error"], n["retry"]) for n in nacks] == [
        (4, f"run {run.pk} already has a different step #4 (note)", False),
        (6, f"run {run.pk} already has a different step #6 (model_message)", False),
    ]
    await socket.disconnect()


MODEL_MESSAGE = {
    "purpose": "turn",
    "model": "m",
    "stop_reason": "end_turn",
    "content": [{"type": "text", "text": "one"}],
}


async def test_an_evaluation_keeps_its_verdicts_times_and_one_with_a_garbage_time_is_refused_with_the_reason():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    no_offset = evaluation_payload(1.5)
    no_offset["result"] |= {"started_at": "2026-11-30T12:00:00", "finished_at": "2026-11-30T12:00:05"}
    garbage = evaluation_payload(1.5)
    garbage["result"]["started_at"] = "yesterday"
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "evaluation", evaluation_payload(1.2)),
            event(run.pk, 1, "evaluation", no_offset),
            event(run.pk, 2, "evaluation", garbage),
        )
    )
    acked, nacks = await answers_for(socket, 3)
    assert sorted(acked) == [(run.pk, 0), (run.pk, 1)]
    assert [(n["seq"], n["error"], n["retry"]) for n in nacks] == [(2, "not an ISO 8601 timestamp: 'yesterday'", False)]
    verdicts = await sync_to_async(list)(
        Evaluation.objects.filter(run=run).order_by("step__seq").values_list("verdict", flat=True)
    )
    times = [(datetime.fromisoformat(v["started_at"]), datetime.fromisoformat(v["finished_at"])) for v in verdicts]
    # the verdict's own times, a time without an offset read as UTC (as the parser reads an event's `ts`)
    expected = (datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC), datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC))
    assert times == [expected, expected]
    await socket.disconnect()


async def test_an_event_of_the_wrong_shape_for_its_kind_is_refused_saying_what_was_wrong():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    payload = evaluation_payload(1.2)
    del payload["result"]["scenarios"][1]["id"]
    await socket.send_json_to(batch(event(run.pk, 0, "evaluation", payload)))
    _, [nack] = await answers_for(socket, 1)
    # In words, naming the field (trace audit 13), not as the exception's repr (it was KeyError('id')).
    assert (nack["error"], nack["retry"]) == (
        "each of a verdict's scenarios must be an object with its id (result.scenarios)",
        False,
    )
    await socket.disconnect()


async def test_an_event_with_effects_is_applied_to_its_own_runs_step_when_another_run_has_the_same_seq():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    other = await sync_to_async(make_run)()
    await sync_to_async(step_record)(run=other, seq=0, kind="note", payload=NOTE)
    await socket.send_json_to(batch(event(run.pk, 0, "evaluation", evaluation_payload(1.7))))
    assert (await answers_for(socket, 1)) == ([(run.pk, 0)], [])
    evaluation = await sync_to_async(Evaluation.objects.select_related("step").get)(run=run)
    assert (evaluation.step.run_id, evaluation.step.seq) == (run.pk, 0)
    await socket.disconnect()


# ------------------------------------------------------------------------------ step_record, the service itself


@pytest.mark.django_db
def test_a_step_recorded_without_usage_adds_no_tokens_and_no_cost():
    run = make_run()
    recorded = step_record(run=run, seq=0, kind="note", payload=NOTE)
    assert (recorded.step.tokens_in, recorded.step.tokens_out, recorded.step.cost_usd) == (0, 0, Decimal(0))
    run.refresh_from_db()
    assert (run.step_count, run.tokens_in, run.tokens_out, run.cost_usd) == (1, 0, 0, Decimal(0))


@pytest.mark.django_db
def test_a_step_recorded_with_a_time_keeps_it():
    when = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
    assert step_record(run=make_run(), seq=0, kind="note", payload=NOTE, created_at=when).step.created_at == when


@pytest.mark.django_db
def test_step_record_refuses_a_different_step_under_a_used_seq_naming_the_step_that_holds_it():
    run = make_run()
    step_record(run=run, seq=3, kind="tool_call", payload={"call_id": "c1", "name": "shell", "input": {}})
    with pytest.raises(StepConflict) as refused:
        step_record(run=run, seq=3, kind="note", payload=NOTE)
    assert str(refused.value) == f"run {run.pk} already has a different step #3 (tool_call)"


@pytest.mark.django_db
def test_step_record_gives_back_its_own_runs_step_when_another_run_has_the_same_seq():
    first, second = make_run(), make_run()
    step_record(run=first, seq=0, kind="note", payload={"text": "first", "level": "info"})
    recorded = step_record(run=second, seq=0, kind="note", payload={"text": "second", "level": "info"})
    assert recorded.created and (recorded.step.run_id, recorded.step.payload) == (
        second.pk,
        {"text": "second", "level": "info"},
    )


@pytest.mark.django_db
def test_step_record_refuses_a_step_no_database_can_hold_on_every_database():
    run = make_run()
    payload = {"text": LONE_SURROGATE, "level": "info"}
    with pytest.raises(ServiceError, match="payload.text holds .*a lone surrogate"):
        step_record(run=run, seq=0, kind="note", payload=payload)
    assert not Step.objects.filter(run=run).exists()


@pytest.mark.django_db
def test_step_record_stores_a_nul_character_escaped_on_every_database_and_refuses_a_key_holding_one():
    run = make_run()
    assert step_record(run=run, seq=0, kind="tool_result", payload=BINARY_OUTPUT).step.payload == BINARY_STORED
    with pytest.raises(ServiceError, match="a payload key holds a NUL character"):
        # a key inside a declared field (an undeclared top-level key is refused before: event_types)
        step_record(
            run=run, seq=1, kind="tool_call", payload={"call_id": "c1", "name": "x", "input": {"te\u0000xt": 1}}
        )
    with pytest.raises(ServiceError, match="escaped_nul"):
        step_record(run=run, seq=1, kind="note", payload={"text": "\u0000", "level": "info", "escaped_nul": {}})
    assert list(Step.objects.filter(run=run).values_list("seq", flat=True)) == [0]


def test_a_database_refusal_is_told_by_the_first_line_of_its_message_cut_at_200_characters():
    # the refusal the worker is sent and its run keeps; PostgreSQL's messages add DETAIL and CONTEXT lines
    refused = DataError("  " + "x" * 300 + "\nDETAIL:  the value is too long\n")
    assert store.refusal_of_database_error(refused) == "the database cannot store this event: " + "x" * 200


# ------------------------------------------------------- one call's reads and writes (worker_events_record)


def held_runs(count: int):
    """A worker host and `count` runs it holds, oldest (lowest id) first."""
    host, _ = make_worker()
    for _ in range(count):
        make_run()
    return host, [run_claim(worker=host) for _ in range(count)]


def store_events(host, *events: dict):
    return worker_events_record(items=[(host, e) for e in events])


def statements(queries, verb: str) -> int:
    """How many of the captured statements are `verb` (SELECT, INSERT) statements on the steps' table (an
    executemany counts once: Django logs it as one)."""
    table = re.escape(Step._meta.db_table)
    pattern = {"SELECT": rf'^SELECT .* FROM "?{table}"?', "INSERT": rf'^(\d+ times: )?INSERT INTO "?{table}"?'}[verb]
    return sum(1 for q in queries if re.search(pattern, q["sql"]))


@pytest.mark.django_db
def test_a_batch_without_repeats_reads_the_stored_steps_keys_once_and_inserts_its_rows_in_one_statement():
    # The filter on (run in the call's runs, seq in the call's seqs) also matches stored steps that are no repeat
    # (here the first run's seq 1, crossed with the second run's): those are not read further.
    host, (first, second) = held_runs(2)
    store_events(host, event(first.pk, 0, "note", NOTE), event(first.pk, 1, "note", NOTE))
    with CaptureQueriesContext(connection) as queries:
        outcomes = store_events(host, event(first.pk, 2, "note", NOTE), event(second.pk, 1, "note", NOTE))
    assert [(o.stored, o.created) for o in outcomes] == [(True, True), (True, True)]
    assert (statements(queries, "SELECT"), statements(queries, "INSERT")) == (1, 1)


@pytest.mark.django_db
def test_a_resent_batch_is_answered_from_what_is_stored_without_trying_to_insert_it_again():
    host, (first, second) = held_runs(2)
    # seqs no run id of the test database equals, so that a run id looked for among the seqs finds nothing
    sent = [
        event(first.pk, 9000, "note", NOTE),
        event(second.pk, 9001, "note", NOTE),
        event(first.pk, 9002, "note", NOTE),
    ]
    store_events(host, *sent)
    with CaptureQueriesContext(connection) as queries:
        outcomes = store_events(host, *sent)
    assert [(o.stored, o.created, o.error) for o in outcomes] == [(True, False, "")] * 3
    # the keys, then the fields of the repeats; no insert that the database refuses
    assert (statements(queries, "SELECT"), statements(queries, "INSERT")) == (2, 0)


@pytest.mark.django_db
def test_the_same_event_twice_in_one_batch_is_inserted_once_without_a_refused_insert():
    host, [run] = held_runs(1)
    with CaptureQueriesContext(connection) as queries:
        outcomes = store_events(
            host,
            event(run.pk, 0, "note", {"text": "0", "level": "info"}),
            event(run.pk, 0, "note", {"text": "0", "level": "info"}),
        )
    assert [(o.stored, o.created) for o in outcomes] == [(True, True), (True, False)]
    assert statements(queries, "INSERT") == 1
    run.refresh_from_db()
    assert run.step_count == 1


# ------------------------------------------ an event stored by another process between the look and the insert


def another_process_stores(monkeypatch, *rows: Step) -> None:
    """Make another process commit `rows` (unsaved steps) between the store's look at what is stored and its
    insert: on PostgreSQL two writers can interleave so (SQLite's one writer holds the lock the whole time)."""
    look = store._drop_repeats

    def look_then_another_process_stores(events, outcomes):
        fresh = look(events, outcomes)
        for row in rows:
            row.save()
        return fresh

    monkeypatch.setattr(store, "_drop_repeats", look_then_another_process_stores)


def as_stored(run, sent: dict) -> Step:
    """The step another process would have stored for the event message `sent`."""
    return Step(
        run=run,
        seq=sent["seq"],
        kind=sent["kind"],
        payload=sent["payload"],
        created_at=datetime.fromisoformat(sent["ts"]),
        tokens_in=sent["usage"]["tokens_in"],
        tokens_out=sent["usage"]["tokens_out"],
        cost_usd=Decimal(str(sent["usage"]["cost_usd"])),
    )


@pytest.mark.django_db
@pytest.mark.parametrize("other_run", ["older", "newer"])
def test_an_event_another_process_stored_meanwhile_is_acked_as_stored_before_and_the_rest_of_its_batch_stored(
    monkeypatch, other_run
):
    # Another run holds a different step #1 (older or newer: either comes first in some order of the steps):
    # only this run's own step #1 is the one to compare with.
    host, (older, newer) = held_runs(2)
    other, run = (older, newer) if other_run == "older" else (newer, older)
    store_events(host, event(other.pk, 1, "note", {"text": "the other run's", "level": "info"}))
    another_process_stores(monkeypatch, as_stored(run, usage_event(run.pk, 1, tokens_in=20, cost_usd=0.5)))
    outcomes = store_events(
        host,
        usage_event(run.pk, 0, tokens_in=1),
        usage_event(run.pk, 1, tokens_in=20, cost_usd=0.5),
        usage_event(run.pk, 2, tokens_in=300),
    )
    assert [(o.stored, o.created, o.error) for o in outcomes] == [(True, True, ""), (True, False, ""), (True, True, "")]
    assert list(Step.objects.filter(run=run).values_list("seq", flat=True)) == [0, 1, 2]
    run.refresh_from_db()
    # this call moved the totals for the two steps it inserted (the other process moves them for its own)
    assert (run.step_count, run.last_seq, run.tokens_in, run.cost_usd) == (2, 2, 301, Decimal(0))


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["note", "evaluation"])
def test_a_different_event_another_process_stored_meanwhile_is_refused_as_a_conflict(monkeypatch, kind):
    # a plain event (the batch insert fails, then one by one) and one with effects (stored alone)
    host, (other, run) = held_runs(2)
    store_events(host, event(other.pk, 0, "note", NOTE))
    another_process_stores(
        monkeypatch, as_stored(run, event(run.pk, 0, "tool_call", {"call_id": "c1", "name": "shell", "input": {}}))
    )
    payload = evaluation_payload(1.3) if kind == "evaluation" else {"text": "mine", "level": "info"}
    [outcome] = store_events(host, event(run.pk, 0, kind, payload))
    assert (outcome.stored, outcome.conflict) == (False, True)
    assert outcome.error == f"run {run.pk} already has a different step #0 (tool_call)"
    assert Step.objects.get(run=run, seq=0).kind == "tool_call" and not Evaluation.objects.filter(run=run).exists()


@pytest.mark.django_db
def test_the_same_evaluation_another_process_stored_meanwhile_is_acked_without_applying_it_again(monkeypatch):
    host, [run] = held_runs(1)
    another_process_stores(monkeypatch, as_stored(run, event(run.pk, 0, "evaluation", evaluation_payload(1.3))))
    [outcome] = store_events(host, event(run.pk, 0, "evaluation", evaluation_payload(1.3)))
    assert (outcome.stored, outcome.created) == (True, False)
    assert not Evaluation.objects.filter(run=run).exists()  # the other process applies what it stored


@pytest.mark.django_db(transaction=True)
def test_a_clash_that_is_no_stored_copy_of_the_event_is_raised_and_nothing_of_its_call_is_stored():
    # A row the database refuses for another reason than its (run, seq): not answered as stored before, nor as
    # refused for good; the whole call fails (the worker socket answers "server error", retry: the worker keeps
    # the events). The parser refuses negative counts before they reach the store: here the column's check does.
    run = make_run()
    when = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    good = ParsedEvent(run.pk, 0, "note", NOTE, when, 1, 0, Decimal(0))
    bad = ParsedEvent(run.pk, 1, "note", NOTE, when, -1, 0, Decimal(0))
    with pytest.raises(IntegrityError):
        events_store([good, bad], effects={})
    assert not Step.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert (run.step_count, run.tokens_in) == (0, 0)
