"""The control inbox: what humans send a running run (messages, pause, resume, stop, question decisions).

Anything may put a directive in at any time (a terminal thread, the worker's socket); the loop takes them out
only at turn boundaries, and a reviewer waits here for its decision. Directives with an id are acted on once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

ACTIONS = ("pause", "resume", "stop", "human_message", "question_decision")
DECISIONS = ("approve", "edit", "veto", "replace")


@dataclass(frozen=True)
class Directive:
    action: str
    id: str | None = None
    text: str | None = None
    author: str | None = None
    question_ref: str | None = None
    decision: str | None = None  # for question_decision
    reviewer: str | None = None

    def problem(self) -> str | None:
        if self.action not in ACTIONS:
            return f"unknown action {self.action!r}"
        if self.action == "human_message" and not (self.text or "").strip():
            return "a human message needs text"
        if self.action == "question_decision":
            if not self.question_ref:
                return "a question decision needs question_ref"
            if self.decision not in DECISIONS:
                return f"unknown decision {self.decision!r} (use {', '.join(DECISIONS)})"
            if self.decision in ("edit", "replace") and not (self.text or "").strip():
                return f"a decision to {self.decision} needs the question's text"
        return None

    @classmethod
    def from_wire(cls, msg: dict[str, Any]) -> Directive:
        return cls(
            action=msg.get("action", ""),
            id=msg.get("id"),
            text=msg.get("text"),
            author=msg.get("author"),
            question_ref=msg.get("question_ref"),
            decision=msg.get("decision"),
            reviewer=msg.get("reviewer"),
        )


class ControlInbox:
    def __init__(self, seen_ids: set[str] | None = None) -> None:
        self._cond = threading.Condition()
        self._pending: list[Directive] = []
        self._decisions: dict[str, Directive] = {}
        self._seen: set[str] = set(seen_ids or ())
        self._stop = False

    def put(self, directive: Directive) -> bool:
        """Accept a directive; False when it is a duplicate (same id) or malformed."""
        if directive.problem():
            return False
        with self._cond:
            if directive.id is not None:
                if directive.id in self._seen:
                    return False
                self._seen.add(directive.id)
            if directive.action == "question_decision":
                assert directive.question_ref is not None  # problem() refuses a decision without one
                self._decisions[directive.question_ref] = directive
            else:
                self._pending.append(directive)
                self._stop = self._stop or directive.action == "stop"
            self._cond.notify_all()
        return True

    def mark_seen(self, ids: Iterable[str | None]) -> None:
        with self._cond:
            self._seen.update(i for i in ids if i)

    def drain(self) -> list[Directive]:
        with self._cond:
            out, self._pending = self._pending, []
            return out

    def wait(self, timeout: float) -> None:
        """Sleep until something arrives or `timeout` passes."""
        with self._cond:
            if not self._pending:
                self._cond.wait(timeout)

    @property
    def stop_requested(self) -> bool:
        return self._stop

    def take_decision(self, question_ref: str, timeout: float) -> Directive | None:
        """The decision on `question_ref`, waiting up to `timeout`; returns early (None) when a stop arrives."""
        end = time.monotonic() + timeout
        with self._cond:
            while question_ref not in self._decisions:
                left = end - time.monotonic()
                if left <= 0 or self._stop:
                    return None
                self._cond.wait(left)
            return self._decisions.pop(question_ref)
