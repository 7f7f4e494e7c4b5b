"""Storing a run's events as steps, each exactly once."""

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from runs.events import publish_after_commit
from runs.models import Run, Step, StepKind
from runs.services.errors import ServiceError, StepConflict


@dataclass(frozen=True)
class StepRecorded:
    step: Step
    created: bool  # False: the same event was stored before (a re-delivery)


def as_datetime(value) -> datetime:
    if value is None:
        return timezone.now()
    if isinstance(value, datetime):
        return value
    parsed = parse_datetime(str(value))
    if parsed is None:
        raise ServiceError(f"not an ISO 8601 timestamp: {value!r}")
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, timezone.utc)


def same_payload(a, b) -> bool:
    # Compare as JSON: the database may hand back a dict with other key order or int/float spellings.
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


_COST_PLACES = Decimal(10) ** -Step._meta.get_field("cost_usd").decimal_places


def same_event(stored: tuple, new: tuple) -> bool:
    """Whether two events under one (run, seq) are the same event: (kind, payload, created_at, tokens_in,
    tokens_out, cost_usd) all equal. docs/protocol.md 1.1: a re-sent event is byte-for-byte the same, so a re-send
    that differs in anything, its usage or its time included, is another event under a used number and is refused
    (it could otherwise change a run's totals or its history). The cost is compared as the column stores it."""
    kind, payload, when, tokens_in, tokens_out, cost = stored
    new_kind, new_payload, new_when, new_in, new_out, new_cost = new
    return (
        kind == new_kind
        and when == new_when
        and (tokens_in, tokens_out) == (new_in, new_out)
        and Decimal(cost).quantize(_COST_PLACES) == Decimal(new_cost).quantize(_COST_PLACES)
        and same_payload(payload, new_payload)
    )


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
    """Store one event of a run, exactly once.

    The same (run, seq) delivered again with the same content is acknowledged without a second row; with other
    content it is refused (StepConflict), because two different events under one number means the sender is
    broken and silently keeping either would lose the other. Run totals are kept in the same transaction.
    """
    if kind not in StepKind.values:
        raise ServiceError(f"unknown step kind {kind!r}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise ServiceError(f"seq must be a non-negative integer, not {seq!r}")
    if not isinstance(payload, dict):
        raise ServiceError("payload must be a JSON object")
    when = as_datetime(created_at)
    cost = Decimal(str(cost_usd))
    try:
        with transaction.atomic():
            step = Step.objects.create(
                run=run,
                seq=seq,
                kind=kind,
                payload=payload,
                created_at=when,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                cost_usd=cost,
            )
            Run.objects.filter(pk=run.pk).update(
                last_seq=Greatest(F("last_seq"), seq),
                step_count=F("step_count") + 1,
                tokens_in=F("tokens_in") + tokens_in,
                tokens_out=F("tokens_out") + tokens_out,
                cost_usd=F("cost_usd") + cost,
                updated_at=timezone.now(),
            )
            publish_after_commit(run.pk, {"type": "step.stored", "run_id": run.pk, "seq": seq, "kind": kind})
    except IntegrityError:
        existing = Step.objects.filter(run=run, seq=seq).first()
        if existing is None:  # the integrity error was something else: let it be seen
            raise
        # A caller that gives no time (not a worker: its events carry `ts`) is not held to the stored one.
        compared_when = existing.created_at if created_at is None else when
        if not same_event(
            (
                existing.kind,
                existing.payload,
                existing.created_at,
                existing.tokens_in,
                existing.tokens_out,
                existing.cost_usd,
            ),
            (kind, payload, compared_when, tokens_in, tokens_out, cost),
        ):
            raise StepConflict(f"run {run.pk} already has a different step #{seq} ({existing.kind})") from None
        return StepRecorded(existing, created=False)
    return StepRecorded(step, created=True)
