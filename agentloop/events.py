"""Run events (docs/protocol.md, section 1): the envelope and the emitter that numbers them (the kinds and statuses
are agentloop/protocol.py's).

Every event goes to every sink the moment it is emitted (the trace file first), so that a crash between two
events loses nothing that was emitted.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Callable
from typing import Any

from agentloop.event_types import payload_problem
from agentloop.interfaces import EventSink
from agentloop.json_safe import json_safe
from agentloop.protocol import FINISHED_STATUSES, KINDS, PROTOCOL_VERSION

ZERO_USAGE = {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0}


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat()


def make_event(
    run_id: object,
    seq: int,
    kind: str,
    payload: dict[str, Any],
    usage: dict[str, Any] | None = None,
    ts: str | None = None,
) -> dict[str, Any]:
    if kind not in KINDS:
        raise ValueError(f"unknown event kind {kind!r}")
    payload = json_safe(payload)  # strict JSON: the trace is written with allow_nan=False (agentloop/json_safe.py)
    problem = payload_problem(kind, payload)
    if problem is not None:  # the server would refuse it: a bug of the loop's, not something to send
        raise ValueError(problem)
    return {
        "v": PROTOCOL_VERSION,
        "run_id": run_id,
        "seq": seq,
        "kind": kind,
        "ts": ts or utc_now(),
        "payload": payload,
        "usage": dict(json_safe(usage or ZERO_USAGE)),
    }


class Emitter:
    """Numbers events of one run and hands each to the sinks in order. Thread-safe (a reviewer thread may emit)."""

    def __init__(
        self,
        run_id: object,
        sinks: list[EventSink],
        next_seq: int = 0,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.run_id = run_id
        self.next_seq = next_seq
        self._sinks = list(sinks)
        self._clock = clock
        self._lock = threading.RLock()  # reentrant: emit_unless_finished emits while holding it
        self.finished = False  # a finished status was emitted (it stays the run's last event)
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def add_listener(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """Called with every event after the sinks (the loop uses this to keep its state)."""
        self._listeners.append(fn)

    def emit(self, kind: str, payload: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            event = make_event(self.run_id, self.next_seq, kind, payload, usage, ts=self._clock())
            self.next_seq += 1
            self.finished = self.finished or (kind == "status" and payload.get("status") in FINISHED_STATUSES)
            for sink in self._sinks:
                (sink.write if hasattr(sink, "write") else sink)(event)
            for fn in self._listeners:
                fn(event)
        return event

    def emit_unless_finished(self, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        """Emit from another thread (the worker reporting a refused event), unless the run's finished status is out
        already; None then."""
        with self._lock:
            return None if self.finished else self.emit(kind, payload)
