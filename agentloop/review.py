"""Reviewers: who decides a question the agent proposed to itself.

- AutoApprove: every proposal is asked as it is (review mode "auto").
- InboxReviewer: waits for a `question_decision` directive (from the dashboard through the worker, or any other
  sender); with a timeout, an undecided proposal is approved when it runs out.
- ScriptedReviewer: decisions given in advance (tests, demos).
- TerminalReviewer: asks on the terminal: approve, edit, veto, or write your own.
- TraceReviewer: the decisions recorded in a trace, in order (replays).
A reviewer returns None only when the run is being stopped while it waits.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from agentloop.control import ControlInbox
from agentloop.errors import RunParked


@dataclass(frozen=True)
class Decision:
    action: str  # approve | edit | veto | replace
    text: str | None = None  # the text asked (edit, replace); None for approve and veto
    by: str = "reviewer"  # reviewer | auto | timeout
    reviewer: str | None = None
    directive_id: str | None = None


class Reviewer(Protocol):
    interactive: bool

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None: ...


class AutoApprove:
    interactive = False

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None:
        return Decision("approve", by="auto")


class InboxReviewer:
    """`park`: instead of waiting for a decision that is not in the inbox yet, raise RunParked, so that the worker
    frees the run's GPU until the decision (or a stop, or the timeout) comes; it then resumes the run with the
    time left of the timeout as `timeout_s`."""

    interactive = True

    def __init__(
        self,
        timeout_s: float | None = None,
        poll_s: float = 0.5,
        park: bool = False,
        time_left: dict[str, float | None] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.park = park
        # question_ref -> seconds left of its timeout, for a proposal that waited before this life of the run (a
        # resumed run's): only that proposal has less than `timeout_s`; every later one gets the whole of it.
        self.time_left = dict(time_left or {})

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None:
        import time

        timeout_s = self.time_left.get(proposal["question_ref"], self.timeout_s)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            wait = self.poll_s if deadline is None else max(0.0, min(self.poll_s, deadline - time.monotonic()))
            d = inbox.take_decision(proposal["question_ref"], 0 if self.park else wait)
            if d is not None:
                assert d.decision is not None  # the inbox takes no decision without one (Directive.problem)
                return Decision(d.decision, text=d.text, by="reviewer", reviewer=d.reviewer, directive_id=d.id)
            if inbox.stop_requested:
                return None
            if deadline is not None and time.monotonic() >= deadline:
                return Decision("approve", by="timeout")
            if self.park:
                raise RunParked(f"question {proposal['question_ref']} waits for a reviewer")


class ScriptedReviewer:
    """Decisions in order; each item is a Decision, or a callable proposal -> Decision. Runs out -> approve."""

    interactive = True

    def __init__(self, script: Iterable[Decision | Callable[[dict[str, Any]], Decision]]) -> None:
        self.script = deque(script)
        self.seen: list[dict[str, Any]] = []

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None:
        self.seen.append(proposal)
        if not self.script:
            return Decision("approve", by="reviewer", reviewer="script")
        item = self.script.popleft()
        return item(proposal) if callable(item) else item


class TraceReviewer:
    interactive = True

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.decisions = deque(e["payload"] for e in events if e["kind"] == "question_decided")

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None:
        if not self.decisions:
            return Decision("approve", by="auto")
        p = self.decisions.popleft()
        return Decision(
            p["action"],
            text=p.get("text") if p["action"] in ("edit", "replace") else None,
            by=p.get("by", "reviewer"),
            reviewer=p.get("reviewer"),
        )


class TerminalReviewer:
    interactive = True

    def __init__(self, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
        self.stdin, self.stdout = stdin, stdout

    def _ask(self, prompt: str) -> str:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError("the terminal closed while a question waited for review")
        return line.strip()

    def decide(self, proposal: dict[str, Any], inbox: ControlInbox) -> Decision | None:
        self.stdout.write(
            f"\n--- question proposed at {proposal['decision_point']} ({proposal.get('category', '')}) ---\n"
            f"{proposal['text']}\nwhy: {proposal.get('reason', '')}\n"
        )
        while True:
            choice = self._ask("[a]pprove, [e]dit, [v]eto, [w]rite your own? ").lower()[:1]
            if choice == "a":
                return Decision("approve", reviewer="terminal")
            if choice == "v":
                return Decision("veto", reviewer="terminal")
            if choice in ("e", "w"):
                text = self._ask("question text: ")
                if text:
                    return Decision("edit" if choice == "e" else "replace", text=text, reviewer="terminal")
