"""A short text account of a run so far: what the question-selection call sees instead of the whole conversation."""

from __future__ import annotations

import json

from agentloop.detectors import best_words
from agentloop.state import RunState


def _clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def trajectory_summary(state: RunState, turns: int = 6, evaluations: int = 8) -> str:
    lines = []
    goal = state.config.goal if state.config else None
    if goal:
        lines.append(
            f"Goal: {goal.speedup:g}x over {goal.baseline}, every scenario correct. "
            f"So far, the run's {best_words(state)}. Steps taken: {state.steps}."
        )
    evals = state.evaluations[-evaluations:]
    if evals:
        lines.append("Recent evaluations (oldest first):")
        for e in evals:
            speed = "n/a" if e.speedup is None else f"{e.speedup:.3g}x"
            lines.append(
                f"  #{e.number} {e.purpose} {'full' if e.full else 'quick'}: {e.status}"
                f"{'' if e.all_correct or e.status != 'correct' else ' (not all correct)'}, {speed}"
            )
    recent = [m for m in state.messages if m["role"] == "assistant"][-turns:]
    if recent:
        lines.append("Recent turns (oldest first):")
        for m in recent:
            parts = []
            for block in m["content"]:
                if block.get("type") == "text" and block.get("text", "").strip():
                    parts.append(_clip(block["text"], 300))
                elif block.get("type") == "tool_use":
                    parts.append(
                        f"[{block.get('name')} {_clip(json.dumps(block.get('input'), ensure_ascii=False), 160)}]"
                    )
            lines.append("  - " + " ".join(parts) if parts else "  - (empty turn)")
    return "\n".join(lines)
