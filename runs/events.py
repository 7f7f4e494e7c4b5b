"""What the dashboard announces to the pages that follow runs, sent only after the transaction that stored it commits.

A browser must never see an event that a rollback then takes back, so nothing is sent from inside a
transaction: `transaction.on_commit` holds the message until the data is visible to every reader. Every message a
run's page reads is made here:

- `{"type": "step.stored", "run_id", "seq", "kind"}`, with `"last_seq"` when it covers more than one step: the
  steps `seq` to `last_seq` (consecutive, stored in one transaction) were stored; `kind` is the first's
  (runs/services/steps.py makes the blocks, a step with effects always beginning one). The run page needs only
  `seq`: it fetches the steps it lacks from what it holds, so it misses none of a block; a client that tracks
  which seqs it was told of (the tests, the benchmark's browsers) reads `last_seq`.
- `run.changed` (a run's status, totals or host) and `question.changed`, also sent to the group of all runs.

Sockets say only that something was stored; the page reads what from committed rows (runs/run_pages/views_feed.py).
A commit's messages are sent from the thread that committed, or, for the worker sockets' event writer, kept
until its thread hands them back and sent on its event loop (`collected_announcements`).
"""

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

ALL_RUNS_GROUP = "runs"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def step_stored_message(run_id: int, seq: int, last_seq: int, kind: str) -> dict:
    message = {"type": "step.stored", "run_id": run_id, "seq": seq, "kind": kind}
    if last_seq != seq:
        message["last_seq"] = last_seq
    return message


async def _send_all(layer, sends: list[tuple[str, dict]]) -> None:
    for group, message in sends:
        try:
            await layer.group_send(group, message)
        except Exception:  # a full or unreachable layer must not undo a stored event; the feed resyncs by seq
            log.exception("could not publish %s to %s", message.get("type"), group)


_thread = threading.local()


def _send(sends: list[tuple[str, dict]]) -> None:
    """Send a commit's messages: into the collecting caller's list (collected_announcements), or now."""
    outbox = getattr(_thread, "outbox", None)
    if outbox is not None:
        outbox.extend(sends)
        return
    layer = get_channel_layer()
    if layer is None or not sends:
        return
    async_to_sync(_send_all)(layer, sends)


@contextmanager
def collected_announcements() -> Iterator[list[tuple[str, dict]]]:
    """What the transactions committed on this thread announce is kept in the yielded list, for the caller to send
    with `send_collected` on its event loop, rather than sent from this thread. For the event writer, whose thread
    would otherwise wait on the loop once per batch (async_to_sync): on a loaded single process that cost a
    fifth of the events stored per second (docs/benchmarks.md). Still only after the commit: a rolled-back
    transaction adds nothing."""
    collected: list[Any]
    _thread.outbox = collected = []
    try:
        yield collected
    finally:
        del _thread.outbox


async def send_collected(sends: list[tuple[str, dict]]) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await _send_all(layer, sends)


def announce_steps_stored(blocks: list[tuple[int, int, int, str]]) -> None:
    """Announce stored steps, as blocks (run id, first seq, last seq, kind), to their runs' pages after the commit."""
    if blocks:
        sends = [(run_group(block[0]), step_stored_message(*block)) for block in blocks]
        transaction.on_commit(lambda: _send(sends))


def send_to_group_after_commit(group: str, message: dict) -> None:
    """Send `message` to one channel group once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: _send([(group, message)]))


def publish_after_commit(run_id: int, message: dict, *, to_all_runs: bool = False) -> None:
    groups = [run_group(run_id)] + ([ALL_RUNS_GROUP] if to_all_runs else [])
    transaction.on_commit(lambda: _send([(group, message) for group in groups]))
