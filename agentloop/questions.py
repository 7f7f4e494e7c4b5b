"""Asking a question at a decision point: pick one from the bank (one model call), have it reviewed, ask it.

The selection prompt shows the model each eligible entry with its figures from earlier runs (`stats`); the rule
that picks when the model's answer names no entry uses the same figures. The agent proposes; the reviewer
approves, edits, vetoes, or writes their own. After a veto the agent proposes again, never a question already
vetoed at this decision point; after `max_proposals` it gives up. Only an approved text reaches the
conversation, as a user message with nothing added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentloop.detectors import Firing
from agentloop.errors import StoppedByHuman
from agentloop.review import Reviewer
from agentloop.state import RunState
from agentloop.summary import trajectory_summary
from questionbank.bank import BankEntry
from questionbank.selection import build_selection_prompt, eligible_entries, fallback_selection, parse_selection

if TYPE_CHECKING:
    from agentloop.control import ControlInbox


class QuestionAsker:
    def __init__(
        self,
        *,
        state: RunState,
        emit: Callable[..., Any],
        ask_model: Callable[[str], str],
        bank: list[BankEntry],
        reviewer: Reviewer,
        inbox: ControlInbox,
        run_id: object,
        cooldown_steps: int,
        max_proposals: int,
        set_status: Callable[[str, str], None],
        task_target: str | None,
        stats: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.state = state
        self.emit = emit
        self.ask_model = ask_model
        self.bank = bank
        self.reviewer = reviewer
        self.inbox = inbox
        self.run_id = run_id
        self.cooldown_steps = cooldown_steps
        self.max_proposals = max_proposals
        self.set_status = set_status
        self.stats = stats or {}  # bank key -> figures from earlier runs, shown in the selection prompt
        # The task's target ("cpu", "cuda-sm90"): a question made for another kind of target is never proposed.
        self.task_target = task_target

    def ask(self, firing: Firing, first_attempt: int = 0) -> bool:
        """Propose, review, repeat after vetoes. True when a question entered the conversation. A resumed run
        continues at `first_attempt` (the proposals already made at this decision point)."""
        for attempt in range(first_attempt, self.max_proposals):
            proposal = self.propose(firing.name, attempt)
            if proposal is None:
                return False
            if self.review(proposal):
                return True
        # The note names the decision point: it closes it (a resumed run does not ask there again).
        self.emit(
            "note",
            {
                "text": f"no question asked at {firing.name}: {self.max_proposals} proposals vetoed",
                "level": "info",
                "decision_point": firing.name,
            },
        )
        return False

    def propose(self, decision_point: str, attempt: int) -> dict[str, Any] | None:
        entries = eligible_entries(
            self.bank,
            decision_point,
            self.state.asked,
            self.state.steps,
            self.cooldown_steps,
            task_target=self.task_target,
        )
        if not entries:
            self.emit(
                "note",
                {
                    "text": f"no eligible bank question at {decision_point}",
                    "level": "info",
                    "decision_point": decision_point,
                },
            )
            return None
        prompt = build_selection_prompt(decision_point, trajectory_summary(self.state), entries, self.stats)
        selection = parse_selection(self.ask_model(prompt), entries) or fallback_selection(
            decision_point, entries, self.stats
        )
        entry = next(e for e in entries if e.key == selection.key)
        ref = f"q-{self.run_id}-{self.state.questions_proposed}"
        proposal = {
            "question_ref": ref,
            "bank_key": entry.key,
            "text": entry.text,
            "category": entry.category,
            "reason": selection.reason,
            "decision_point": decision_point,
            "by": selection.by,
            "attempt": attempt,
        }
        self.emit("question_proposed", proposal)
        return proposal

    def review(self, proposal: dict[str, Any]) -> bool:
        """Decide `proposal`; True when a question was asked (False after a veto)."""
        interactive = self.reviewer.interactive  # declared by every Reviewer (agentloop/review.py)
        if interactive:
            self.set_status("waiting_review", "waiting_for_review")
        decision = self.reviewer.decide(proposal, self.inbox)
        if decision is None:
            raise StoppedByHuman("stopped while a question waited for review")
        asked_text = {"approve": proposal["text"], "veto": None}.get(decision.action, decision.text)
        payload = {
            "question_ref": proposal["question_ref"],
            "action": decision.action,
            "text": asked_text,
            "by": decision.by,
        }
        if decision.action in ("edit", "replace"):
            payload["original_text"] = proposal["text"]
        if decision.reviewer:
            payload["reviewer"] = decision.reviewer
        if decision.directive_id:
            payload["directive_id"] = decision.directive_id
        self.emit("question_decided", payload)
        if interactive:
            self.set_status("running", "review_decided")
        return decision.action != "veto"
