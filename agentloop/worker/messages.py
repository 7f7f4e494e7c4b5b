"""The server's messages to a worker (docs/protocol.md 2): each read, checked and acted on by its type, through
one table of handlers. A message the worker cannot act on (not a JSON object, an unknown type, a field missing or
of the wrong type) is logged and answered with `error`; it changes nothing else, and the worker goes on serving.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloop.control import Directive
from agentloop.errors import ConfigError
from agentloop.fork import fork_problems
from agentloop.protocol import PROTOCOL_VERSION, speaks_version
from agentloop.worker.parking import DirectiveStore
from agentloop.worker.window import Limits, SenderWindow

if TYPE_CHECKING:
    from agentloop.config import RunConfig
    from agentloop.worker.handles import RunHandle, SeenDirectives
    from agentloop.worker.parking import ParkedRun
    from agentloop.worker.spool import Spool

log = logging.getLogger("agentloop.worker")
# an event unanswered this long is offered again (client.py); a retry nack shortens its wait to 2 s
RESEND_AFTER_S = 15.0


class Malformed(ValueError):
    """A server message the worker cannot act on: logged and answered with `error` (docs/protocol.md 2.2)."""


class ServerMessages:
    """The handlers of `Worker` (client.py) for what the server sends; they act on the worker's spool, window,
    claims and runs."""

    if TYPE_CHECKING:  # what the handlers use of `Worker` (client.py), which defines them
        targets: list[str]
        spool: Spool
        seen: SeenDirectives
        runs: dict[str, RunHandle]
        parked: dict[str, ParkedRun]
        _lock: threading.Lock
        _send_lock: threading.Lock
        _window: SenderWindow | None
        _last_sent: dict[tuple[str, int], float]
        _claiming: bool
        _claim_gpu: int
        _next_claim: float

        def _send(self, message: dict[str, Any]) -> bool: ...
        def _offer(self, events: list[dict[str, Any]]) -> None: ...
        def _settle(self, keys: list[tuple[Any, ...]]) -> None: ...
        def _refuse_for_good(self, key: tuple[Any, ...], error: str) -> None: ...
        def _free_gpus(self) -> list[int]: ...
        def _assignment(self, run: dict[str, Any]) -> RunConfig: ...
        def _cannot_start(self, run_id: object, detail: str) -> None: ...
        def _save_questions(self, run_id: object, run: dict[str, Any]) -> None: ...
        def _run_dir(self, run_id: object) -> Path: ...
        def _start_run(
            self,
            run_id: object,
            gpu: int,
            config: RunConfig | None,
            resume_events: list[dict[str, Any]] | None,
            fork: dict[str, Any] | None = None,
        ) -> None: ...

    def _receive(self, raw: object) -> None:
        """One message from the server. A message the worker cannot act on (not a JSON text object, an unknown
        type, a field missing or of the wrong type) is logged and answered with `error`; it changes nothing else,
        and the worker goes on serving."""
        try:
            if not isinstance(raw, str):
                raise Malformed("a binary frame (every message is a JSON text frame)")
            try:
                msg = json.loads(raw)
            except (ValueError, RecursionError):
                raise Malformed(f"not JSON: {raw:.200}") from None
            if not isinstance(msg, dict):
                raise Malformed(f"not a JSON object: {raw:.200}")
            if not speaks_version(msg.get("v")):
                raise Malformed(f"protocol version {msg.get('v')!r:.50} is not spoken here ({PROTOCOL_VERSION} is)")
            self._handle(msg)
        except Malformed as exc:
            self._answer_error(str(exc))
        except Exception:
            log.exception("a server message could not be handled: %.200s", raw)
            self._answer_error(f"the worker failed on this message: {str(raw)[:200]}")

    def _answer_error(self, problem: str) -> None:
        log.error("a server message was not acted on: %s", problem)
        self._send({"type": "error", "error": problem})

    def _handle(self, msg: dict[str, Any]) -> None:
        """Act on one server message by its type (the table below, docs/protocol.md 2): a handler raises
        Malformed for a message it cannot act on."""
        kind = msg.get("type")
        handler = self._HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise Malformed(f"unknown message type {kind!r:.50}")
        handler(self, msg)

    def _on_welcome(self, msg: dict[str, Any]) -> None:
        # A server that reads `events` gets batches; an older one gets every event at once, alone.
        accepts = msg.get("accepts")
        limits, problem = Limits.from_welcome(msg)
        served = msg.get("targets")
        if isinstance(served, list) and served != self.targets:
            # An older server sends no `targets`; this one says which of ours it gives runs of (2.3).
            log.warning("the server gives this worker runs of %s only (announced: %s)", served, self.targets)
        with self._send_lock:
            self._window = SenderWindow(batching=isinstance(accepts, list) and "events" in accepts, limits=limits)
        self._offer(self.spool.pending())
        if problem:
            raise Malformed(f"{problem}; sending within {limits.message_bytes} bytes a message")

    def _on_ack(self, msg: dict[str, Any]) -> None:
        key = _answer_key(msg)
        self.spool.ack(*key)
        self._last_sent.pop(event_key(*key), None)
        self._settle([key])

    def _on_acks(self, msg: dict[str, Any]) -> None:
        """The events of `events` messages that one transaction stored; the well-formed pairs are taken even
        when others are not."""
        items = msg.get("acks")
        if not isinstance(items, list):
            raise Malformed(f"acks: `acks` must be a list, not {items!r:.100}")
        keys, junk = [], []
        for item in items:
            try:
                if not isinstance(item, list) or len(item) != 2:
                    raise Malformed("not a [run_id, seq] pair")
                keys.append(_answer_key({"run_id": item[0], "seq": item[1]}))
            except Malformed:
                junk.append(item)
        self.spool.ack_many(keys)
        for key in keys:
            self._last_sent.pop(event_key(*key), None)
        self._settle(keys)
        if junk:
            raise Malformed(
                f"acks: {len(junk)} item(s) are not [run_id, seq] pairs (the others were taken): {junk!r:.200}"
            )

    def _on_nack(self, msg: dict[str, Any]) -> None:
        key = _answer_key(msg)
        if not isinstance(msg.get("retry"), bool):
            raise Malformed(f"nack of {key}: `retry` must be true or false (the event stays in the spool)")
        if not msg["retry"]:
            self._refuse_for_good(key, str(msg.get("error") or "no reason given"))
        elif self.spool.holds(*key):  # (a late answer for an event answered before changes nothing)
            self._last_sent[event_key(*key)] = time.monotonic() - RESEND_AFTER_S + 2
        self._settle([key])

    def _on_assign(self, msg: dict[str, Any]) -> None:
        claimed, self._claiming = self._claiming, False
        run = msg.get("run")
        if not isinstance(run, dict) or not _is_id(run.get("id")):
            self._next_claim = time.monotonic() + 5  # a server that keeps sending these is not asked at once
            raise Malformed(f"assign: `run` must be an object with an `id`, not {run!r:.200}")
        if str(run["id"]) in {r for r, h in self.runs.items() if h.thread.is_alive()}:
            raise Malformed(f"assign: run {run['id']} is running here already")
        gpu = self._claim_gpu if claimed else next(iter(self._free_gpus()), None)
        if gpu is None:
            raise Malformed(f"assign: run {run['id']} was not claimed and no GPU is free for it")
        try:
            config = self._assignment(run)
        except ConfigError as exc:
            self._cannot_start(run["id"], str(exc))
            return
        problems = _assignment_problems(run)
        if problems:  # fails closed: a fork that would not continue its parent does not start at all
            self._cannot_start(run["id"], "unusable assignment: " + "; ".join(problems))
            return
        self._save_questions(run["id"], run)
        self._start_run(run["id"], gpu, config, None, fork=run.get("fork"))

    def _on_no_work(self, msg: dict[str, Any]) -> None:
        self._claiming = False
        wait = msg.get("retry_after_s")
        ok = isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0 < wait < 3600
        self._next_claim = time.monotonic() + (float(wait) if ok and isinstance(wait, (int, float)) else 5)
        if not ok:
            raise Malformed(
                f"no_work: `retry_after_s` must be a number of seconds, not {wait!r:.50} (claiming again in 5 s)"
            )

    def _on_directive(self, msg: dict[str, Any]) -> None:
        ident = msg.get("id")
        if ident is not None and not (isinstance(ident, str) and ident):
            raise Malformed(f"directive: `id` must be a string, not {ident!r:.50}")
        if not _is_id(msg.get("run_id")):
            raise Malformed(f"directive {ident}: `run_id` must be a string or an integer (not acknowledged)")
        if ident and ident in self.seen.ids:
            self._send({"type": "directive_ack", "id": ident})
            return
        self._take_directive(msg)
        if ident:
            self.seen.add(ident)
            self._send({"type": "directive_ack", "id": ident})

    def _on_error(self, msg: dict[str, Any]) -> None:
        log.error("server: %s", msg.get("error"))  # never answered with an `error`: no ping-pong

    # the server's message types and who handles each (a new type is one method and one line here)
    _HANDLERS: dict[str, Callable[[ServerMessages, dict[str, Any]], None]] = {
        "welcome": _on_welcome,
        "ack": _on_ack,
        "acks": _on_acks,
        "nack": _on_nack,
        "assign": _on_assign,
        "no_work": _on_no_work,
        "directive": _on_directive,
        "error": _on_error,
    }

    def _take_directive(self, msg: dict[str, Any]) -> None:
        """Keep a directive for a run of this worker durably (before it is acknowledged), then hand it to the
        running run, or wake the parked run it is for."""
        run_id = str(msg.get("run_id"))
        if not (self._run_dir(run_id) / "trace.jsonl").exists():
            log.warning("directive %s for run %s, which is not running here", msg.get("id"), run_id)
            return
        DirectiveStore(self._run_dir(run_id)).add(msg)
        with self._lock:
            parked, handle = self.parked.get(run_id), self.runs.get(run_id)
            if parked is not None:
                parked.ready = parked.ready or parked.woken_by(msg)
            elif handle is not None:
                handle.inbox.put(Directive.from_wire(msg))


def event_key(run_id: object, seq: int) -> tuple[str, int]:
    """An event's key in the worker's record of when it was last sent: (the run id as text, seq)."""
    return (str(run_id), int(seq))


def _assignment_problems(run: dict[str, Any]) -> list[str]:
    """What makes an assignment's `fork` and `questions` unusable (fork_problems says what a fork must hold)."""
    fork = run.get("fork")
    problems = fork_problems(fork) if fork is not None else []
    if not isinstance(run.get("questions", True), bool):
        problems.append(f"`questions` must be true or false, not {run.get('questions')!r:.50}")
    return problems


def _is_id(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _answer_key(msg: dict[str, Any]) -> tuple[Any, ...]:
    """The (run_id, seq) an ack or nack answers; Malformed when it names no event."""
    run_id, seq = msg.get("run_id"), msg.get("seq")
    if not _is_id(run_id) or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise Malformed(f"{msg.get('type')}: `run_id` and `seq` must name an event, not {run_id!r:.50}/{seq!r:.50}")
    return (run_id, seq)
