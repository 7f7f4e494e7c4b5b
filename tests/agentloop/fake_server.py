"""A stand-in for the dashboard's side of the worker protocol (docs/protocol.md, section 2), for tests:
token check, hello/welcome, claim/assign, events stored once by (run, seq) and acknowledged (one `event` a message,
or `events` in batches when it offers them), directives. It can announce size limits (and, as daphne does, drop
the connection on a message over them), refuse chosen events for good, and send raw frames after its welcome."""

from __future__ import annotations

import asyncio
import json
import threading

from websockets.asyncio.server import serve


class FakeServer:
    def __init__(
        self,
        token: str,
        runs: list[dict],
        *,
        accepts_events: bool = False,
        drop_frames: int = 0,
        limits: dict | None = None,
        refuse=None,
        after_welcome: list | None = None,
    ):
        """accepts_events: the welcome offers `events` (as runs.consumers does). drop_frames: the first that many
        event frames are received, left unanswered, and their connection closed (a server that went away).
        limits: the welcome's `limits`; a message over its `message_bytes` closes the connection unanswered.
        refuse(event) -> error or None: events answered with a final nack. after_welcome: frames (text or
        bytes) sent as they are after each welcome."""
        self.token = token
        self.accepts_events = accepts_events
        self.drop_frames = drop_frames
        self.limits = limits
        self.refuse = refuse or (lambda event: None)
        self.after_welcome = list(after_welcome or [])
        self.errors: list[str] = []  # the worker's `error` messages
        self.largest_message = 0
        self.oversize_messages = 0
        self.frames: list[tuple[str, list]] = []  # ("event" | "events", [(run_id, seq), ...]) as received
        self.ack_delay_s = 0.0
        self.queue = list(runs)
        self.steps: dict[tuple, dict] = {}  # (run_id, seq) -> event
        self.deliveries: list[tuple] = []  # every event message received, duplicates included
        self.conflicts: list[tuple] = []
        self.refusals: list[tuple] = []  # events answered with a final nack by `refuse`
        self.hellos: list[dict] = []
        self.directive_acks: list[str] = []
        self.outbox: list[dict] = []  # directives to send (re-sent until acked)
        self.refused = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)

    def _main(self):
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self):
        async with serve(
            self._handler, "127.0.0.1", 0, process_request=self._check_token, max_size=64 * 2**20
        ) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._stop = asyncio.Event()
            self._ready.set()
            await self._stop.wait()

    def _check_token(self, connection, request):
        if request.headers.get("Authorization") != f"Bearer {self.token}" or request.path != "/ws/worker/":
            self.refused += 1
            return connection.respond(403, "refused\n")
        return None

    async def _handler(self, ws):
        async for raw in ws:
            self.largest_message = max(self.largest_message, len(raw))
            if self.limits and len(raw) > self.limits["message_bytes"]:
                self.oversize_messages += 1
                await ws.close()  # as daphne does over its limit: no answer
                return
            msg = json.loads(raw)
            assert msg["v"] == 1
            kind = msg["type"]
            if kind == "hello":
                await self._welcome(ws, msg)
            elif kind == "error":
                self.errors.append(msg["error"])
            elif kind == "claim":
                await ws.send(json.dumps(self._assignment()))
            elif kind in ("event", "events"):
                if not await self._store_events(ws, kind, [msg] if kind == "event" else msg["events"]):
                    return  # the connection was dropped
            elif kind == "directive_ack":
                self.directive_acks.append(msg["id"])
                self.outbox = [d for d in self.outbox if d["id"] != msg["id"]]

    async def _welcome(self, ws, hello: dict) -> None:
        """The welcome, then the raw frames and the unacknowledged directives that follow each one."""
        self.hellos.append(hello)
        welcome = {"type": "welcome", "v": 1, "worker": hello["host"]}
        if self.accepts_events:
            welcome["accepts"] = ["events"]
        if self.limits is not None:
            welcome["limits"] = self.limits
        await ws.send(json.dumps(welcome))
        for frame in self.after_welcome:
            await ws.send(frame)
        for d in list(self.outbox):
            await ws.send(json.dumps(d))

    def _assignment(self) -> dict:
        """The answer to a claim: the next queued run, or no work."""
        if self.queue:
            return {"type": "assign", "v": 1, "run": self.queue.pop(0)}
        return {"type": "no_work", "v": 1, "retry_after_s": 0.5}

    async def _store_events(self, ws, kind: str, events: list[dict]) -> bool:
        """Store and answer one `event` or `events` message; False when its connection was dropped instead."""
        self.frames.append((kind, [(e["run_id"], e["seq"]) for e in events]))
        if self.drop_frames > 0:
            self.drop_frames -= 1
            await ws.close()
            return False
        await asyncio.sleep(self.ack_delay_s)
        acked = []
        for e in events:
            nack = self._store_event(e)
            if nack:
                await ws.send(json.dumps(nack))
            else:
                acked.append([e["run_id"], e["seq"]])
        if kind == "event" and acked:
            await ws.send(json.dumps({"type": "ack", "v": 1, "run_id": acked[0][0], "seq": acked[0][1]}))
        elif acked:
            await ws.send(json.dumps({"type": "acks", "v": 1, "acks": acked}))
        return True

    def _store_event(self, e: dict) -> dict | None:
        """Store one event once by (run, seq); the final nack that refuses it instead, or None."""
        key = (e["run_id"], e["seq"])
        self.deliveries.append(key)
        event = {k: e[k] for k in ("run_id", "seq", "kind", "ts", "payload", "usage")}
        refusal = self.refuse(event)
        if refusal:
            self.refusals.append(key)
            return {"type": "nack", "v": 1, "run_id": key[0], "seq": key[1], "error": refusal, "retry": False}
        if key in self.steps and self.steps[key] != event:
            self.conflicts.append(key)
            error = "different event under a used seq"
            return {"type": "nack", "v": 1, "run_id": key[0], "seq": key[1], "error": error, "retry": False}
        self.steps[key] = event
        return None

    def send_directive(self, directive: dict) -> None:
        self.outbox.append({"type": "directive", "v": 1, **directive})

    def events(self, run_id) -> list[dict]:
        # A copy first: the server's thread adds steps while a test reads them (list() of a dict is one C call
        # under the GIL; iterating the dict itself raised "dictionary changed size during iteration").
        steps = list(self.steps.items())
        return [event for key, event in sorted(steps, key=lambda item: item[0]) if key[0] == run_id]

    def finished(self, run_id) -> bool:
        return any(
            e["kind"] == "status" and e["payload"]["status"] in ("succeeded", "failed", "stopped")
            for e in self.events(run_id)
        )

    def __enter__(self):
        self._thread.start()
        self._ready.wait(10)
        self.url = f"ws://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
