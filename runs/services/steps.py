"""The one store of a run's events: each (run, seq) stored once, with its run's totals and its effects, announced
after the commit.

Every path an event takes into the database ends here: the worker socket's event writer (alone or in batches,
through runs/services/worker_events.py), a trace import, and step_record. The events come parsed
(runs/event_parser.py); this module does what needs the database:

- a (run, seq) stored already, or twice in one call, is the same event (stored, not again) or a different one
  (refused for good: two events under one number means the sender is broken, and keeping either loses the other);
- the rows of events without effects are inserted with one statement, and each run's totals move with one more
  (for the whole call), which is what keeps the worker socket fast under load (docs/benchmarks.md);
- an event with effects (runs/services/step_effects.py) is stored alone, in a savepoint with its effects: a
  refusal of it (a payload of the wrong shape, a `succeeded` nobody confirmed) rolls back only that event;
- what was stored is announced to the run's feed once the transaction commits (runs/events.py).

A fault of the database (unreachable, locked) raises DatabaseError for the whole call, which then stores nothing.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import cast

from django.db import DataError, IntegrityError, connection, transaction
from django.utils import timezone

from runs.event_parser import ParsedEvent, Refusal, parse_event, read_instant
from runs.events import announce_steps_stored
from runs.models import Run, Step
from runs.services.errors import ServiceError, StepConflict, UnconfirmedSuccess


@dataclass(frozen=True)
class EventOutcome:
    """What became of one event: stored (now or before, with the same content) or refused for good."""

    stored: bool
    created: bool = False  # its row was inserted by this call (False for a re-delivery)
    error: str = ""
    conflict: bool = False  # refused: a different event holds its (run, seq)
    ends_run: bool = False  # refused, and the run ends failed: a `succeeded` that no stored evaluation confirms
    # Not stored because the sender's token was revoked after its socket opened: not refused for good (with a new
    # token the host may deliver it), and the socket is closed. Set by the worker path only.
    sender_revoked: bool = False
    # Not stored because a newer socket of the sender's host replaced the one it came on (docs/protocol.md 2.1):
    # not refused for good (the worker sends it again on its live socket), and the socket is closed.
    sender_superseded: bool = False


_STORED_NOW = EventOutcome(stored=True, created=True)
_STORED_BEFORE = EventOutcome(stored=True)
_COST_PLACES = Decimal(10) ** -Step._meta.get_field("cost_usd").decimal_places


def as_datetime(value) -> datetime:
    """A time as the parser reads an event's `ts`; now when there is none. ServiceError when it is no time."""
    try:
        return read_instant(value) or timezone.now()
    except ValueError as refused:
        raise ServiceError(str(refused)) from None


def same_payload(a, b) -> bool:
    # Compare as JSON: the database may hand back a dict with other key order or int/float spellings. Both are
    # JSON values (decoded from a message, a trace line or the database), so json.dumps needs no fallback.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def same_event(stored: tuple, new: tuple) -> bool:
    """Whether two events under one (run, seq) are the same event: (kind, payload, created_at, tokens_in,
    tokens_out, cost_usd) all equal. docs/protocol.md 1.1: a re-sent event is byte-for-byte the same, so a re-send
    that differs in anything, its usage or its time included, is another event under a used number and is refused
    (it could otherwise change a run's totals or its history). The cost is compared as the column stores it. A new
    event with no time (None: its sender gave none) is not held to the stored one."""
    kind, payload, when, tokens_in, tokens_out, cost = stored
    new_kind, new_payload, new_when, new_in, new_out, new_cost = new
    return (
        kind == new_kind
        and (new_when is None or when == new_when)
        and (tokens_in, tokens_out) == (new_in, new_out)
        and Decimal(cost).quantize(_COST_PLACES) == Decimal(new_cost).quantize(_COST_PLACES)
        and same_payload(payload, new_payload)
    )


# A stored step's columns that same_event compares, in its order (Step.objects.values_list(*STEP_FIELDS)).
STEP_FIELDS = ("kind", "payload", "created_at", "tokens_in", "tokens_out", "cost_usd")


def event_fields(event: ParsedEvent) -> tuple:
    """What same_event compares, in its order: (kind, payload, created_at, tokens_in, tokens_out, cost_usd)."""
    return (event.kind, event.payload, event.created_at, event.tokens_in, event.tokens_out, event.cost_usd)


def shape_words(error: Exception) -> str:
    """What a payload of the wrong shape made an effect raise, in words and short: never the exception's repr,
    which may quote a whole kernel source (a UnicodeEncodeError repeats the string it could not encode)."""
    if isinstance(error, KeyError):
        return f"its field {str(error.args[0] if error.args else '')[:60]!r} is missing"
    if isinstance(error, UnicodeError):
        return "a string in it holds a character that UTF-8 cannot carry (a lone surrogate)"
    if isinstance(error, (TypeError, AttributeError)):
        return f"a field in it holds a value of another type than it should ({str(error)[:120]})"
    return f"a field in it holds a value it cannot take ({str(error)[:120]})"


def _conflict(run_id: int, seq: int, stored_kind: str) -> EventOutcome:
    return EventOutcome(
        stored=False, conflict=True, error=f"run {run_id} already has a different step #{seq} ({stored_kind})"
    )


def refusal_of_database_error(error: DataError) -> str:
    """Why an event is refused for good when the database rejects its data (a value PostgreSQL cannot hold; a NUL
    character no longer reaches it: the parser escapes it, runs/nul_escape.py)."""
    return f"the database cannot store this event: {str(error).strip().splitlines()[0][:200]}"


# kind -> what its stored step implies, called with (run, step) in the step's savepoint (runs/services/step_effects.py)
Effects = Mapping[str, Callable[[Run, Step], object]]


def events_store(events: list[ParsedEvent], *, effects: Effects) -> list[EventOutcome]:
    """Store parsed events of existing runs, in one transaction; one outcome each, in order.

    The caller has checked that each event's run exists and that its sender may write it. `effects`: what a kind
    implies beyond its row (step_effects.EFFECTS for a worker's events; a trace import leaves out the status's)."""
    outcomes: list[EventOutcome | None] = [None] * len(events)
    # A transaction of its own, or the caller's (no savepoint: each part that may be refused has its own).
    with transaction.atomic(savepoint=False):
        fresh = _drop_repeats(events, outcomes)
        plain = [i for i in fresh if events[i].kind not in effects]
        _store_plain(events, plain, outcomes)
        for i in fresh:
            if events[i].kind in effects:
                outcomes[i] = _store_one(events[i], effects)
        created = [events[i] for i, outcome in enumerate(outcomes) if outcome.created]
        announce_steps_stored(_blocks(created, effects))
    return cast("list[EventOutcome]", outcomes)  # (every slot is filled above)


def _drop_repeats(events: list[ParsedEvent], outcomes: list) -> list[int]:
    """Settle events whose (run, seq) is stored already or repeats within the call; return the rest's indexes."""
    if not events:
        return []
    # Keys first: the filter matches every stored (run, seq) of the call's runs and seqs crossed, which under load
    # (runs at neighbouring seqs) is many rows that are no repeat; only true repeats have their fields read.
    wanted = {(e.run_id, e.seq) for e in events}
    repeats = wanted & set(
        Step.objects.filter(run_id__in={k[0] for k in wanted}, seq__in={k[1] for k in wanted}).values_list(
            "run_id", "seq"
        )
    )
    stored = {}
    if repeats:
        stored = {
            (run_id, seq): tuple(fields)
            for run_id, seq, *fields in Step.objects.filter(
                run_id__in={k[0] for k in repeats}, seq__in={k[1] for k in repeats}
            ).values_list("run_id", "seq", *STEP_FIELDS)
            if (run_id, seq) in repeats
        }
    first_in_call: dict[tuple[int, int], ParsedEvent] = {}
    fresh = []
    for i, event in enumerate(events):
        key = (event.run_id, event.seq)
        earlier = stored.get(key)
        if earlier is None and key in first_in_call:
            earlier = event_fields(first_in_call[key])
        if earlier is not None:
            same = same_event(earlier, event_fields(event))
            outcomes[i] = _STORED_BEFORE if same else _conflict(event.run_id, event.seq, earlier[0])
            continue
        first_in_call[key] = event
        fresh.append(i)
    return fresh


def _store_plain(events: list[ParsedEvent], indexes: list[int], outcomes: list) -> None:
    """Insert the rows in one statement and move each run's totals once; on a clash, one by one."""
    if not indexes:
        return
    rows = [events[i] for i in indexes]
    try:
        with transaction.atomic():
            _insert_rows(rows)
            _add_to_run_totals(rows)
    except (IntegrityError, DataError):
        # Another process stored one of these (run, seq) since we looked, or one row's data is refused by the
        # database: one by one sorts out which, each event in its own savepoint.
        for i in indexes:
            outcomes[i] = _store_one(events[i], {})
        return
    for i in indexes:
        outcomes[i] = _STORED_NOW


def _store_one(event: ParsedEvent, effects: Effects) -> EventOutcome:
    """One event, with its effects, in a savepoint: a refusal rolls back only this event."""
    try:
        with transaction.atomic():
            _insert_rows([event])
            _add_to_run_totals([event])
            if event.kind in effects:
                step = Step.objects.get(run_id=event.run_id, seq=event.seq)
                run = Run.objects.select_related("task").get(pk=event.run_id)
                try:
                    effects[event.kind](run, step)
                except (KeyError, TypeError, ValueError, AttributeError) as malformed:
                    # A payload of the wrong shape: refuse the event (its step rolls back) with a clear reason.
                    raise ServiceError(f"a {event.kind} event of the wrong shape: {shape_words(malformed)}") from None
    except UnconfirmedSuccess as refused:
        return EventOutcome(stored=False, error=str(refused), ends_run=True)
    except ServiceError as refused:
        return EventOutcome(stored=False, error=str(refused))
    except DataError as rejected:
        return EventOutcome(stored=False, error=refusal_of_database_error(rejected))
    except IntegrityError:
        # Stored by another process since we looked (or a clash of something else: then let it be seen).
        existing = Step.objects.filter(run_id=event.run_id, seq=event.seq).values_list(*STEP_FIELDS).first()
        if existing is None:
            raise
        return (
            _STORED_BEFORE
            if same_event(existing, event_fields(event))
            else _conflict(event.run_id, event.seq, existing[0])
        )
    return _STORED_NOW


def _insert_rows(rows: list[ParsedEvent]) -> None:
    """INSERT the steps with one executemany.

    Plain SQL rather than bulk_create: the ORM compiles every field of every row through its generic machinery,
    which took most of the writer's time under load (profile in docs/benchmarks.md). The values are prepared by
    the fields themselves, so they are stored exactly as bulk_create would store them. An event without a time is
    stamped with the server's.
    """
    fields = {name: Step._meta.get_field(name) for name in ("payload", "created_at", "stored_at", "cost_usd")}
    now = timezone.now()
    stored_at = fields["stored_at"].get_db_prep_save(now, connection)
    values = [
        (
            e.run_id,
            e.seq,
            e.kind,
            fields["payload"].get_db_prep_save(e.payload, connection),
            fields["created_at"].get_db_prep_save(e.created_at or now, connection),
            stored_at,
            e.tokens_in,
            e.tokens_out,
            fields["cost_usd"].get_db_prep_save(e.cost_usd, connection),
        )
        for e in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {Step._meta.db_table} (run_id, seq, kind, payload, created_at, stored_at, tokens_in, "
            f"tokens_out, cost_usd) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            values,
        )


def _add_to_run_totals(stored: list[ParsedEvent]) -> None:
    """Each run's totals (last seq, step count, tokens, cost, whether the cost is incomplete) move once, in one
    statement for all runs. Only a row inserted now adds to them, so a re-sent event changes nothing twice; an
    unknown cost only ever sets cost_incomplete (a floor stays a floor).

    Plain SQL rather than a QuerySet.update per run: the ORM compiles each update anew, which cost more than
    inserting the rows.
    """
    by_run: dict[int, list[ParsedEvent]] = {}
    for e in stored:
        by_run.setdefault(e.run_id, []).append(e)
    now = timezone.now()
    rows = [
        (
            max(e.seq for e in steps),
            len(steps),
            sum(e.tokens_in for e in steps),
            sum(e.tokens_out for e in steps),
            str(sum((e.cost_usd for e in steps), Decimal(0))),
            any(e.cost_unknown for e in steps),
            now,
            run_id,
        )
        for run_id, steps in by_run.items()
    ]
    greatest, cost = ("GREATEST", "%s") if connection.vendor == "postgresql" else ("MAX", "CAST(%s AS NUMERIC)")
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {Run._meta.db_table} SET last_seq = {greatest}(last_seq, %s), step_count = step_count + %s, "
            f"tokens_in = tokens_in + %s, tokens_out = tokens_out + %s, cost_usd = cost_usd + {cost}, "
            f"cost_incomplete = (cost_incomplete OR %s), updated_at = %s WHERE id = %s",
            rows,
        )


def _blocks(created: list[ParsedEvent], effects) -> list[tuple[int, int, int, str]]:
    """(run id, first seq, last seq, kind) of each block of the stored steps that one announcement covers:
    consecutive seqs of one run, where a step with effects (the ones the run page redraws its chart for) begins a
    block, so that the block's kind is its. One announcement per block rather than per step: under load a batch
    holds many steps of each run, and every announcement is a message to each page that follows the run."""
    blocks: list[list] = []  # [run_id, first seq, last seq, kind]
    for e in sorted(created, key=lambda e: (e.run_id, e.seq)):
        last = blocks[-1] if blocks else None
        if last and last[0] == e.run_id and e.seq == last[2] + 1 and e.kind not in effects:
            last[2] = e.seq
        else:
            blocks.append([e.run_id, e.seq, e.seq, e.kind])
    return [tuple(block) for block in blocks]


@dataclass(frozen=True)
class StepRecorded:
    step: Step
    created: bool  # False: the same event was stored before (a re-delivery)


def step_record(
    *,
    run: Run,
    seq: int,
    kind: str,
    payload: dict,
    created_at=None,
    tokens_in: int = 0,
    tokens_out: int = 0,
    cost_usd: Decimal | float | str = 0,
) -> StepRecorded:
    """Store one step of `run` through the one store, without its effects: for a caller that makes what the
    event implies itself (a kernel and its evaluation, a question). A worker's events go through
    worker_events_record, which applies them.

    The same (run, seq) again with the same content is acknowledged without a second row; with other content it
    is refused (StepConflict); a field the parser refuses raises ServiceError with its reason.
    """
    raw = {
        "seq": seq,
        "kind": kind,
        "payload": payload,
        "ts": created_at,
        "usage": {"tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": float(Decimal(str(cost_usd)))},
    }
    parsed = parse_event(raw, run_id=run.pk)
    if isinstance(parsed, Refusal):
        raise ServiceError(parsed.reason)
    [outcome] = events_store([parsed], effects={})
    if outcome.conflict:
        raise StepConflict(outcome.error)
    if not outcome.stored:
        raise ServiceError(outcome.error)
    return StepRecorded(Step.objects.get(run=run, seq=seq), created=outcome.created)
