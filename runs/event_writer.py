"""The worker sockets' event writer: the events of every worker socket of this process, stored in batches.

A socket hands each event it reads to its process's writer and goes on reading; the writer stores what arrived
while the previous batch was being written in one transaction (runs.services.worker_events_record, which parses,
stores and announces them after the commit) and then answers each socket: an `ack` or `nack` per `event`
message, one `acks` per socket and batch for the events of `events` messages (docs/protocol.md 2.8), only after
the commit. The sockets themselves (runs/consumers.py) keep only the transport.
"""

import asyncio
import logging
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from asgiref.sync import sync_to_async
from django.db import DatabaseError, close_old_connections, connection

from runs import events, services
from runs.models import WorkerHost

log = logging.getLogger(__name__)

# The most events one transaction stores; more wait for the next batch.
BATCH_MAX_EVENTS = 500
# How long the event writer keeps its database connection with no batch to write.
WRITER_IDLE_RELEASE_S = 1.0


def echoed(value):
    """A field of the worker's (an event's run_id or seq) as a reply names it: as sent when it is a JSON scalar,
    else null (then it names no event, and a worker answers `error`: docs/protocol.md 2.2). The reply is then
    made strict JSON (runs.consumers.WorkerConsumer.send_message)."""
    return None if isinstance(value, (dict, list)) else value


class EventSource(Protocol):
    """What the writer needs of a socket: its host, its channel name (which socket of the host it is), a way to
    answer, and ways to close it (a revoked token, a newer socket of its host)."""

    worker: WorkerHost
    channel_name: str

    async def send_reply(self, message: dict) -> None: ...

    async def close_revoked(self) -> None: ...

    async def close_superseded(self) -> None: ...


class EventWriter:
    """Stores the events of every worker socket of this process in batches: one transaction for what arrived
    while the previous batch was being written (group commit), then an ack or nack for each.

    Writes run on one thread of their own, which keeps its database connection while batches follow each other
    and releases it (close_old_connections, so as CONN_MAX_AGE says) once no batch has come for
    WRITER_IDLE_RELEASE_S. Releasing after every batch that emptied the queue, as this did first, opened and
    closed a connection per batch under a steady load (on SQLite the close also checkpoints the WAL): a third
    of the writer's time in a profile at 2,000 events/s (docs/benchmarks.md). A batch that
    the database cannot take (unreachable, locked) is nacked with retry: the worker keeps the events and sends
    them again; nothing is acked before its transaction commits.
    """

    _thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kseek-event-writer")
    _per_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EventWriter]" = weakref.WeakKeyDictionary()

    def __init__(self):
        self._release_timer: asyncio.TimerHandle | None = None
        # (socket, event, came in an `events` message): such events are acknowledged together in `acks`.
        self.queue: list[tuple[EventSource, dict, bool]] = []
        self.draining = False

    @classmethod
    def for_this_loop(cls) -> "EventWriter":
        loop = asyncio.get_running_loop()
        writer = cls._per_loop.get(loop)
        if writer is None:
            writer = cls._per_loop[loop] = cls()
        return writer

    def submit(self, consumer: "EventSource", message: dict) -> None:
        """One `event` message: answered alone, with an `ack` or a `nack`."""
        self.queue.append((consumer, message, False))
        self._start()

    def submit_many(self, consumer: "EventSource", events: list[dict]) -> None:
        """The events of one `events` message, queued together: they go into the same transaction unless the
        batch is full, and the stored ones are acknowledged in one `acks` message per socket and batch."""
        self.queue.extend((consumer, event, True) for event in events)
        self._start()

    def _start(self) -> None:
        if not self.draining:
            self.draining = True
            asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        if self._release_timer is not None:
            self._release_timer.cancel()
        while self.queue:
            batch, self.queue = self.queue[:BATCH_MAX_EVENTS], self.queue[BATCH_MAX_EVENTS:]
            await self._write(batch)
        self.draining = False  # no await since the loop's test: a submit either sees the flag set or not
        self._release_timer = asyncio.get_running_loop().call_later(WRITER_IDLE_RELEASE_S, self._release_if_idle)

    def _release_if_idle(self) -> None:
        self._release_timer = None
        if not self.draining:
            # Not awaited: the job runs on the writer thread after any batch already handed to it.
            self._thread.submit(close_old_connections)

    @classmethod
    def release_connection(cls) -> None:
        """Release the writer thread's connection now and wait for it. For an event loop that ends before the idle
        release fires: tests call it after each test, so that PostgreSQL can drop the test database."""
        cls._thread.submit(_close_connection).result()

    async def _write_each_alone(self, batch: list[tuple["EventSource", dict, bool]]) -> None:
        """A batch that a fault of ours made fail, written again one event at a time: the event that raised is nacked
        for retry alone, and the others (another host's among them: the writer serves every socket of the process)
        are stored and answered as usual, not held back at every re-send (docs/protocol.md 2.4)."""
        for item in batch:
            await self._write([item])

    async def _write(self, batch: list[tuple["EventSource", dict, bool]]) -> None:
        try:
            outcomes, announcements = await sync_to_async(_store_batch, thread_sensitive=False, executor=self._thread)(
                [(consumer.worker, message) for consumer, message, _ in batch],
                [consumer.channel_name for consumer, _, _ in batch],
            )
        except DatabaseError as passing:
            log.warning("%d event(s) not stored, the database failed: %s", len(batch), passing)
            replies: list[tuple[str | None, bool]] = [("database unavailable", True)] * len(batch)
            outcomes = None
        except Exception:  # a fault of ours: the workers keep the events rather than lose them
            log.exception("%d event(s) not stored", len(batch))
            if len(batch) > 1:
                await self._write_each_alone(batch)
                return
            replies = [("server error", True)] * len(batch)
            outcomes = None
        if outcomes is not None:
            await events.send_collected(announcements)
            replies = [
                (None, False) if o.stored else (o.error, o.sender_revoked or o.sender_superseded) for o in outcomes
            ]
        # An event that came alone is answered alone (`ack`); those that came in `events` messages are
        # acknowledged in one `acks` per socket, after the batch's nacks. Either way only after the commit.
        acks: dict[EventSource, list] = {}
        for (consumer, message, batched), (error, retry) in zip(batch, replies):
            reply = {"run_id": echoed(message.get("run_id")), "seq": echoed(message.get("seq"))}
            if error is None and batched:
                acks.setdefault(consumer, []).append([reply["run_id"], reply["seq"]])
                continue
            if error is None:
                reply["type"] = "ack"
            else:
                reply.update(type="nack", error=error, retry=retry)
            await consumer.send_reply(reply)
        for consumer, items in acks.items():
            await consumer.send_reply({"type": "acks", "acks": items})
        # A host revoked while its socket was open, where the revocation's message did not reach this process (it
        # was revoked from another process with no shared channel layer): its socket closes after its nacks.
        for consumer in {consumer for (consumer, _, _), o in zip(batch, outcomes or []) if o.sender_revoked}:
            await consumer.close_revoked()
        # A socket that a newer socket of its host replaced (docs/protocol.md 2.1): closed after its nacks, where the
        # replacement's own message has not closed it yet.
        for consumer in {consumer for (consumer, _, _), o in zip(batch, outcomes or []) if o.sender_superseded}:
            await consumer.close_superseded()


def _close_connection() -> None:
    if connection.connection is not None:
        connection.close()


def _store_batch(items, sockets):
    """Store one batch on the writer's thread, on the connection the previous batch left open; return its outcomes
    and what its commit announces (sent by the caller, on the event loop)."""
    try:
        with events.collected_announcements() as announcements:
            return services.worker_events_record(items=items, sockets=sockets), announcements
    except DatabaseError:
        # The connection may be broken (a restarted database): drop it, the next batch connects afresh.
        connection.close()
        raise
