"""Choosing the next question from the bank at a decision point. No Django here: the agent loop calls it.

The agent picks its own question: `build_selection_prompt` shows it the eligible entries with the evidence of
how each worked in earlier runs, and `parse_selection` reads its answer. When the answer names no eligible
entry, `fallback_selection` picks one by a fixed rule, so a run never stalls on a bad answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from questionbank.bank import CATEGORIES, DECISION_POINTS, BankEntry

__all__ = [
    "DECISION_POINTS",
    "DEFAULT_COOLDOWN_STEPS",
    "MIN_EVIDENCE",
    "AskedQuestion",
    "Selection",
    "eligible_entries",
    "build_selection_prompt",
    "parse_selection",
    "fallback_selection",
    "select_question",
]

# Steps (of the agent loop) before the same question may be asked again in one run.
DEFAULT_COOLDOWN_STEPS = 30
# Below this many asks, a question's figures are too thin to rank it by; the rule tries it before ranking.
MIN_EVIDENCE = 3

DECISION_POINT_MEANING = {
    "start": "the run is starting; nothing has been changed yet",
    "stopped-short": "you were about to stop before reaching the goal",
    "claimed-limit": "you have claimed that a limit stops further speedup",
    "plateau": "the best verified speedup has not improved for a while",
    "failure-streak": "several attempts in a row failed to compile, were incorrect or were slower",
    "regression": "your latest kernel is slower than your best one",
}

# The fallback's order of categories at each decision point: the category that answers the situation first
# (a claimed limit is met by questioning the limit, a plateau by moving to another layer, a streak of failures
# by changing how the work is done); `information` always last, since it is kept only for comparison.
_CATEGORY_ORDER = {
    "start": ("layer", "hypothesis", "process", "limit", "information"),
    "stopped-short": ("limit", "layer", "hypothesis", "process", "information"),
    "claimed-limit": ("limit", "layer", "hypothesis", "process", "information"),
    "plateau": ("layer", "limit", "hypothesis", "process", "information"),
    "failure-streak": ("process", "hypothesis", "layer", "limit", "information"),
    "regression": ("process", "hypothesis", "layer", "limit", "information"),
}


@dataclass(frozen=True)
class AskedQuestion:
    """One proposal from the bank in a run: which entry, at which decision point and step, and whether vetoed."""

    key: str
    decision_point: str
    step: int
    vetoed: bool


@dataclass(frozen=True)
class Selection:
    key: str
    reason: str
    by: str  # "model" or "rule"


def _check_decision_point(decision_point: str) -> None:
    if decision_point not in DECISION_POINTS:
        raise ValueError(f"unknown decision point {decision_point!r} (known: {', '.join(DECISION_POINTS)})")


def eligible_entries(
    entries: Iterable[BankEntry],
    decision_point: str,
    history: list[AskedQuestion],
    now_step: int,
    cooldown_steps: int = DEFAULT_COOLDOWN_STEPS,
    *,
    task_target: str | None = None,
) -> list[BankEntry]:
    """The entries that may be proposed now, in bank order.

    Active, suited to the decision point, made for the run's task target (`task_target`, the harness's name:
    "cpu", "cuda-sm90"; None: not known, and no entry is left out for it: `BankEntry.applies_to`), never vetoed
    at this decision point in this run (a reviewer's veto holds for the rest of the run), and not asked less
    than `cooldown_steps` steps ago. A vetoed proposal was not asked, so it starts no cooldown.
    """
    _check_decision_point(decision_point)
    if cooldown_steps < 0:
        raise ValueError(f"cooldown_steps must be >= 0, not {cooldown_steps}")
    vetoed_here = {h.key for h in history if h.vetoed and h.decision_point == decision_point}
    cooling = {h.key for h in history if not h.vetoed and now_step - h.step < cooldown_steps}
    return [
        e
        for e in entries
        if e.active
        and e.suits(decision_point)
        and e.applies_to(task_target)
        and e.key not in vetoed_here
        and e.key not in cooling
    ]


def _figures(stat: dict[str, Any] | None) -> str:
    if not stat or not stat.get("asked"):
        return "not asked in earlier runs"
    parts = [f"asked {stat['asked']} time{'s' if stat['asked'] != 1 else ''}"]
    gain = stat.get("mean_gain")
    parts.append(f"mean gain x{gain:.2f}" if isinstance(gain, (int, float)) else "mean gain unknown")
    rate = stat.get("large_gain_rate")
    parts.append(f"large gain after {rate:.0%}" if isinstance(rate, (int, float)) else "large-gain rate unknown")
    return "; ".join(parts)


def build_selection_prompt(
    decision_point: str,
    trajectory_summary: str,
    entries: list[BankEntry],
    stats: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The message with which the agent picks its own question from `entries` (already the eligible ones)."""
    _check_decision_point(decision_point)
    if not entries:
        raise ValueError("no question to choose from: the prompt needs at least one eligible entry")
    stats = stats or {}
    lines = [
        f"Decision point: {decision_point} ({DECISION_POINT_MEANING[decision_point]}).",
        "",
        "What has happened so far:",
        (trajectory_summary or "").strip() or "(no summary)",
        "",
        "Pick ONE question from the bank below to ask yourself now. Each is followed by what happened after it",
        "in earlier runs: how often it was asked, the mean factor by which the best verified speedup rose before",
        "the next question (x1.00: no rise), and how often a large rise followed. Few asks mean little evidence.",
        "Pick the question most likely to change what you do next, not one whose answer you already know.",
        "",
        "Questions:",
    ]
    for entry in entries:
        lines.append(f"- {entry.key} [{entry.category}] ({_figures(stats.get(entry.key))})")
        lines.append(f"    {entry.text}")
    lines += [
        "",
        "Answer with exactly two lines, nothing else:",
        "QUESTION: <the key of the question>",
        "REASON: <one sentence: why this question, now>",
    ]
    return "\n".join(lines)


# Models decorate their answers (bold, backticks, brackets): skip that around the label and the value.
_QUESTION_LINE = re.compile(r"^\W*question\W*?[:=][\s*_`\"'\[<]*([a-z0-9-]+)", re.IGNORECASE | re.MULTILINE)
_REASON_LINE = re.compile(r"^\W*reason\W*[:=]\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def _mentions(text: str, key: str) -> bool:
    # A key is named when it stands alone: not as part of a longer key such as "layer-grid-2".
    return re.search(rf"(?<![a-z0-9-]){re.escape(key)}(?![a-z0-9-])", text, re.IGNORECASE) is not None


def parse_selection(model_text: str, entries: list[BankEntry]) -> Selection | None:
    """The entry the model's answer names, or None when it names no eligible entry (or several, ambiguously).

    The `QUESTION: <key>` line decides when it names an eligible key; otherwise the answer counts only if it
    names exactly one eligible key somewhere.
    """
    if not model_text or not entries:
        return None
    by_key = {e.key: e for e in entries}
    reason_match = _REASON_LINE.search(model_text)
    reason = reason_match.group(1).strip(" \t*_`\"'") if reason_match else ""
    line = _QUESTION_LINE.search(model_text)
    if line and line.group(1).lower() in by_key:
        return Selection(key=line.group(1).lower(), reason=reason, by="model")
    named = [key for key in by_key if _mentions(model_text, key)]
    if len(named) == 1:
        return Selection(key=named[0], reason=reason, by="model")
    return None


def _evidence_rank(stat: dict[str, Any] | None) -> tuple[Any, ...]:
    """Sort key within a category: under-tried questions first (fewest asks first), then by mean gain, best first."""
    asked = int((stat or {}).get("asked") or 0)
    gain = (stat or {}).get("mean_gain")
    if asked < MIN_EVIDENCE or not isinstance(gain, (int, float)) or math.isnan(gain):
        return (0, asked, 0.0)
    return (1, 0, -float(gain))


def fallback_selection(
    decision_point: str, entries: list[BankEntry], stats: dict[str, dict[str, Any]] | None = None
) -> Selection:
    """A deterministic pick among `entries` (the eligible ones) when the model named none.

    Category first, in the order that suits the decision point; within it, a question with too little
    evidence is tried first (fewest asks first), then the one with the best mean gain; ties go to bank order.
    """
    _check_decision_point(decision_point)
    if not entries:
        raise ValueError(f"no eligible question at {decision_point}: nothing to fall back on")
    stats = stats or {}
    order = _CATEGORY_ORDER[decision_point]
    rank = {category: i for i, category in enumerate(order)}
    # Prefer entries that suit the decision point and are active, if the caller passed others too.
    pool = [e for e in entries if e.active and e.suits(decision_point)] or list(entries)
    position = {e.key: i for i, e in enumerate(pool)}
    chosen = min(
        pool, key=lambda e: (rank.get(e.category, len(CATEGORIES)), _evidence_rank(stats.get(e.key)), position[e.key])
    )
    stat = stats.get(chosen.key) or {}
    if _evidence_rank(stat)[0] == 0:
        evidence = f"tried {int(stat.get('asked') or 0)} time(s) so far, fewer than {MIN_EVIDENCE}"
    else:
        evidence = f"best mean gain in its category (x{stat['mean_gain']:.2f})"
    return Selection(
        key=chosen.key,
        by="rule",
        reason=f"rule: a {chosen.category} question suits {decision_point}; {evidence}",
    )


def select_question(
    decision_point: str,
    trajectory_summary: str,
    entries: list[BankEntry],
    history: list[AskedQuestion],
    now_step: int,
    ask_model: Callable[[str], str],
    *,
    cooldown_steps: int = DEFAULT_COOLDOWN_STEPS,
    stats: dict[str, dict[str, Any]] | None = None,
    task_target: str | None = None,
) -> Selection | None:
    """The whole choice in one call: eligible entries, the model's pick, the rule when the model's answer is unusable.

    `ask_model` sends the prompt and returns the model's text; if it raises, the rule picks. None when no
    entry is eligible at all (every suitable one vetoed here, cooling down or made for another target).
    """
    eligible = eligible_entries(entries, decision_point, history, now_step, cooldown_steps, task_target=task_target)
    if not eligible:
        return None
    prompt = build_selection_prompt(decision_point, trajectory_summary, eligible, stats)
    try:
        answer = ask_model(prompt)
    except Exception as exc:
        rule = fallback_selection(decision_point, eligible, stats)
        return Selection(
            key=rule.key, by=rule.by, reason=f"the model call failed ({type(exc).__name__}: {exc}); {rule.reason}"
        )
    return parse_selection(answer, eligible) or fallback_selection(decision_point, eligible, stats)
