"""A fork in the loop (docs/fork.md): what a run that continues another from one of its steps does at its start,
from the assignment's `fork` (cut on the server by agentloop/fork.py): the parent's workspace files written, what
the workspace may lack said, the fork's own decision at the question it was forked at recorded instead of the
parent's, and a replay model moved on to where the parent was in its recording. The loop (agent.py) calls these;
they emit through its emitter and read its state.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloop.state import RunState

Emit = Callable[[str, dict[str, Any]], dict[str, Any]]  # Emitter.emit: kind, payload -> the event


def played_events(played: dict[str, Any]) -> list[dict[str, Any]]:
    """Stand-ins for a fork parent's model calls before the cut, for the replay model's skip_played."""
    turns = [{"kind": "model_message", "payload": {"purpose": "turn"}}] * int(played.get("turn") or 0)
    asked = [{"kind": "question_proposed", "payload": {}}] * int(played.get("select_question") or 0)
    return turns + asked


def write_parent_files(fork: dict[str, Any] | None, resolve: Callable[[str], Path]) -> None:
    """The parent's workspace at the cut, each file where the editor resolves its name."""
    for name, text in ((fork or {}).get("files") or {}).items():
        path = resolve(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def note_warnings(emit: Emit, fork: dict[str, Any]) -> None:
    """What the fork's workspace may lack (files the parent's shell commands wrote), one note each."""
    for warning in fork.get("warnings") or []:
        emit("note", {"text": f"fork workspace: {warning}", "level": "warning"})


def decide_at_question(emit: Emit, fork: dict[str, Any], state: RunState, run_id: object) -> None:
    """The fork's own decision at the question it was forked at, instead of the parent's: a veto asks nothing
    there; a bank question or a question of the operator's own is asked."""
    decision = fork.get("decision") or {}
    if not decision:
        return
    question = fork.get("question") or {}
    where = f"run {fork.get('parent_run')} at step #{fork.get('step_seq')}"
    by = decision.get("by") or ""
    if decision.get("action") == "veto":
        emit(
            "note",
            {
                "text": f"fork of {where}: {by or 'the operator'} vetoed the question "
                f"{question.get('text', '')!r}; nothing is asked there",
                "level": "info",
                "fork_decision": True,
            },
        )
        return
    ref = f"q-{run_id}-fork"
    pending = state.pending_question  # proposed before a crash, not yet decided: decided now, not again
    if not (pending and pending.get("question_ref") == ref):
        _propose(emit, ref, decision, question, by, where)
    emit(
        "question_decided",
        {
            "question_ref": ref,
            "action": "approve",
            "text": decision["text"],
            "by": "reviewer",
            "reviewer": by or None,
            "fork_decision": True,
        },
    )


def _propose(emit: Emit, ref: str, decision: dict[str, Any], question: dict[str, Any], by: str, where: str) -> None:
    emit(
        "question_proposed",
        {
            "question_ref": ref,
            "bank_key": decision.get("bank_key"),
            "text": decision["text"],
            # the bank's category of a bank question; none for a person's own words (never the parent's question's)
            "category": decision.get("category"),
            "reason": f"chosen by {by or 'the operator'} when forking {where}",
            "decision_point": question.get("decision_point"),
            "by": "human",  # a person chose it, from the bank or in their own words
            "attempt": 0,
        },
    )
