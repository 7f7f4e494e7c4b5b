"""Many worker events in one transaction: what the worker sockets' event writer calls under load."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import DatabaseError, DataError, IntegrityError, connection, transaction
from django.utils import timezone

from runs.models import Run, Step, StepKind, WorkerHost
from runs.services.errors import ServiceError, UnconfirmedSuccess
from runs.services.steps import as_datetime, same_event
from runs.services.worker_events import INT_COLUMN_MAX, event_refusal_record, int_field, usage_of, worker_event_record

# Kinds whose events mean more than their row (a question, a kernel and its evaluation, a status change): these
# go one by one through worker_event_record. Every other kind is a row and a contribution to the run's totals.
# StepKind.values builds a new list on each use: a set, for the batch path's check of every event.
_STEP_KINDS = frozenset(StepKind.values)
_KINDS_WITH_EFFECTS = frozenset(
    {StepKind.QUESTION_PROPOSED, StepKind.QUESTION_DECIDED, StepKind.EVALUATION, StepKind.STATUS}
)


@dataclass(frozen=True)
class EventOutcome:
    """What became of one event of a batch: stored (now or before, with the same content) or refused for good."""

    stored: bool
    error: str = ""
    # Not stored because the sender's token was revoked after its socket opened: not refused for good (with a new
    # token the host may deliver it), and the socket is closed.
    sender_revoked: bool = False
    # The refusal also ends the run failed (a `succeeded` that no stored evaluation confirms).
    ends_run: bool = False
    # (run id, seq, kind) of a row this call inserted in bulk: the caller publishes it after the commit.
    # None for a re-delivery, a refusal, and an event stored through worker_event_record (published there).
    published_by_caller: tuple[int, int, str] | None = None


@dataclass
class _Candidate:
    index: int
    worker: WorkerHost
    event: dict
    run_id: int
    seq: int
    kind: str
    payload: dict
    when: datetime
    tokens_in: int
    tokens_out: int
    cost: Decimal


# The columns' limits (positive integer; decimal(10, 6)), checked here so that no database sees a value it
# would refuse or, on SQLite, store wrongly.
_INT_COLUMN_MAX = INT_COLUMN_MAX
_STEP_COST_LIMIT = Decimal(10_000)


def _bounded(value: int, name: str) -> int:
    if value > _INT_COLUMN_MAX:
        raise ServiceError(f"{name} must be at most {_INT_COLUMN_MAX}, not {value}")
    return value


def _candidate(index: int, worker: WorkerHost, event: dict) -> _Candidate:
    """Check one event's fields without the database; ServiceError says what is wrong, as worker_event_record would."""
    if not isinstance(event, dict):
        raise ServiceError("an event must be a JSON object")
    run_id = event.get("run_id")
    if isinstance(run_id, bool):
        raise ServiceError(f"run_id must be a server run's id, not {run_id!r}")
    try:
        run_id = int(run_id)
    except (TypeError, ValueError, OverflowError):
        raise ServiceError(f"run_id must be a server run's id, not {run_id!r}") from None
    seq = _bounded(int_field(event.get("seq"), "seq"), "seq")
    kind = event.get("kind")
    if not isinstance(kind, str) or kind not in _STEP_KINDS:
        raise ServiceError(f"unknown step kind {kind!r}")
    payload = event.get("payload")
    if not isinstance(payload, dict):
        raise ServiceError("payload must be a JSON object")
    tokens_in, tokens_out, cost = usage_of(event.get("usage"))
    _bounded(tokens_in, "usage.tokens_in")
    _bounded(tokens_out, "usage.tokens_out")
    if not cost.is_finite() or not 0 <= cost < _STEP_COST_LIMIT:
        raise ServiceError(f"usage.cost_usd must be a number from 0 to {_STEP_COST_LIMIT}, not {cost}")
    try:
        when = as_datetime(event.get("ts"))
    except (ValueError, OverflowError):  # well-formed but impossible, e.g. month 13
        raise ServiceError(f"not a valid timestamp: {event.get('ts')!r}") from None
    return _Candidate(index, worker, event, run_id, seq, kind, payload, when, tokens_in, tokens_out, cost)


def _refusal_of_database_error(error: DatabaseError) -> str | None:
    """The reason to refuse an event for good when the database rejects its data; None for a passing fault."""
    if isinstance(error, DataError):  # e.g. PostgreSQL cannot hold a NUL character in JSON, or a number too big
        return f"the database cannot store this event: {str(error).strip().splitlines()[0][:200]}"
    return None


def _record_one(candidate: _Candidate) -> EventOutcome:
    """The one-event path, in a savepoint of the batch's transaction: a refusal rolls back only this event."""
    try:
        with transaction.atomic():
            worker_event_record(worker=candidate.worker, event=candidate.event)
    except UnconfirmedSuccess as refused:
        return EventOutcome(stored=False, error=str(refused), ends_run=True)
    except ServiceError as refused:
        return EventOutcome(stored=False, error=str(refused))
    except DataError as rejected:
        return EventOutcome(stored=False, error=_refusal_of_database_error(rejected))
    return EventOutcome(stored=True)


def worker_events_record(*, items: list[tuple[WorkerHost, dict]]) -> list[EventOutcome]:
    """Store many `event` messages (from one or several worker sockets) in one transaction; one outcome each.

    Every promise of `worker_event_record` holds for each event: a (run, seq) is stored once, a re-delivery with
    the same content is stored-already, a different event under a used seq is refused, an event for a run the
    sender does not hold is refused, totals count each stored row once, and a refusal stores nothing of that
    event. What changes is the cost: the rows of events without effects are inserted in bulk, each run's totals
    move once, and the caller publishes one message per run (`published_by_caller`) after the commit. A fault of
    the database (unreachable, locked) raises DatabaseError for the whole batch, which then is not stored at all.
    """
    outcomes: list[EventOutcome | None] = [None] * len(items)
    candidates: list[_Candidate] = []
    for index, (worker, event) in enumerate(items):
        try:
            candidates.append(_candidate(index, worker, event))
        except ServiceError as refused:
            outcomes[index] = EventOutcome(stored=False, error=str(refused))
    with transaction.atomic():
        holders = dict(Run.objects.filter(pk__in={c.run_id for c in candidates}).values_list("pk", "worker_id"))
        # A host whose token was revoked after its socket opened: nothing more of it is stored (its socket is being
        # closed). Not refused for good: the events stay in its spool, for a new token to deliver.
        revoked = (
            set(
                WorkerHost.objects.filter(
                    pk__in={c.worker.pk for c in candidates}, revoked_at__isnull=False
                ).values_list("pk", flat=True)
            )
            if candidates
            else set()
        )
        held = []
        for c in candidates:
            if c.worker.pk in revoked:
                outcomes[c.index] = EventOutcome(
                    stored=False, error=f"the token of worker {c.worker.name} is revoked", sender_revoked=True
                )
            elif c.run_id not in holders:
                outcomes[c.index] = EventOutcome(stored=False, error=f"there is no run {c.run_id}")
            elif holders[c.run_id] != c.worker.pk:
                outcomes[c.index] = EventOutcome(
                    stored=False, error=f"run {c.run_id} is not assigned to worker {c.worker.name}"
                )
            else:
                held.append(c)
        fresh = _drop_repeats(held, outcomes)
        plain = [c for c in fresh if c.kind not in _KINDS_WITH_EFFECTS]
        _insert_plain(plain, outcomes)
        for c in fresh:
            if c.kind in _KINDS_WITH_EFFECTS:
                outcomes[c.index] = _record_one(c)
        for c in held:
            outcome = outcomes[c.index]
            if not outcome.stored and not outcome.sender_revoked:
                # Refused for good on a run this host holds: the run's page says what is missing and why. Outside
                # the event's own savepoint, which rolled back.
                event_refusal_record(worker=c.worker, event=c.event, error=outcome.error, fail_run=outcome.ends_run)
    return outcomes


def _drop_repeats(held: list[_Candidate], outcomes: list) -> list[_Candidate]:
    """Settle events whose (run, seq) is stored already or repeats within the batch; return the rest, in order."""
    if not held:
        return []
    # Keys first: the filter matches every stored (run, seq) of the batch's runs and seqs crossed, which under load
    # (runs at neighbouring seqs) is many rows that are no repeat; only true repeats have their payload read.
    wanted = {(c.run_id, c.seq) for c in held}
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
            ).values_list("run_id", "seq", "kind", "payload", "created_at", "tokens_in", "tokens_out", "cost_usd")
            if (run_id, seq) in repeats
        }
    first_in_batch: dict[tuple[int, int], _Candidate] = {}
    fresh = []
    for c in held:
        key = (c.run_id, c.seq)
        earlier = stored.get(key)
        if earlier is None and key in first_in_batch:
            earlier = _fields(first_in_batch[key])
        if earlier is not None:
            if not same_event(earlier, _fields(c)):
                outcomes[c.index] = EventOutcome(
                    stored=False, error=f"run {c.run_id} already has a different step #{c.seq} ({earlier[0]})"
                )
            else:
                outcomes[c.index] = EventOutcome(stored=True)
            continue
        first_in_batch[key] = c
        fresh.append(c)
    return fresh


def _fields(c: _Candidate) -> tuple:
    return (c.kind, c.payload, c.when, c.tokens_in, c.tokens_out, c.cost)


def _insert_plain(plain: list[_Candidate], outcomes: list) -> None:
    """Insert the rows in one statement and move each run's totals once; on a clash fall back to one by one."""
    if not plain:
        return
    try:
        with transaction.atomic():
            _insert_steps(plain)
            _add_to_run_totals(plain)
    except (IntegrityError, DataError):
        # Another process stored one of these (run, seq) since we looked, or one row's data is refused by the
        # database: the one-event path sorts out which, each event in its own savepoint.
        for c in plain:
            outcomes[c.index] = _record_one(c)
        return
    for c in plain:
        outcomes[c.index] = EventOutcome(stored=True, published_by_caller=(c.run_id, c.seq, c.kind))


def _insert_steps(rows: list[_Candidate]) -> None:
    """INSERT the steps with one executemany.

    Plain SQL rather than bulk_create: the ORM compiles every field of every row through its generic machinery,
    which took most of the writer's time under load (profile in docs/benchmarks.md). The values are prepared by
    the fields themselves, so they are stored exactly as bulk_create would store them.
    """
    fields = {name: Step._meta.get_field(name) for name in ("payload", "created_at", "stored_at", "cost_usd")}
    now = fields["stored_at"].get_db_prep_save(timezone.now(), connection)
    values = [
        (
            c.run_id,
            c.seq,
            c.kind,
            fields["payload"].get_db_prep_save(c.payload, connection),
            fields["created_at"].get_db_prep_save(c.when, connection),
            now,
            c.tokens_in,
            c.tokens_out,
            fields["cost_usd"].get_db_prep_save(c.cost, connection),
        )
        for c in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {Step._meta.db_table} (run_id, seq, kind, payload, created_at, stored_at, tokens_in, "
            f"tokens_out, cost_usd) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            values,
        )


def _add_to_run_totals(stored: list[_Candidate]) -> None:
    """Each run's totals move once per batch, in one statement for all runs.

    Plain SQL rather than a QuerySet.update per run: the ORM compiles each update anew, which cost more than
    inserting the batch's rows. The statement is the one step_record's update makes.
    """
    by_run: dict[int, list[_Candidate]] = {}
    for c in stored:
        by_run.setdefault(c.run_id, []).append(c)
    now = timezone.now()
    rows = [
        (
            max(c.seq for c in steps),
            len(steps),
            sum(c.tokens_in for c in steps),
            sum(c.tokens_out for c in steps),
            str(sum((c.cost for c in steps), Decimal(0))),
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
            f"updated_at = %s WHERE id = %s",
            rows,
        )
