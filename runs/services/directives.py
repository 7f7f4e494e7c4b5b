"""Directives: instructions for the worker holding a run, stored first, pushed after commit, kept until acked."""

import logging
import re

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agentloop.protocol import PROTOCOL_VERSION
from runs.models import Directive, DirectiveAction, Run, WorkerHost
from runs.services.errors import ServiceError

_log = logging.getLogger(__name__)


def worker_group(host_id: int) -> str:
    """The channel group of one worker host's sockets: told when a directive for it is stored."""
    return f"worker.{host_id}"


def _tell_worker_after_commit(host_id: int | None) -> None:
    if host_id is None:
        return

    def send():
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(worker_group(host_id), {"type": "directives.available"})
        except Exception:  # the directive is stored; the worker gets it at its next hello
            _log.exception("could not tell worker %s about a directive", host_id)

    transaction.on_commit(send)


def directive_send(*, run: Run, action: str, fields: dict | None = None, user=None) -> Directive:
    """Queue an instruction for the worker holding `run`; it is pushed after commit and kept until acked."""
    if action not in DirectiveAction.values:
        raise ServiceError(f"unknown directive action {action!r}")
    with transaction.atomic():
        directive = Directive.objects.create(run=run, action=action, fields=fields or {}, created_by=user)
        # The holder as stored now: the caller's run object may predate the claim.
        _tell_worker_after_commit(Run.objects.filter(pk=run.pk).values_list("worker_id", flat=True).first())
    return directive


def directives_pending_for(*, worker: WorkerHost) -> list[Directive]:
    """Unacknowledged directives of the runs this worker holds, oldest first."""
    return list(
        Directive.objects.filter(run__worker=worker, acked_at__isnull=True).select_related("created_by").order_by("pk")
    )


def directive_mark_sent(*, directive: Directive) -> None:
    Directive.objects.filter(pk=directive.pk).update(sent_count=F("sent_count") + 1, last_sent_at=timezone.now())


def directive_acknowledge(*, worker: WorkerHost, wire_id: str) -> bool:
    """Mark a directive acknowledged. False when the id is not one of this worker's (nothing changes)."""
    pk = directive_pk(wire_id)
    if pk is None:
        return False
    updated = Directive.objects.filter(pk=pk, run__worker=worker, acked_at__isnull=True).update(acked_at=timezone.now())
    # An id acked before is fine (the worker re-acks duplicates); an id of another worker's run is not.
    return bool(updated) or Directive.objects.filter(pk=pk, run__worker=worker).exists()


# The ids this server gives directives (Directive.wire_id): "d-" and the row's key in ASCII digits, which a
# 64-bit key writes in at most 19.
_WIRE_ID = re.compile(r"d-([1-9][0-9]{0,18})")


def directive_pk(wire_id) -> int | None:
    """The key of the directive a worker's `directive_ack` names, or None when the id is none the server sends.
    Read strictly: str.isdigit took digits int() refuses ("d-\u00b2": the socket closed, 1011) or reads as
    others (Arabic-Indic digits acknowledged the directive of the same number), and a longer number overflowed."""
    found = _WIRE_ID.fullmatch(wire_id) if isinstance(wire_id, str) else None
    pk = int(found.group(1)) if found else None
    return pk if pk is not None and pk <= 2**63 - 1 else None


def directive_wire_message(directive: Directive) -> dict:
    """The `directive` message of docs/protocol.md 2.3 for this row."""
    return {
        "type": "directive",
        "v": PROTOCOL_VERSION,
        "id": directive.wire_id,
        "run_id": directive.run_id,
        "action": directive.action,
        **directive.fields,
    }
