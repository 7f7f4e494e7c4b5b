"""Websocket consumers: transport only. What a message means is the services' (runs.services), what an event
is the parser's (runs/event_parser.py), how events are written in batches the event writer's (runs/event_writer.py).

RunFeedConsumer: a signed-in browser follows one run (`/ws/runs/<id>/`) or every run (`/ws/runs/`). It is told
what was stored (runs/events.py: the run id, seq and kind) after the transaction commits, and pages in the steps
it lacks over HTTP by sequence number, so a reconnect resumes with nothing missed and nothing doubled.

WorkerConsumer: a GPU worker host's socket (docs/protocol.md section 2).
"""

import json
import logging

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.db import DatabaseError

from agentloop.json_safe import json_safe, nests_deeper
from agentloop.protocol import (
    EVENT_MAX_BYTES,
    MESSAGE_MAX_BYTES,
    PROTOCOL_VERSION,
    event_message_bytes,
    speaks_version,
)
from runs import services
from runs.event_parser import EVENT_MAX_DEPTH
from runs.event_writer import EventWriter, echoed
from runs.events import ALL_RUNS_GROUP, run_group
from runs.services.workers import REVOKED

log = logging.getLogger(__name__)


class NoConnectionSweep:
    """channels runs close_old_connections in a thread before every message it dispatches: a thread round trip
    per websocket frame and per group message, which under load costs more than the rest of the handling. These
    consumers reach the database only through database_sync_to_async (which closes old connections itself, before
    and after each call) or through the event writer (which manages its own thread's connection), so the sweep
    guards nothing here and is skipped."""

    async def dispatch(self, message):
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)


class RunFeedConsumer(NoConnectionSweep, AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        run_id = self.scope["url_route"]["kwargs"].get("run_id")
        self.group = run_group(run_id) if run_id is not None else ALL_RUNS_GROUP
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        # The feed is one-way; browsers act through forms, where permissions and CSRF are checked.
        await self.send_json({"type": "error", "error": "this socket only sends"})

    # Handlers for the messages runs/events.py makes; each is forwarded as it is.
    async def step_stored(self, message):
        await self.send_json(message)

    async def run_changed(self, message):
        await self.send_json(message)

    async def question_changed(self, message):
        await self.send_json(message)


# ------------------------------------------------------------------------------------------------ workers

NO_WORK_RETRY_S = 5
# The close code of a socket whose token was revoked while it was open.
AUTH_REFUSED = 4401
# The close code of a socket that a newer socket of its host replaced (docs/protocol.md 2.1): a host has one live
# socket, its newest.
SUPERSEDED = 4409
# The size limits are the protocol's (agentloop/protocol.py; daphne is started with them, kseek_site/serving.py):
# a message up to MESSAGE_MAX_BYTES is read; an event over EVENT_MAX_BYTES (as event_message_bytes measures it,
# alone or in a batch) gets a final nack that names its size.
# The most events one `events` message may list (its size is bounded by MESSAGE_MAX_BYTES like any message's).
# The agentloop worker sends at most 256 (agentloop/worker/window.py).
EVENTS_MAX_COUNT = 1000
# How deep a message may nest objects and arrays before the server walks it (docs/protocol.md 1.1): an event as
# every reader holds it (runs.event_parser.EVENT_MAX_DEPTH); any other message as deep as an `events` message, two
# levels above its events. Measuring, echoing or quoting a deeper one recursed past Python's limit: the socket
# closed with 1011 and the worker sent the event again, forever. A deeper event gets a final nack; a deeper message
# of another type an `error`.
MESSAGE_MAX_DEPTH = EVENT_MAX_DEPTH + 2


def events_problem(events) -> str | None:
    """What makes an `events` message unreadable as a whole (then none of it is stored), or None. An event that is
    an object but wrong inside (a bad seq, an unknown kind) is not a problem of the message: it gets its own nack,
    as it would alone."""
    if not isinstance(events, list):
        return "`events` must be a list of event objects"
    if not events:
        return "`events` lists no event"
    if len(events) > EVENTS_MAX_COUNT:
        return f"{len(events)} events in one message is over the server's limit of {EVENTS_MAX_COUNT}"
    if not all(isinstance(event, dict) for event in events):
        return "every item of `events` must be an event object"
    return None


def text_bytes(text: str) -> int:
    """The size of a text frame as sent (UTF-8). A text of n characters takes n to 4n bytes: only a text that
    could be over the message limit is encoded to measure it."""
    return len(text) if len(text) * 4 <= MESSAGE_MAX_BYTES else len(text.encode("utf-8", "surrogatepass"))


def message_problem(raw: str) -> str | None:
    """A message over the size this server reads. daphne drops such a frame itself (kseek_site/serving.py); this
    holds behind a server that does not, so that no limit depends on how the application is served."""
    size = text_bytes(raw)
    if size > MESSAGE_MAX_BYTES:
        return f"a message of {size} bytes is over the server's limit of {MESSAGE_MAX_BYTES} bytes"
    return None


def nesting_problem(event: dict) -> str | None:
    """Why an event (an `event` message or a batch's item) is refused for its nesting, or None."""
    if nests_deeper(event, EVENT_MAX_DEPTH):
        return f"the event nests deeper than {EVENT_MAX_DEPTH} levels (objects and arrays)"
    return None


def bearer_token(scope) -> str:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            text = value.decode("latin1").strip()
            if text[:7].lower() == "bearer ":
                return text[7:].strip()
    return ""


class WorkerConsumer(NoConnectionSweep, AsyncWebsocketConsumer):
    """The server side of docs/protocol.md section 2: one GPU worker host's socket.

    Events are stored idempotently by (run, seq) and acked, or nacked without storing. Directives wait in the
    database until acked; they are sent after every `hello` and whenever one is stored for this host's runs
    (the `worker.<id>` group hears of it after commit). Within one connection a directive is sent once.
    """

    async def connect(self):
        self.closed = False
        self.worker = await database_sync_to_async(services.worker_host_authenticate)(bearer_token(self.scope))
        self.sent_directives: set[int] = set()
        self.greeted = False
        if self.worker is None:
            # Refused at the handshake: the client sees HTTP 403 and no socket opens (docs/protocol.md 2.1).
            await self.close()
            return
        self.group = services.worker_group(self.worker.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        replaced = await database_sync_to_async(services.worker_connected)(
            worker=self.worker, connection=self.channel_name
        )
        if replaced:
            # One live socket per host (docs/protocol.md 2.1): the older one closes with SUPERSEDED, wherever it is.
            await self.channel_layer.send(replaced, {"type": "worker.superseded"})

    async def disconnect(self, code):
        self.closed = True
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            try:
                await database_sync_to_async(services.worker_disconnected)(
                    worker=self.worker, connection=self.channel_name
                )
            except DatabaseError as passing:
                # Shown connected until its next socket opens: a wrong "connected" on a page, nothing lost.
                log.warning("worker %s disconnected; not recorded, the database failed: %s", self.worker.name, passing)

    async def send_message(self, message: dict) -> None:
        # Strict JSON (docs/protocol.md 2.1), whatever the worker sent: a nack names the event's run_id and seq as
        # sent, and Python reads 1e400 as infinity and NaN as NaN, which json.dumps would write back as `Infinity`
        # and `NaN` (no strict reader takes them), and a lone surrogate as an escape no UTF-8 text holds.
        text = json.dumps(json_safe({"v": PROTOCOL_VERSION, **message}), default=str, allow_nan=False)
        await self.send(text_data=text)

    async def receive(self, text_data=None, bytes_data=None):
        if self.closed:
            return  # closed by the server (a revoked token, a newer socket of the host): nothing more is read
        if text_data is None:
            # docs/protocol.md 2.1: every message is a JSON text frame.
            await self.send_message(
                {"type": "error", "error": "binary frames are not read here: send each message as a JSON text frame"}
            )
            return
        try:
            message = json.loads(text_data)
        except (ValueError, RecursionError):
            await self.send_message({"type": "error", "error": "not a JSON text message (or nested too deep to read)"})
            return
        if not isinstance(message, dict):
            await self.send_message({"type": "error", "error": "a message must be a JSON object"})
            return
        kind = message.get("type")
        if kind == "error":
            # The worker could not read something the server sent (docs/protocol.md 2.2): logged, never answered,
            # whatever its `v` or its shape, so that two sides that misread each other do not trade errors forever.
            words = message.get("error")
            log.warning("worker %s could not read a message: %.300s", self.worker.name, echoed(words) or "(no words)")
            return
        if kind not in ("event", "events") and nests_deeper(message, MESSAGE_MAX_DEPTH):
            # An event's nesting is checked with the event, which then gets a final nack (on_event, on_events).
            await self.send_message(
                {"type": "error", "error": f"a message nested more than {MESSAGE_MAX_DEPTH} levels deep is not read"}
            )
            return
        if not speaks_version(message.get("v")):
            version = echoed(message.get("v"))
            await self.send_message(
                {
                    "type": "error",
                    "error": f"protocol version {version!r:.60} is not spoken here ({PROTOCOL_VERSION} is)",
                }
            )
            return
        too_large = message_problem(text_data)
        if too_large is not None:
            if kind == "event":
                await self.refuse_oversize(message, text_bytes(text_data), too_large)
            else:  # for `events`: each event may be fine alone, and the worker sends smaller messages
                await self.send_message({"type": "error", "error": f"{too_large}; none of it was read"})
            return
        handler = {
            "hello": self.on_hello,
            "claim": self.on_claim,
            "event": self.on_event,
            "events": self.on_events,
            "directive_ack": self.on_directive_ack,
        }.get(kind)
        if handler is None:
            await self.send_message({"type": "error", "error": f"unknown message type {kind!r:.60}"})
            return
        if not self.greeted and kind != "hello":
            # Until the hello the server does not know which runs the worker holds (2.4), so nothing is acted on;
            # an event stays in the worker's spool and is sent again after its hello.
            await self.send_message({"type": "error", "error": f"{kind!r:.60} before hello: send hello first"})
            return
        await handler(message, text_data)

    async def on_hello(self, message, _raw):
        if await self.closed_if_not_live():
            return
        self.worker = await database_sync_to_async(services.worker_hello)(
            worker=self.worker, gpus=message.get("gpus"), targets=message.get("targets")
        )
        _, targets_problem = services.hello_targets(message.get("targets"))
        _, gpus_problem = services.hello_gpus(message.get("gpus"))
        # Only a well-formed list is taken as the worker's word on what it holds; a malformed one changes nothing.
        active = services.hello_active_runs(message.get("active_runs"))
        if active is not None:
            lost = await database_sync_to_async(services.worker_runs_reconcile)(
                worker=self.worker, active_run_ids=active
            )
            if lost:
                log.warning("worker %s reconnected without runs %s", self.worker.name, lost)
        # `accepts`: the optional messages this server reads (docs/protocol.md 2.8); a worker sends `events` only
        # to a server that lists it.
        # `limits`: the largest message this server reads and the largest event it stores (2.1).
        # `targets`: the task targets this worker is given runs of, as the server read its hello (2.2).
        await self.send_message(
            {
                "type": "welcome",
                "worker": self.worker.name,
                "accepts": ["events"],
                "limits": {"message_bytes": MESSAGE_MAX_BYTES, "event_bytes": EVENT_MAX_BYTES},
                "targets": list(self.worker.targets),
            }
        )
        # The worker is greeted all the same (its spooled events are still taken); it hears why no run comes, and
        # why its GPUs are not shown.
        for problem in (targets_problem, gpus_problem):
            if problem is not None:
                await self.send_message({"type": "error", "error": problem})
        self.greeted = True
        # A new hello means the worker may have restarted and forgotten what it got: send everything again.
        self.sent_directives.clear()
        await self.send_pending_directives()

    async def on_claim(self, message, _raw):
        if await self.closed_if_not_live():
            return
        run = await database_sync_to_async(self._claim)(message.get("gpu"))
        if run is None:
            await self.send_message(
                {"type": "no_work", "retry_after_s": NO_WORK_RETRY_S, "reason": services.no_work_reason(self.worker)}
            )
        else:
            await self.send_message({"type": "assign", "run": run})

    def _claim(self, gpu):
        run = services.run_claim(worker=self.worker, gpu=gpu)
        return services.run_assignment(run) if run is not None else None

    async def on_event(self, message, _raw):
        if (deep := nesting_problem(message)) is not None:
            await self.refuse_oversize(message, 0, deep)
            return
        size = event_message_bytes(message)
        if size > EVENT_MAX_BYTES:
            await self.refuse_oversize(message, size)
            return
        # Not awaited: the socket goes on reading while the writer stores this event with others; the ack
        # follows the commit.
        EventWriter.for_this_loop().submit(self, message)

    async def on_events(self, message, _raw):
        events = message.get("events")
        problem = events_problem(events)
        if problem is not None:
            # The whole message is refused before any of it is queued: nothing of it is stored.
            await self.send_message({"type": "error", "error": f"events: {problem}; none of its events was stored"})
            return
        # Each event counts what it would as its own `event` message (event_message_bytes), however the batch
        # was spelled: an event stored alone is stored in any batch.
        kept = []
        for event in events:
            if (deep := nesting_problem(event)) is not None:
                await self.refuse_oversize(event, 0, deep)
            elif (size := event_message_bytes(event)) > EVENT_MAX_BYTES:
                await self.refuse_oversize(event, size)
            else:
                kept.append(event)
        events = kept
        if events and not self.closed:
            EventWriter.for_this_loop().submit_many(self, events)

    async def refuse_oversize(self, event: dict, size: int, error: str = "") -> None:
        """An event too large (or nested too deep) to store: a final nack that names its size (or `error`), so the
        worker drops it (and says so in its run) rather than send it forever, and the refusal kept on the run for
        its page. Not for a host whose token was revoked meanwhile (2.1: nothing it sends is acted on): its event
        gets a retry nack, as the event writer answers it, and the socket closes."""
        if self.closed:
            return
        state = await database_sync_to_async(services.worker_socket_state)(
            worker=self.worker, connection=self.channel_name
        )
        if state is not None:
            why = "its token is revoked" if state == REVOKED else "a newer socket of it replaced this one"
            nack = {
                "type": "nack",
                "run_id": echoed(event.get("run_id")),
                "seq": echoed(event.get("seq")),
                "retry": True,
            }
            await self.send_message(nack | {"error": f"worker {self.worker.name}: {why}"})
            await self.close_not_live(state)
            return
        error = error or f"an event of {size} bytes is over the server's limit of {EVENT_MAX_BYTES} bytes"
        try:
            await database_sync_to_async(services.event_refusal_record)(
                worker=self.worker, event=event, error=error, size_bytes=size
            )
        except DatabaseError as passing:
            log.warning("refusal of run %s #%s not recorded: %s", event.get("run_id"), event.get("seq"), passing)
        await self.send_message(
            {
                "type": "nack",
                "run_id": echoed(event.get("run_id")),
                "seq": echoed(event.get("seq")),
                "error": error,
                "retry": False,
            }
        )

    async def send_reply(self, message: dict) -> None:
        """An ack or nack from the writer; the socket may have closed meanwhile (the worker re-sends)."""
        if self.closed:
            return
        try:
            await self.send_message(message)
        except Exception:
            log.info("worker %s: reply %s not sent, the socket closed", self.worker.name, message.get("type"))

    async def on_directive_ack(self, message, _raw):
        if await self.closed_if_not_live():
            return
        known = await database_sync_to_async(services.directive_acknowledge)(
            worker=self.worker, wire_id=message.get("id")
        )
        if not known:
            await self.send_message(
                {"type": "error", "error": f"no directive {message.get('id')!r:.80} for this worker"}
            )

    async def worker_revoked(self, _message):
        """The host's token was revoked (runs.services.worker_host_revoke) or replaced (worker_host_rotate_token):
        this socket closes now if the token it opened with no longer works, by the database, so that a socket
        opened with a rotation's new token stays open."""
        await self.closed_if_not_live()

    async def worker_superseded(self, _message):
        """A newer socket of this host opened (docs/protocol.md 2.1): this one closes now."""
        await self.close_superseded()

    async def closed_if_not_live(self) -> bool:
        """Whether this socket may no longer act, by the database, closing it if so: the host's token was revoked
        since it opened (4401), or a newer socket of the host opened (4409). The revocation's own message
        (`worker_revoked`) reaches only the sockets its channel layer reaches: not those of a process with the
        in-memory layer when another process revoked it. So every message that could greet the host, hand it a
        run or tell it something (a hello, a claim, a directive ack, pending directives) asks the database first;
        events are checked by the event writer, per batch."""
        state = await database_sync_to_async(services.worker_socket_state)(
            worker=self.worker, connection=self.channel_name
        )
        if state is not None:
            await self.close_not_live(state)
        return state is not None

    async def close_not_live(self, state: str) -> None:
        await (self.close_revoked() if state == REVOKED else self.close_superseded())

    async def close_revoked(self) -> None:
        if not self.closed:
            self.closed = True
            log.warning("worker %s: its token is revoked or replaced; closing its socket", self.worker.name)
            await self.close(code=AUTH_REFUSED)

    async def close_superseded(self) -> None:
        if not self.closed:
            self.closed = True
            log.warning("worker %s: a newer socket of this host opened; closing the older one", self.worker.name)
            await self.close(code=SUPERSEDED)

    async def directives_available(self, _message):
        if self.greeted:
            await self.send_pending_directives()

    async def send_pending_directives(self):
        if await self.closed_if_not_live():
            return
        pending = await database_sync_to_async(services.directives_pending_for)(worker=self.worker)
        for directive in pending:
            if directive.pk in self.sent_directives:
                continue
            self.sent_directives.add(directive.pk)
            await self.send_message(services.directive_wire_message(directive))
            await database_sync_to_async(services.directive_mark_sent)(directive=directive)
