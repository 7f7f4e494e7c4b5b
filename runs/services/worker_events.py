"""A worker's events: parsed, checked against who holds their runs, stored by the one store, refusals kept.

What the worker sockets' event writer calls (runs/event_writer.py), for one event or many at once; the events
themselves are read by runs/event_parser.py and stored by runs/services/steps.py.
"""

from typing import Any, NamedTuple, cast

from django.db import transaction
from django.utils import timezone

from agentloop.json_safe import clean_text
from runs.event_parser import INT_COLUMN_MAX, RUN_ID_MAX, ParsedEvent, Refusal, parse_event
from runs.events import publish_after_commit
from runs.models import FINISHED_STATUSES, RefusedEvent, Run, RunStatus, Step, StepKind, WorkerHost
from runs.nul_escape import NUL, SHOWN
from runs.services.errors import ServiceError, StepConflict, UnconfirmedSuccess
from runs.services.runs import run_set_status
from runs.services.step_effects import EFFECTS
from runs.services.steps import EventOutcome, StepRecorded, events_store


def worker_events_record(
    *, items: list[tuple[WorkerHost, dict]], sockets: list[str | None] | None = None
) -> list[EventOutcome]:
    """Store `event` messages (from one or several worker sockets) in one transaction; one outcome each.

    An event is refused (stored: False, with its reason) when the parser refuses it, when its run does not exist
    or is not held by its sender, or when the store refuses it (a different event under a used seq, a payload of
    the wrong shape, a `succeeded` nobody confirmed, an event after its run's final status). A refusal for good
    of an event on a run its sender holds is kept on the run (RefusedEvent), so its page says what is missing
    and why: the parser's refusals too, where the event's `run_id` and `seq` can be read. A sender whose token
    was revoked after its socket opened has nothing stored (sender_revoked: not refused for good), nor has a
    socket that a newer socket of its host replaced (sender_superseded; `sockets`: the channel name of the socket
    each item came on, None where the caller has none). A fault of the database raises DatabaseError for the
    whole batch, which then is not stored at all.
    """
    outcomes: list[EventOutcome | None] = [None] * len(items)
    parsed = []  # (index, worker, parsed event)
    unparsed = []  # (index, worker, event, the parser's reason): refused for good
    event: dict[str, Any] | ParsedEvent  # as sent, then as parsed (the loops below)
    for index, (worker, event) in enumerate(items):
        result = parse_event(event, time_required=True, strict=True)
        if isinstance(result, Refusal):
            outcomes[index] = EventOutcome(stored=False, error=result.reason)
            unparsed.append((index, worker, event, result.reason))
        else:
            parsed.append((index, worker, result))
    with transaction.atomic():
        holders = dict(Run.objects.filter(pk__in={e.run_id for _, _, e in parsed}).values_list("pk", "worker_id"))
        # A socket that may no longer act (its host's token revoked, or a newer socket of the host opened since):
        # nothing more of it is stored (it is being closed). Not refused for good: the events stay in its spool,
        # for a new token or the live socket to deliver.
        hosts = _senders({worker.pk for worker, _ in items})
        for index, worker, event, reason in unparsed:
            # The parser's refusal is kept on its run too, where the event names one this host holds by a number
            # it can be kept under (event_refusal_record reads both): the run's page says what is missing and why.
            if _not_live(worker, sockets[index] if sockets else None, hosts) is None:
                event_refusal_record(worker=worker, event=event, error=reason)
        held = []
        for index, worker, event in parsed:
            outcomes[index] = _not_live(worker, sockets[index] if sockets else None, hosts)
            if outcomes[index] is not None:
                continue
            if event.run_id not in holders:
                outcomes[index] = EventOutcome(stored=False, error=f"there is no run {event.run_id}")
            elif holders[event.run_id] != worker.pk:
                outcomes[index] = EventOutcome(
                    stored=False, error=f"run {event.run_id} is not assigned to worker {worker.name}"
                )
            else:
                held.append(index)
        held_set = set(held)
        for index, outcome in zip(held, _store_until_the_end([e for i, _, e in parsed if i in held_set])):
            outcomes[index] = outcome
            if not outcome.stored:
                # Refused for good on a run this host holds: the run's page says what is missing and why. Outside
                # the event's own savepoint, which rolled back.
                worker, event = items[index]
                event_refusal_record(worker=worker, event=event, error=outcome.error, fail_run=outcome.ends_run)
    return cast("list[EventOutcome]", outcomes)  # (every slot is filled above)


def _senders(host_ids: set[int]) -> dict[int, tuple]:
    """host -> (revoked_at, the channel name of its live socket, its token's hash), read in the batch's
    transaction."""
    if not host_ids:
        return {}
    rows = WorkerHost.objects.filter(pk__in=host_ids).values_list("pk", "revoked_at", "connection", "token_hash")
    return {pk: (revoked_at, connection, token_hash) for pk, revoked_at, connection, token_hash in rows}


def _not_live(worker: WorkerHost, socket: str | None, hosts: dict[int, tuple]) -> EventOutcome | None:
    """The outcome of an event whose socket may no longer act (docs/protocol.md 2.1), or None."""
    revoked_at, live, token_hash = hosts.get(worker.pk, (None, socket, worker.token_hash))
    # A token replaced by a rotation (worker_host_rotate_token) is as withdrawn as a revoked one.
    if revoked_at is not None or token_hash != worker.token_hash:
        return EventOutcome(stored=False, error=f"the token of worker {worker.name} is revoked", sender_revoked=True)
    if socket is not None and live != socket:
        return EventOutcome(
            stored=False,
            error=f"a newer socket of worker {worker.name} replaced this one: send it there",
            sender_superseded=True,
        )
    return None


def _is_final(event: ParsedEvent) -> bool:
    return event.kind == StepKind.STATUS and event.payload.get("status") in FINISHED_STATUSES


class _End(NamedTuple):
    seq: int  # the worker's final status's, or the last stored before the server ended the run
    server_status: str = ""  # the status the server ended it with ("": the worker's final status ended it)

    def refusal(self, run_id: int) -> str:
        """The protocol's words for an event after this end (docs/protocol.md 1.2)."""
        end = (
            f"the server ended it {self.server_status} after step #{self.seq}"
            if self.server_status
            else f"its final status is step #{self.seq}"
        )
        return f"run {run_id} has ended: {end}, and no event after it (nor another final status) is stored"


def _stored_ends(run_ids: set[int]) -> dict[int, _End]:
    """run -> the seq of its end: its stored final status (the first, should an older server have stored two),
    or, for a run the server ended itself (`_ended_by_server`), the last seq it stored then (nothing is stored
    after it, so its last_seq stays that). Only a finished run has one, so a batch of running runs costs one query
    on their rows, none on their steps."""
    finished = {
        pk: (status, last_seq)
        for pk, status, last_seq in Run.objects.filter(pk__in=run_ids, status__in=FINISHED_STATUSES).values_list(
            "pk", "status", "last_seq"
        )
    }
    ends: dict[int, _End] = {}
    if finished:
        for run_id, seq in Step.objects.filter(
            run_id__in=finished, kind=StepKind.STATUS, payload__status__in=FINISHED_STATUSES
        ).values_list("run_id", "seq"):
            ends[run_id] = _End(min(seq, ends[run_id].seq if run_id in ends else seq))
        for run_id, (status, last_seq) in finished.items():
            if run_id not in ends and _ended_by_server(status):
                ends[run_id] = _End(last_seq, status)
    return ends


def _ended_by_server(status: str) -> bool:
    """Whether a finished run without a final status of its worker's was ended by the server itself: failed when
    its host came back without it (workers.worker_runs_reconcile) or when the server refused its unconfirmed
    `succeeded` (event_refusal_record). Nothing of its worker's is stored after that, as after a final status
    (docs/protocol.md 1.2). An operator's stop (stopped) is not such an end: the worker's events until it hears the
    stop, and its own final status, are stored, and the run stays stopped."""
    return status != RunStatus.STOPPED


def _store_until_the_end(events: list[ParsedEvent]) -> list[EventOutcome]:
    """Store a worker's events of runs it holds (events_store), less what comes after its run's end: a run's
    final status is its last event (docs/protocol.md 1.2), so once one is stored, a new event under a later seq,
    or a second final status, is refused for good. A re-send of a stored event is still acknowledged (stored
    once, 2.4), and an event under an earlier seq (a gap before the final status, filled late) is stored.

    Two passes, in the caller's transaction: first every event that is not after an end stored before or sent in
    this call (the final statuses among them); then the rest, against the ends stored now (a final status the
    store refused, such as an unconfirmed `succeeded`, ends nothing)."""
    outcomes: list[EventOutcome | None] = [None] * len(events)
    ends = _stored_ends({e.run_id for e in events})
    horizon = {run_id: end.seq for run_id, end in ends.items()}
    for e in events:
        if _is_final(e):
            horizon[e.run_id] = min(e.seq, horizon.get(e.run_id, e.seq))
    later = {
        i for i, e in enumerate(events) if e.seq > horizon.get(e.run_id, e.seq) or _is_final(e) and e.run_id in ends
    }
    first = [i for i in range(len(events)) if i not in later]
    for i, outcome in zip(first, events_store([events[i] for i in first], effects=EFFECTS)):
        outcomes[i] = outcome
    if later:
        rest = []
        for i, refusal in zip(sorted(later), _after_the_end([events[i] for i in sorted(later)])):
            if refusal is None:
                rest.append(i)
            else:
                outcomes[i] = EventOutcome(stored=False, error=refusal)
        for i, outcome in zip(rest, events_store([events[i] for i in rest], effects=EFFECTS)):
            outcomes[i] = outcome
    return cast("list[EventOutcome]", outcomes)


def _after_the_end(events: list[ParsedEvent]) -> list[str | None]:
    """For each event, why it is refused as coming after its run's end (its stored final status, or the server's
    own end of it), or None (then it goes to
    the store, which acknowledges a re-send of a stored event and refuses a different one under its seq)."""
    ends = _stored_ends({e.run_id for e in events})
    stored = set(
        Step.objects.filter(run_id__in={e.run_id for e in events}, seq__in={e.seq for e in events}).values_list(
            "run_id", "seq"
        )
    )
    return [
        ends[e.run_id].refusal(e.run_id)
        if (e.run_id, e.seq) not in stored and e.run_id in ends and (e.seq > ends[e.run_id].seq or _is_final(e))
        else None
        for e in events
    ]


def worker_event_record(*, worker: WorkerHost, event: dict) -> StepRecorded:
    """Store one `event` message from `worker` as worker_events_record does; a refusal raises (StepConflict for a
    different event under a used seq, UnconfirmedSuccess, ServiceError), after it is kept on its run."""
    [outcome] = worker_events_record(items=[(worker, event)])
    if not outcome.stored:
        error = StepConflict if outcome.conflict else UnconfirmedSuccess if outcome.ends_run else ServiceError
        raise error(outcome.error)
    step = Run.objects.get(pk=event["run_id"]).steps.get(seq=event["seq"])
    return StepRecorded(step, created=outcome.created)


def _seq_of(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_COLUMN_MAX:
        raise ValueError(value)
    return value


def _storable(text: str) -> str:
    """A refused event's own text (its kind, words quoting it) as a text column holds it on every database: a NUL
    (which PostgreSQL's text columns cannot hold) shown as "␀", as in payloads (runs/nul_escape.py), and a lone
    surrogate (which no database's UTF-8 can hold: SQLite raised, and the whole batch was nacked for retry) as
    U+FFFD. Kinds no sender of ours writes."""
    return clean_text(text.replace(NUL, SHOWN))


def event_refusal_record(
    *, worker: WorkerHost, event: dict, error: str, size_bytes: int = 0, fail_run: bool = False
) -> RefusedEvent | None:
    """Keep on its run that an event was refused for good, so that the run's page says what is missing and why
    (the worker drops a refused event). Only for a run this worker holds: nobody writes on another's run. With
    `fail_run` (a `succeeded` nobody confirmed) the run also ends failed, with the refusal as its reason."""
    run_id = event.get("run_id")
    # A run is named by its id as a JSON integer only (docs/protocol.md 1.1): "7", 7.0 and true name no run, and
    # their refusal is kept on none.
    if type(run_id) is not int or not 0 < run_id <= RUN_ID_MAX:
        return None
    try:
        seq = _seq_of(event.get("seq"))
    except ValueError:
        return None
    run = Run.objects.select_related("task").filter(pk=run_id, worker=worker).first()
    if run is None:
        return None
    kind = cast(str, event.get("kind") if isinstance(event.get("kind"), str) else "")
    refusal, _ = RefusedEvent.objects.update_or_create(
        run=run,
        seq=seq,
        defaults={
            "kind": _storable(kind[:32]),
            "size_bytes": min(size_bytes, INT_COLUMN_MAX),
            "error": _storable(error[:2000]),
            "refused_at": timezone.now(),
        },
    )
    if fail_run and not run.is_finished:
        run_set_status(run=run, status=RunStatus.FAILED, reason=f"refused: {error}")
    else:
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status})
    return refusal
