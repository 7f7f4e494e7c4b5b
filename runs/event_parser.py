"""The server's one reading of a run event (docs/protocol.md 1.1): a raw dict in, a parsed event or a refusal out.

Every way an event reaches the server (the worker socket, alone or in batches, a trace import, the services'
own step_record) goes through `parse_event` before anything is stored, so an event is held to one set of rules:
its kind is one of the protocol's (agentloop/protocol.py; the database no longer checks it), its numbers fit the
columns that hold them, its time is a real instant. Pure: no database, no clock, no side effect; what needs the
database (does the run exist, does the sender hold it, is the seq used) is the store's to check
(runs/services/steps.py).
"""

import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.utils.dateparse import parse_datetime

from agentloop.event_types import payload_problem
from agentloop.json_safe import nests_deeper
from agentloop.protocol import EVENT_MAX_DEPTH, KINDS, PROTOCOL_VERSION, RUN_STATUSES
from runs.nul_escape import NulRefused, escape_nul

# The largest value of the integer columns (PositiveIntegerField: 32-bit signed on PostgreSQL), checked here so
# that no database sees a value it would refuse or, on SQLite, store wrongly.
INT_COLUMN_MAX = 2**31 - 1
# A step's cost column is decimal(10, 6): below 10,000 (tests/dashboard/test_event_parser.py holds the two equal).
STEP_COST_LIMIT = Decimal(10_000)
# The largest id a run can have (its key is a 64-bit column, DEFAULT_AUTO_FIELD): a larger run_id names no run, and
# looking it up made SQLite raise, so that the whole batch was nacked for retry ("server error") forever.
RUN_ID_MAX = 2**63 - 1
# EVENT_MAX_DEPTH (agentloop.protocol) bounds an event's nesting, its envelope level 1; its payload one level less.
PAYLOAD_MAX_DEPTH = EVENT_MAX_DEPTH - 1

_KINDS = frozenset(KINDS)
_STATUSES = frozenset(RUN_STATUSES)
ENVELOPE_FIELDS = ("v", "run_id", "seq", "kind", "ts", "payload", "usage")
USAGE_FIELDS = ("tokens_in", "tokens_out", "cost_usd")


@dataclass(frozen=True)
class ParsedEvent:
    run_id: int
    seq: int
    kind: str
    payload: dict
    # The sender's time; None when it gave none (then the store stamps the event with its own clock, and a repeat
    # is not held to the stored time).
    created_at: datetime | None
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal
    # A usage event whose model's price is unknown (its cost_usd null, docs/protocol.md 1.1): cost_usd is then 0,
    # what a total adds, and the run's cost is a floor (Run.cost_incomplete). False on every other event.
    cost_unknown: bool = False


@dataclass(frozen=True)
class Refusal:
    """An event the server will not store, and why (sent to the worker in its `nack`, kept on its run)."""

    reason: str


class _Refused(Exception):
    pass


def envelope_problem(record: dict) -> str | None:
    """What makes a line no event by docs/protocol.md 1.1's envelope, or None: exactly its fields, v the version
    this server reads, run_id a string or an integer (seq, kind, ts, payload and usage are the parser's)."""
    extra = [name for name in record if name not in ENVELOPE_FIELDS]
    if extra:
        return (
            f"{json.dumps(extra[0])[:60]} is not a field of an event (an event has exactly "
            f"{', '.join(ENVELOPE_FIELDS)}: docs/protocol.md 1.1)"
        )
    missing = [name for name in ENVELOPE_FIELDS if name not in record]
    if missing:
        return (
            f"the event has no {missing[0]} (an event has exactly {', '.join(ENVELOPE_FIELDS)}: docs/protocol.md 1.1)"
        )
    version = record["v"]
    if isinstance(version, bool) or not isinstance(version, int) or version != PROTOCOL_VERSION:
        return f"v must be {PROTOCOL_VERSION}, the protocol version this server reads, not {json.dumps(version)[:60]}"
    run_id = record["run_id"]
    if isinstance(run_id, bool) or not isinstance(run_id, (str, int)):
        return f"run_id must be a string or an integer, not {json.dumps(run_id)[:60]}"
    return None


def parse_event(
    raw, *, run_id: int | None = None, time_required: bool = False, strict: bool = False
) -> ParsedEvent | Refusal:
    """Read one event. `run_id`: the run the caller stores it in (a trace import, step_record); without it the
    event's own `run_id` names it (a worker's event). `time_required`: an event without a `ts` is refused (a
    worker's: docs/protocol.md 1.1 requires it, and a re-send without one could not be told from another event
    under the same number). `strict` (a worker's event): 1.1's envelope besides: exactly its fields, `usage` with
    its three (a `usage` event's repeating its payload's), and `ts` with its offset."""
    try:
        if not isinstance(raw, dict):
            raise _Refused("an event must be a JSON object")
        if strict and (problem := envelope_problem(_as_envelope(raw))) is not None:
            raise _Refused(problem)
        run = run_id if run_id is not None else _run_id(raw.get("run_id"))
        seq = _count(raw.get("seq"), "seq")
        kind = raw.get("kind")
        if not isinstance(kind, str) or kind not in _KINDS:
            raise _Refused(f"unknown step kind {kind!r:.60}")
        payload = raw.get("payload")
        if not isinstance(payload, dict):
            raise _Refused("payload must be a JSON object")
        if nests_deeper(payload, PAYLOAD_MAX_DEPTH):
            raise _Refused(f"payload nests deeper than {PAYLOAD_MAX_DEPTH} levels (objects and arrays)")
        problem = payload_problem(kind, payload)  # its declared shape (agentloop/event_types.py)
        if problem is not None:
            raise _Refused(problem)
        if kind == "status" and payload.get("status") not in _STATUSES:
            raise _Refused(f"status {payload.get('status')!r:.60} is not a run status ({', '.join(RUN_STATUSES)})")
        text = _strict_json(payload)
        if _LONG_DIGITS.search(text):  # only then can an integer be past what a double holds
            _refuse_huge_integer(payload)
        if "\\ud" in text:  # only then can a lone surrogate be in it (no database can store one)
            _refuse_lone_surrogate(payload, "payload")
        if "\\u0000" in text:  # only then is there a NUL to escape (runs/nul_escape.py)
            payload = _nul_escaped(payload)
        tokens_in, tokens_out, cost = _usage(raw.get("usage"), kind)
        if strict and (problem := usage_problem(raw["usage"], kind, payload)) is not None:
            raise _Refused(problem)
        if time_required and raw.get("ts") is None:
            raise _Refused("ts is missing: every event carries when it happened (ISO 8601 with an offset)")
        created_at = _instant(raw.get("ts"), offset_required=strict)
    except _Refused as refused:
        return Refusal(str(refused))
    unknown = _cost_unknown(raw.get("usage"), kind, payload)
    return ParsedEvent(run, seq, kind, payload, created_at, tokens_in, tokens_out, cost, unknown)


def read_instant(value) -> datetime | None:
    """A time as an event's `ts` is read (None for None; a time without an offset is UTC), or a Refusal's reason
    as ValueError."""
    try:
        return _instant(value)
    except _Refused as refused:
        raise ValueError(str(refused)) from None


def _strict_json(payload: dict) -> str:
    # Python's json reads NaN and Infinity, which JSON has no words for: the database's JSON check (SQLite's
    # JSON_VALID, PostgreSQL's jsonb) would refuse the row as an error mid-batch, so the event is refused here.
    try:
        return json.dumps(payload, allow_nan=False)
    except ValueError:
        raise _Refused("payload holds NaN or Infinity, which JSON cannot carry") from None


# 309 digits in a row: the shortest an integer past the largest double (about 1.8e308) is written in.
_LONG_DIGITS = re.compile(r"[0-9]{309}")
# The largest integer a double holds (about 1.8e308).
_DOUBLE_MAX = int(sys.float_info.max)


def _refuse_huge_integer(payload: dict) -> None:
    """Refuses a payload holding an integer past what a double holds. JSON readers hold a number as a double (a
    browser's does, and 1e400 is read as infinity here, refused with NaN): written out in digits, such an integer
    was taken, and reading an evaluation's figures from it raised (OverflowError), which nacked its whole batch for
    retry, forever. Walked with a stack of its own (the payload's nesting is bounded already)."""
    stack: list = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > _DOUBLE_MAX:
            raise _Refused("payload holds an integer past what a double holds (about 1.8e308)")
        if isinstance(item, (dict, list)):
            stack.extend(item.values() if isinstance(item, dict) else item)


def lone_surrogate_problem(value, where: str) -> str | None:
    """Why `value` cannot be stored when it holds a lone surrogate, naming the first field that does (under
    `where`) and where in it; None when it holds none."""
    try:
        _refuse_lone_surrogate(value, where)
    except _Refused as refused:
        return str(refused)
    return None


def _refuse_lone_surrogate(value, where: str) -> None:
    """Refuses a value holding a lone surrogate ("\\ud800" in JSON: no text UTF-8, and so no database, can carry),
    naming the first field that holds one and where in it (SQLite stored it and PostgreSQL refused the row, so the
    two said different things, neither in words)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as bad:
            raise _Refused(
                f"{where} holds {ascii(value[bad.start])}, a lone surrogate, at character {bad.start:,}: "
                "not text that UTF-8 can carry"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_lone_surrogate(key, f"a key of {where}")
            _refuse_lone_surrogate(item, f"{where}.{str(key)[:40]}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_lone_surrogate(item, f"{where}[{index}]")


def _nul_escaped(payload: dict) -> dict:
    # PostgreSQL cannot hold a NUL character: escaped the same way on every database, so both show the same.
    try:
        return escape_nul(payload)
    except NulRefused as refused:
        raise _Refused(str(refused)) from None


def _run_id(value) -> int:
    """A server run's id is its integer key (docs/protocol.md 1.1); a string names a standalone run, so "7" is
    refused rather than read as run 7 (which would also ack it under a string the worker never sent)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Refused(f"run_id must be a server run's id, an integer, not {value!r:.60}")
    if not 0 < value <= RUN_ID_MAX:
        raise _Refused(f"there is no run {str(value):.60}")
    return value


def _count(value, name: str) -> int:
    """A non-negative integer that fits an integer column."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Refused(f"{name} must be a non-negative integer, not {value!r:.60}")
    if value > INT_COLUMN_MAX:
        raise _Refused(f"{name} must be at most {INT_COLUMN_MAX}, not {str(value):.60}")
    return value


def _usage(usage, kind: str) -> tuple[int, int, Decimal]:
    """The counts and cost an event adds to its run's totals: a usage event's only (docs/protocol.md 1.1), so a
    run's totals never count a model call twice nor take a figure no call made; every reader (a worker, a trace's
    import, step_record) alike."""
    if usage is None:
        return 0, 0, Decimal(0)
    if not isinstance(usage, dict):
        raise _Refused("usage must be a JSON object")
    cost = usage.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise _Refused(f"usage.cost_usd must be a number or null, not {cost!r:.60}")
    tokens_in = _count(usage.get("tokens_in", 0), "usage.tokens_in")
    tokens_out = _count(usage.get("tokens_out", 0), "usage.tokens_out")
    # An unknown price is null in the protocol; a total adds nothing for it (the run's cost is then a floor).
    # str() of any int or float is a valid Decimal ("inf" and "nan" included: refused just below).
    amount = Decimal(str(cost or 0))
    if not amount.is_finite() or not 0 <= amount < STEP_COST_LIMIT:
        raise _Refused(f"usage.cost_usd must be a number from 0 to {STEP_COST_LIMIT}, not {str(amount):.60}")
    if kind != "usage" and (tokens_in or tokens_out or amount):
        raise _Refused(f"usage must be all zero on a {kind} event: only a usage event counts a model call")
    return tokens_in, tokens_out, amount


def unpriced_call(kind: str, payload) -> bool:
    """Whether an event, as sent, is a model call whose price is unknown: a usage event whose payload's cost_usd is
    null (docs/protocol.md 1.1). Only a usage event counts a call."""
    return kind == "usage" and isinstance(payload, dict) and payload.get("cost_usd") is None


def _cost_unknown(usage, kind: str, payload: dict) -> bool:
    """Whether a usage event's cost is unknown: its payload's cost_usd or its envelope's is null. A worker's event
    and a trace's line hold the two equal (usage_problem); the services' own step_record does not, and its
    payload is the event as sent."""
    envelope_null = isinstance(usage, dict) and usage.get("cost_usd") is None
    return unpriced_call(kind, payload) or (kind == "usage" and envelope_null)


def _as_envelope(raw: dict) -> dict:
    """A worker's event as the envelope it stands for: an `event` message is the envelope and its `type`; a batch's
    item may leave out `v` (its `events` message carries it, docs/protocol.md 2.8) and may carry `"type": "event"`
    as the message would, but no other `type` (then it is a field the envelope lacks); a missing `ts` has its own
    refusal ("ts is missing")."""
    envelope = {name: value for name, value in raw.items() if name != "type" or value != "event"}
    envelope.setdefault("v", PROTOCOL_VERSION)
    envelope.setdefault("ts", None)
    return envelope


def usage_problem(usage, kind: str, payload: dict) -> str | None:
    """What makes an event's envelope `usage` break docs/protocol.md 1.1, or None: it is an object with exactly
    its three fields (`null`, the lenient reading's "no usage", included), and a `usage` event's repeats its
    payload's (so a run's totals count a model call as the call's event says). A worker's event (parse_event,
    `strict`) and a trace's line (runs/services/trace_import.py) are both held to it; usage on another kind is
    refused for every reader, in parse_event. `payload` is one parse_event has read (an object of its kind)."""
    if not isinstance(usage, dict):
        return f"usage must be an object with exactly {', '.join(USAGE_FIELDS)}, not {json.dumps(usage)[:60]}"
    missing = [name for name in USAGE_FIELDS if name not in usage]
    if missing or len(usage) != len(USAGE_FIELDS):
        return f"usage must have exactly {', '.join(USAGE_FIELDS)}"
    expected = repeated_usage(kind, payload)
    if expected is not None and any(usage[name] != expected[name] for name in USAGE_FIELDS):
        return "a usage event's envelope usage must repeat its payload's tokens_in, tokens_out, cost_usd"
    return None


def repeated_usage(kind: str, payload: dict) -> dict | None:
    """The envelope `usage` a usage event must carry, its payload's three fields (docs/protocol.md 1.1), or None
    for another kind (whose usage is all zero). The export writes it, so an exported event is the one sent."""
    if kind != "usage":
        return None
    return {name: payload.get(name) for name in USAGE_FIELDS}


def _instant(value, *, offset_required: bool = False) -> datetime | None:
    if value is None:
        return None
    parsed: datetime | None
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = parse_datetime(str(value))
        except (ValueError, OverflowError):  # well-formed but impossible, e.g. month 13
            raise _Refused(f"not a valid timestamp: {value!r:.60}") from None
        if parsed is None:
            raise _Refused(f"not an ISO 8601 timestamp: {value!r:.60}")
    if parsed.tzinfo is None and offset_required:
        raise _Refused(
            f"ts must be a time with its offset (ISO 8601, e.g. 2026-11-30T11:02:03+00:00), not {value!r:.60}"
        )
    # A time without an offset is read as UTC (the protocol's times carry one; a trace's older lines may not).
    parsed = parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    try:
        # The database holds the time in UTC: one that is no UTC time of years 1 to 9999 made the store raise.
        parsed.astimezone(UTC)
    except OverflowError:
        raise _Refused(f"ts {value!r:.60} is outside the times the server holds (years 1 to 9999 in UTC)") from None
    return parsed
