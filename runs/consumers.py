"""Websocket consumers.

RunFeedConsumer: a signed-in browser follows one run (`/ws/runs/<id>/`) or every run (`/ws/runs/`). It is told
what was stored (the run id, seq and kind) after the transaction commits, and pages in the steps it lacks over
HTTP by sequence number, so a reconnect resumes with nothing missed and nothing doubled.
"""

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from runs.events import ALL_RUNS_GROUP, run_group


class RunFeedConsumer(AsyncJsonWebsocketConsumer):
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

    # Handlers for the messages runs.events publishes; each is forwarded as it is.
    async def step_stored(self, message):
        await self.send_json(message)

    async def run_changed(self, message):
        await self.send_json(message)

    async def question_changed(self, message):
        await self.send_json(message)


# ------------------------------------------------------------------------------------------------ workers

import json  # noqa: E402
import logging  # noqa: E402

from channels.db import database_sync_to_async  # noqa: E402
from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from django.db import DatabaseError, close_old_connections  # noqa: E402

from runs import services  # noqa: E402

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
NO_WORK_RETRY_S = 5


def bearer_token(scope) -> str:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            text = value.decode("latin1").strip()
            if text[:7].lower() == "bearer ":
                return text[7:].strip()
    return ""


class WorkerConsumer(AsyncWebsocketConsumer):
    """The server side of docs/protocol.md section 2: one GPU worker host's socket.

    Events are stored idempotently by (run, seq) and acked, or nacked without storing. Directives wait in the
    database until acked; they are sent after every `hello` and whenever one is stored for this host's runs
    (the `worker.<id>` group hears of it after commit). Within one connection a directive is sent once.
    """

    async def connect(self):
        self.worker = await database_sync_to_async(services.worker_host_authenticate)(bearer_token(self.scope))
        self.sent_directives: set[int] = set()
        self.greeted = False
        if self.worker is None:
            await self.close(code=4401)
            return
        self.group = services.worker_group(self.worker.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def send_message(self, message: dict) -> None:
        await self.send(text_data=json.dumps({"v": PROTOCOL_VERSION, **message}, default=str))

    async def receive(self, text_data=None, bytes_data=None):
        try:
            message = json.loads(text_data if text_data is not None else bytes_data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            await self.send_message({"type": "error", "error": "not a JSON text message"})
            return
        if not isinstance(message, dict):
            await self.send_message({"type": "error", "error": "a message must be a JSON object"})
            return
        if message.get("v") != PROTOCOL_VERSION:
            await self.send_message({"type": "error", "error": f"protocol version {message.get('v')!r} is not spoken here (1 is)"})
            return
        handler = {"hello": self.on_hello, "claim": self.on_claim, "event": self.on_event,
                   "directive_ack": self.on_directive_ack}.get(message.get("type"))
        if handler is None:
            await self.send_message({"type": "error", "error": f"unknown message type {message.get('type')!r}"})
            return
        await handler(message)

    async def on_hello(self, message):
        self.worker = await database_sync_to_async(services.worker_hello)(worker=self.worker, gpus=message.get("gpus"))
        await self.send_message({"type": "welcome", "worker": self.worker.name})
        self.greeted = True
        # A new hello means the worker may have restarted and forgotten what it got: send everything again.
        self.sent_directives.clear()
        await self.send_pending_directives()

    async def on_claim(self, message):
        run = await database_sync_to_async(self._claim)()
        if run is None:
            await self.send_message({"type": "no_work", "retry_after_s": NO_WORK_RETRY_S})
        else:
            await self.send_message({"type": "assign", "run": run})

    def _claim(self):
        run = services.run_claim(worker=self.worker)
        return services.run_assignment(run) if run is not None else None

    async def on_event(self, message):
        run_id, seq = message.get("run_id"), message.get("seq")
        try:
            await database_sync_to_async(self._store_event)(message)
        except services.ServiceError as refused:
            await self.send_message({"type": "nack", "run_id": run_id, "seq": seq, "error": str(refused), "retry": False})
        except DatabaseError as passing:
            log.warning("worker %s: event %s/%s not stored: %s", self.worker.name, run_id, seq, passing)
            await self.send_message({"type": "nack", "run_id": run_id, "seq": seq, "error": "database busy", "retry": True})
        except Exception:
            # A fault of ours: keep the event in the worker's spool rather than lose it.
            log.exception("worker %s: event %s/%s failed", self.worker.name, run_id, seq)
            await self.send_message({"type": "nack", "run_id": run_id, "seq": seq, "error": "server error", "retry": True})
        else:
            await self.send_message({"type": "ack", "run_id": run_id, "seq": seq})

    def _store_event(self, message):
        close_old_connections()
        services.worker_event_record(worker=self.worker, event=message)

    async def on_directive_ack(self, message):
        known = await database_sync_to_async(services.directive_acknowledge)(worker=self.worker, wire_id=message.get("id"))
        if not known:
            await self.send_message({"type": "error", "error": f"no directive {message.get('id')!r} for this worker"})

    async def directives_available(self, _message):
        if self.greeted:
            await self.send_pending_directives()

    async def send_pending_directives(self):
        pending = await database_sync_to_async(services.directives_pending_for)(worker=self.worker)
        for directive in pending:
            if directive.pk in self.sent_directives:
                continue
            self.sent_directives.add(directive.pk)
            await self.send_message(services.directive_wire_message(directive))
            await database_sync_to_async(services.directive_mark_sent)(directive=directive)
