"""Publishing stored events to the channel layer, after the transaction that stored them commits.

A browser must never see an event that a rollback then takes back, so nothing is sent from inside a
transaction: `transaction.on_commit` holds the message until the data is visible to every reader.
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

ALL_RUNS_GROUP = "runs"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def _send(groups: list[str], message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, message)
        except Exception:  # a full or unreachable layer must not undo a stored event; the feed resyncs by seq
            log.exception("could not publish %s to %s", message.get("type"), group)


def send_to_group_after_commit(group: str, message: dict) -> None:
    """Send `message` to one channel group once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: _send([group], message))


def publish_after_commit(run_id: int, message: dict, *, to_all_runs: bool = False) -> None:
    groups = [run_group(run_id)] + ([ALL_RUNS_GROUP] if to_all_runs else [])
    transaction.on_commit(lambda: _send(groups, message))
