"""The event parser's edges, pinned: each test kills a change to runs/event_parser.py that the rest of the suite
let through (a mutation run, docs/testing.md). Pure: no database."""

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from runs.event_parser import INT_COLUMN_MAX, Refusal, parse_event
from tests.dashboard.helpers import event

NOTE = {"text": "hi", "level": "info"}


def test_the_largest_value_a_column_holds_is_taken():
    counts = {"tokens_in": INT_COLUMN_MAX, "tokens_out": 0, "cost_usd": 0}
    parsed = parse_event(event(1, INT_COLUMN_MAX, "usage", {"purpose": "turn", "model": "m", **counts}, **counts))
    assert (parsed.seq, parsed.tokens_in) == (INT_COLUMN_MAX, INT_COLUMN_MAX)


def test_a_time_without_an_offset_is_read_as_utc_and_one_with_an_offset_keeps_it():
    naive = parse_event({**event(1, 0, "note", NOTE), "ts": "2026-12-01T10:00:00"})
    assert naive.created_at == datetime(2026, 12, 1, 10, 0, tzinfo=UTC) and naive.created_at.tzinfo is UTC
    offset = parse_event({**event(1, 0, "note", NOTE), "ts": "2026-12-01T10:00:00+02:00"})
    assert offset.created_at.utcoffset() == timedelta(hours=2)
    assert offset.created_at == datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_a_datetime_given_by_a_caller_is_taken_as_it_is():
    when = datetime(2026, 12, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert parse_event({**event(1, 0, "note", NOTE), "ts": when}).created_at == when
    naive = datetime(2026, 12, 1, 9, 30)
    assert parse_event({**event(1, 0, "note", NOTE), "ts": naive}).created_at == naive.replace(tzinfo=UTC)


def test_missing_usage_and_missing_usage_fields_count_nothing():
    for usage in (None, {}, {"cost_usd": None}):
        parsed = parse_event({**event(1, 0, "note", NOTE), "usage": usage})
        assert (parsed.tokens_in, parsed.tokens_out, parsed.cost_usd) == (0, 0, Decimal(0)), usage


def test_a_not_a_number_cost_is_refused():
    refused = parse_event({**event(1, 0, "note", NOTE), "usage": {"cost_usd": float("nan")}})
    assert isinstance(refused, Refusal) and refused.reason == "usage.cost_usd must be a number from 0 to 10000, not NaN"


def test_the_refusals_say_exactly_what_is_wrong():
    ok = event(1, 0, "note", NOTE)
    cases = [
        ("a list", "an event must be a JSON object"),
        ({**ok, "payload": "text"}, "payload must be a JSON object"),
        ({**ok, "usage": [1]}, "usage must be a JSON object"),
    ]
    for raw, reason in cases:
        refused = parse_event(raw)
        assert isinstance(refused, Refusal) and refused.reason == reason, (raw, refused)


def test_a_payload_holding_nan_or_infinity_is_refused_not_stored():
    # Python's json reads NaN and Infinity; the database's JSON check does not, and refused the row mid-batch
    # (found by the generated-trace test: an evaluation payload with "scenarios": Infinity)
    for bad in (float("inf"), float("-inf"), float("nan")):
        refused = parse_event(event(1, 0, "evaluation", {"purpose": "tool", "result": {"scenarios": [1.0, bad]}}))
        assert (
            isinstance(refused, Refusal) and refused.reason == "payload holds NaN or Infinity, which JSON cannot carry"
        )
    assert not isinstance(
        parse_event(event(1, 0, "evaluation", {"purpose": "tool", "result": {"scenarios": 1e308}})), Refusal
    )


def test_a_payload_nested_deeper_than_an_event_may_is_refused_in_words_by_every_reader():
    """docs/protocol.md 1.1: an event nests at most EVENT_MAX_DEPTH levels, its envelope being level 1, for a
    worker's event and a trace's line alike (a trace import refused deeper lines, a worker's event was taken)."""
    from runs.event_parser import EVENT_MAX_DEPTH, PAYLOAD_MAX_DEPTH

    assert PAYLOAD_MAX_DEPTH == EVENT_MAX_DEPTH - 1

    def nested(levels):  # a decision point whose payload nests `levels` levels
        evidence = []
        for _ in range(levels - 2):
            evidence = [evidence]
        return event(1, 0, "decision_point", {"name": "plateau", "detail": "d", "evidence": evidence})

    for strict in (False, True):
        assert not isinstance(parse_event(nested(PAYLOAD_MAX_DEPTH), strict=strict), Refusal)
        refused = parse_event(nested(PAYLOAD_MAX_DEPTH + 1), strict=strict)
        assert refused == Refusal(f"payload nests deeper than {PAYLOAD_MAX_DEPTH} levels (objects and arrays)")


def test_a_payload_integer_past_what_a_double_holds_is_refused_as_infinity_is():
    """docs/protocol.md 1.1: JSON readers hold a number as a double; 1e400 is read as infinity and refused, and an
    integer written out to 400 digits was taken, and made the evaluation's figures raise (OverflowError)."""
    for bad in (10**400, -(10**309), 2**1024 - 1):
        refused = parse_event(event(1, 0, "note", {"text": "x", "refused_seq": bad}))
        assert isinstance(refused, Refusal) and "past what a double holds" in refused.reason, refused
    largest = int(1.7976931348623157e308)
    assert not isinstance(parse_event(event(1, 0, "note", {"text": "9" * 400, "refused_seq": largest})), Refusal)
