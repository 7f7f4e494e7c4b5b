"""The event path's single pieces: the parser's refusals, the one announcement shape, and the protocol's words held
equal on both halves (agentloop/protocol.py, which the agent writes with, and the server's models and parser)."""

import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from agentloop import protocol
from agentloop.console import ConsoleSink
from agentloop.events import make_event
from gpu_harness.result import STATUSES as HARNESS_STATUSES
from runs.event_parser import INT_COLUMN_MAX, STEP_COST_LIMIT, ParsedEvent, Refusal, parse_event
from tests.dashboard.helpers import evaluation_payload, event, make_worker, question_payload
from tests.payloads import MINIMAL


def good(**fields) -> dict:
    """A note, its usage all zero as on every kind but usage (docs/protocol.md 1.1)."""
    return {**event(7, 3, "note", {"text": "hi", "level": "info"}), **fields}


USAGE_PAYLOAD = {"purpose": "turn", "model": "m", "tokens_in": 5, "tokens_out": 2, "cost_usd": 0.25}


# No django_db mark: the parser is pure, and a test that touched the database here would fail.
def test_a_well_formed_event_is_parsed_with_every_field():
    parsed = parse_event(event(7, 3, "usage", USAGE_PAYLOAD, **USAGE_PAYLOAD))
    assert parsed == ParsedEvent(
        run_id=7,
        seq=3,
        kind="usage",
        payload=USAGE_PAYLOAD,
        created_at=datetime(2026, 11, 30, 12, 0, 3, tzinfo=UTC),
        tokens_in=5,
        tokens_out=2,
        cost_usd=Decimal("0.25"),
    )
    # The run named by the caller (a trace import) wins over the event's own; no time and no usage are allowed.
    bare = parse_event({"seq": 0, "kind": "status", "payload": {"status": "running", "reason": "started"}}, run_id=9)
    assert (bare.run_id, bare.created_at, bare.tokens_in, bare.cost_usd) == (9, None, 0, 0)


REFUSED = [
    ("not an object", ["a", "list"], "an event must be a JSON object"),
    ("run_id a word", good(run_id="seven"), "run_id must be a server run's id"),
    ("run_id a boolean", good(run_id=True), "run_id must be a server run's id"),
    ("run_id a numeric string", good(run_id="7"), "run_id must be a server run's id, an integer"),
    ("run_id a padded numeric string", good(run_id=" 07"), "run_id must be a server run's id, an integer"),
    ("seq negative", good(seq=-1), "seq must be a non-negative integer"),
    ("seq a boolean", good(seq=False), "seq must be a non-negative integer"),
    ("seq a float", good(seq=1.0), "seq must be a non-negative integer"),
    ("seq over its column", good(seq=INT_COLUMN_MAX + 1), f"seq must be at most {INT_COLUMN_MAX}"),
    ("kind unknown", good(kind="telepathy"), "unknown step kind 'telepathy'"),
    ("kind not a string", good(kind=["note"]), "unknown step kind"),
    ("payload a list", good(payload=[1]), "payload must be a JSON object"),
    ("payload missing", {k: v for k, v in good().items() if k != "payload"}, "payload must be a JSON object"),
    (
        "payload field undeclared",
        good(payload={"text": "hi", "level": "info", "colour": "red"}),
        "note payload: field 'colour' is not one of its fields",
    ),
    ("payload field missing", good(payload={"level": "info"}), "note payload: text is missing"),
    ("usage a number", good(usage=3), "usage must be a JSON object"),
    ("tokens negative", good(usage={"tokens_in": -1}), "usage.tokens_in must be a non-negative integer"),
    ("tokens over", good(usage={"tokens_out": 2**40}), f"usage.tokens_out must be at most {INT_COLUMN_MAX}"),
    ("cost a string", good(usage={"cost_usd": "1"}), "usage.cost_usd must be a number or null"),
    ("cost a boolean", good(usage={"cost_usd": True}), "usage.cost_usd must be a number or null"),
    ("cost negative", good(usage={"cost_usd": -0.5}), "usage.cost_usd must be a number from 0 to 10000"),
    ("cost over its column", good(usage={"cost_usd": 10_000}), "usage.cost_usd must be a number from 0 to 10000"),
    ("cost not finite", good(usage={"cost_usd": float("inf")}), "usage.cost_usd must be a number from 0 to 10000"),
    ("ts not a time", good(ts="yesterday"), "not an ISO 8601 timestamp: 'yesterday'"),
    ("ts impossible", good(ts="2026-13-45T99:00:00"), "not a valid timestamp"),
    ("ts a number", good(ts=1700000000), "not an ISO 8601 timestamp"),
]


@pytest.mark.parametrize("raw, reason", [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_the_parser_refuses_a_malformed_event_with_its_reason(raw, reason):
    refused = parse_event(raw)
    assert isinstance(refused, Refusal) and reason in refused.reason, refused


def test_every_kind_the_agent_can_emit_is_accepted_by_the_parser_and_has_a_line():
    for kind in protocol.KINDS:
        emitted = make_event(7, 0, kind, MINIMAL[kind])  # its required fields only
        assert isinstance(parse_event(emitted), ParsedEvent), kind
        assert protocol.event_summary(kind, {}), kind
    with pytest.raises(ValueError):
        make_event(7, 0, "telepathy", {})


def test_the_summary_survives_any_payload_a_sender_may_put_under_a_kind():
    odd_payloads = [None, [], "text", {"content": "not a list"}, {"result": [1]}, {"goal": "x", "speedup": True}]
    for kind in (*protocol.KINDS, "a_kind_of_tomorrow"):
        for payload in odd_payloads:
            line = protocol.event_summary(kind, payload)
            assert isinstance(line, str) and len(line) <= protocol.SUMMARY_MAX


def test_a_tool_event_without_a_name_is_shown_as_a_tool_not_none():
    # a sender's `"name": null` read "None, 1 chars" in the feed
    assert protocol.event_summary("tool_result", {"name": None, "output": "x"}).startswith("tool, 1 chars")
    assert protocol.event_summary("tool_call", {"name": None, "input": {}}).startswith("tool: ")


def test_the_terminal_shows_the_line_the_feed_shows():
    out = io.StringIO()
    payload = {"status": "failed", "reason": "budget_cost", "detail": "cost budget spent"}
    ConsoleSink(out).write(make_event(7, 4, "status", payload))
    assert out.getvalue().split(None, 2)[2].strip() == protocol.event_summary("status", payload)


def test_the_servers_words_are_the_protocols():
    from kseek_site import serving
    from runs.models import FINISHED_STATUSES, EvaluationStatus, RunStatus, Step, StepKind

    assert StepKind.values == list(protocol.KINDS)
    assert [label for _, label in StepKind.choices] == list(protocol.EVENT_KINDS.values())
    assert RunStatus.values == list(protocol.RUN_STATUSES)
    assert RunStatus.WAITING_REVIEW.label == protocol.RUN_STATUSES["waiting_review"]
    assert list(FINISHED_STATUSES) == list(protocol.FINISHED_STATUSES)
    assert EvaluationStatus.values == list(HARNESS_STATUSES)
    assert (serving.MESSAGE_MAX_BYTES, serving.EVENT_MAX_BYTES) == (
        protocol.MESSAGE_MAX_BYTES,
        protocol.EVENT_MAX_BYTES,
    )
    cost = Step._meta.get_field("cost_usd")
    assert STEP_COST_LIMIT == Decimal(10) ** (cost.max_digits - cost.decimal_places)


@pytest.mark.django_db
def test_stored_steps_are_announced_after_the_commit_in_one_shape_per_block(
    monkeypatch, django_capture_on_commit_callbacks
):
    from runs import events as announcements
    from runs.services import run_claim, step_record, worker_events_record
    from tests.foundation.factories import make_run

    sent = []
    monkeypatch.setattr(announcements, "_send", sent.extend)
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    items = [
        (0, "note", {"text": "a", "level": "info"}),
        (1, "tool_call", {"call_id": "c1", "name": "shell", "input": {"command": "ls"}}),
        (2, "question_proposed", question_payload("q-1")),  # a step with effects begins a block of its own
        (3, "note", {"text": "b", "level": "info"}),
        (5, "evaluation", evaluation_payload(1.2)),  # after a gap
        (6, "evaluation", {"purpose": "tool", "result": "not an object"}),  # refused: not announced
    ]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        outcomes = worker_events_record(items=[(host, event(run.pk, seq, kind, p)) for seq, kind, p in items])
    assert [o.stored for o in outcomes] == [True, True, True, True, True, False]
    assert sent == []  # nothing before the commit
    for callback in callbacks:
        callback()
    group = f"run.{run.pk}"
    steps = [(g, m) for g, m in sent if m["type"] == "step.stored"]
    assert steps == [
        (group, {"type": "step.stored", "run_id": run.pk, "seq": 0, "last_seq": 1, "kind": "note"}),
        (group, {"type": "step.stored", "run_id": run.pk, "seq": 2, "last_seq": 3, "kind": "question_proposed"}),
        (group, {"type": "step.stored", "run_id": run.pk, "seq": 5, "kind": "evaluation"}),
    ]
    # A re-delivery is stored already and announced by nobody; a single step is announced in the same shape.
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = worker_events_record(items=[(host, event(run.pk, 0, "note", {"text": "a", "level": "info"}))])
        step_record(run=run, seq=7, kind="note", payload={"text": "c", "level": "info"})
    assert again[0].stored and not again[0].created
    assert [m for _, m in sent if m["type"] == "step.stored"] == [
        {"type": "step.stored", "run_id": run.pk, "seq": 7, "kind": "note"}
    ]


def worker_note(**fields) -> dict:
    return {**event(7, 3, "note", {"text": "hi", "level": "info"}), **fields}


def worker_usage(**usage) -> dict:
    payload = {"purpose": "turn", "model": "m", "tokens_in": 5, "tokens_out": 2, "cost_usd": 0.25}
    return event(7, 4, "usage", payload, **payload) | ({"usage": usage} if usage else {})


@pytest.mark.parametrize(
    "raw, because",
    [
        (worker_note(extra=1), "is not a field of an event"),
        ({k: v for k, v in worker_note().items() if k != "usage"}, "the event has no usage"),
        (worker_note(v=2), "v must be 1"),
        (worker_note(v=True), "v must be 1"),
        (worker_note(usage={"tokens_in": 0, "tokens_out": 0}), "usage must have exactly"),
        (worker_note(usage=None), "usage must be an object with exactly tokens_in, tokens_out, cost_usd, not null"),
        (worker_usage(tokens_in=999999, tokens_out=2, cost_usd=0.25), "must repeat its payload"),
        (worker_note(usage={"tokens_in": 1000, "tokens_out": 1000, "cost_usd": 12.5}), "usage must be all zero"),
        (worker_note(usage={"tokens_in": 0, "tokens_out": 0, "cost_usd": 12.5}), "usage must be all zero on a note"),
        (worker_note(ts="2026-12-05T10:00:00"), "ts must be a time with its offset"),
        (worker_note(ts="2026-12-05"), "ts must be a time with its offset"),
    ],
)
def test_a_workers_event_is_held_to_the_whole_envelope(raw, because):
    """Protocol audit findings 5 and 6: what a worker sends is refused for good where it breaks docs/protocol.md 1.1
    (the lenient reading of a trace's line or the services' own events still takes these)."""
    refused = parse_event(raw, time_required=True, strict=True)
    assert isinstance(refused, Refusal) and because in refused.reason, refused


@pytest.mark.parametrize("kind", ["note", "evaluation", "model_message", "status"])
def test_a_count_or_cost_on_a_kind_other_than_usage_is_refused_by_every_reader(kind):
    """Only a usage event counts a model call (docs/protocol.md 1.1): a note that says it cost $12.50 is refused, by
    a worker's strict reading and by the lenient one of a trace's line or step_record alike, naming the kind."""
    sent = event(7, 3, kind, MINIMAL[kind], tokens_in=1000, tokens_out=1000, cost_usd=12.5)
    for strict in (True, False):
        refused = parse_event(sent, time_required=True, strict=strict)
        assert isinstance(refused, Refusal) and refused.reason == (
            f"usage must be all zero on a {kind} event: only a usage event counts a model call"
        ), refused
    unknown_price = event(7, 3, kind, MINIMAL[kind], cost_usd=None)  # all zero: null is no cost
    assert isinstance(parse_event(unknown_price, time_required=True, strict=True), ParsedEvent)


def test_a_workers_event_message_and_a_batch_item_without_v_are_envelopes():
    assert isinstance(parse_event(worker_note(), time_required=True, strict=True), ParsedEvent)  # with its `type`
    item = {k: v for k, v in worker_note().items() if k not in ("type", "v")}
    assert isinstance(parse_event(item, time_required=True, strict=True), ParsedEvent)
    counted = parse_event(worker_usage(), time_required=True, strict=True)
    assert (counted.tokens_in, counted.tokens_out, counted.cost_usd) == (5, 2, Decimal("0.25"))


def test_a_status_event_names_a_run_status_in_any_reading():
    bogus = worker_note(kind="status", payload={"status": "bogus", "reason": "started"})
    for strict in (False, True):
        refused = parse_event(bogus, time_required=True, strict=strict)
        assert isinstance(refused, Refusal) and "is not a run status" in refused.reason


@pytest.mark.parametrize("strict", [False, True])
def test_a_lone_surrogate_anywhere_in_a_payload_is_refused_in_words_on_every_database(strict):
    """SQLite stored one and PostgreSQL refused the row as a database error: the parser refuses it for both."""
    raw = worker_note(payload={"text": "ok \U0001f600 then \ud800 here", "level": "info"})
    refused = parse_event(raw, time_required=True, strict=strict)
    assert isinstance(refused, Refusal)
    assert (
        refused.reason
        == "payload.text holds '\\ud800', a lone surrogate, at character 10: not text that UTF-8 can carry"
    )
    emoji = parse_event(worker_note(payload={"text": "ok \U0001f600", "level": "info"}), strict=strict)
    assert isinstance(emoji, ParsedEvent)
