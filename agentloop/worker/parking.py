"""What the worker keeps of a run between its lives: the directives it acknowledged, and whether the run is parked.

A directive is written to its run's `directives.jsonl` (fsynced) before the worker acknowledges it, so a worker
killed after the acknowledgement still holds it: the run, resumed from its trace, is given every kept directive
its trace does not show as taken (`unapplied`). A run waiting for a reviewer holds no GPU: the agent raises
RunParked (agentloop/review.py), the worker keeps it here as parked, takes other runs, and resumes it from its
trace when its decision (or a stop, or the review timeout) comes (docs/protocol.md 2.4).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentloop.state import RunState

DIRECTIVES_FILE = "directives.jsonl"


class DirectiveStore:
    """The directives of one run that its worker acknowledged, one wire message a line, in arrival order."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / DIRECTIVES_FILE

    def add(self, message: dict[str, Any]) -> None:
        """Durable when it returns: the caller acknowledges the directive only then."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as file:
            file.write(json.dumps(message, separators=(",", ":")) + "\n")
            file.flush()
            os.fsync(file.fileno())

    def kept(self) -> list[dict[str, Any]]:
        """Each kept directive once (a directive re-sent before its id was marked seen may be kept twice); a line
        cut short by a crash was never acknowledged, and is skipped."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        messages, ids = [], set()
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") not in ids:
                ids.add(message.get("id"))
                messages.append(message)
        return messages


def unapplied(kept: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kept directives the run has not acted on, by its trace. The loop takes pause, resume, stop and messages
    in arrival order, each recorded with its `directive_id` when it changed something (a pause of a paused run
    changes nothing and leaves no event): so those before the last one the trace records were taken. A decision
    is taken by its question; it is recorded in its `question_decided`."""
    traced = {e["payload"].get("directive_id") for e in events} - {None}
    ordered = [m for m in kept if m.get("action") != "question_decision"]
    last_taken = max((i for i, m in enumerate(ordered) if m.get("id") in traced), default=-1)
    decisions = [m for m in kept if m.get("action") == "question_decision"]
    return [m for m in ordered[last_taken + 1 :] + decisions if m.get("id") not in traced]


@dataclass
class ParkedRun:
    """A run waiting for a reviewer's decision on `question_ref`, holding no GPU. `deadline`: when the review
    timeout approves it (seconds since the epoch), None without one. `ready`: a directive that wakes it came."""

    run_id: object
    question_ref: str | None  # None: the trace's waiting question named none
    deadline: float | None
    ready: bool = False

    def woken_by(self, message: dict[str, Any]) -> bool:
        """A stop, or the decision on its question: what the run, resumed, acts on at once."""
        action = message.get("action")
        return action == "stop" or (action == "question_decision" and message.get("question_ref") == self.question_ref)

    def due(self, now: float) -> bool:
        return self.ready or (self.deadline is not None and now >= self.deadline)

    def timeout_left(self, now: float) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - now)


def waiting_review(events: list[dict[str, Any]]) -> ParkedRun | None:
    """The run of this trace as parked, when it is waiting for a reviewer (its last status `waiting_review`, a
    proposal undecided, a review mode that waits for one); None otherwise. The timeout counts from the proposal."""
    state = RunState()
    for event in events:
        state.apply(event)
    pending = state.pending_question
    if state.finished or state.status != "waiting_review" or pending is None or state.config is None:
        return None
    if state.config.review_mode == "auto":
        return None
    ref = pending.get("question_ref")
    proposed = next(
        (e for e in reversed(events) if e["kind"] == "question_proposed" and e["payload"].get("question_ref") == ref),
        None,
    )
    deadline = None
    if state.config.review_timeout_s and proposed is not None:
        deadline = datetime.fromisoformat(proposed["ts"]).timestamp() + float(state.config.review_timeout_s)
    return ParkedRun(events[0]["run_id"], ref, deadline)
