"""Decision points: small named detectors, each a pure function of the run's state and the turn just taken.

Each returns a Firing or None. They are edge-triggered: a plateau or a failure streak fires once, then needs a
full new window of evaluations before it fires again, so one long plateau does not ask a question every step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentloop.policy import DetectorSettings
from agentloop.state import EvalRecord, RunState
from gpu_harness import figures


@dataclass(frozen=True)
class Turn:
    """What the loop saw in one step."""

    text: str  # the model's text in this turn
    ended: bool  # the model ended its turn without a tool call
    new_evaluations: int  # evaluations the model ran in this step


@dataclass(frozen=True)
class Firing:
    name: str
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


def best_words(state: RunState) -> str:
    """The run's best so far, named by the rule every page uses (gpu_harness.figures.standing): "best verified"
    only where the evaluation that set it ran the full set; a best from the quick set is "best quick", never
    called verified (docs/harness.md)."""
    if state.best_speedup is None:
        return "best: none yet"
    best = state.best_speedup
    full = any(e.full and e.all_correct and e.speedup == best for e in state.evaluations)
    standing = figures.VERIFIED if full else figures.QUICK
    scope = "full set" if full else "quick set only, not verified"
    return f"best {standing}: {best:.3g}x, {scope}"


def stopped_short(state: RunState, turn: Turn, settings: DetectorSettings, **_: object) -> Firing | None:
    if not turn.ended or state.goal_met:
        return None
    return Firing(
        "stopped-short",
        f"the model ended its turn before the goal was confirmed ({best_words(state)})",
        {"best_speedup": state.best_speedup},
    )


def claimed_limit(
    state: RunState, turn: Turn, settings: DetectorSettings, patterns: tuple[re.Pattern[str], ...] = (), **_: object
) -> Firing | None:
    if state.goal_met:
        return None
    for pattern in patterns:
        match = pattern.search(turn.text or "")
        if match:
            start = max(0, match.start() - 80)
            return Firing(
                "claimed-limit",
                f'the model claimed a limit: "{match.group(0)}"',
                {"phrase": match.group(0), "context": turn.text[start : match.end() + 80]},
            )
    return None


def _since_last_firing(state: RunState, name: str) -> int:
    return len(state.tool_evaluations) - state.last_fired.get(name, 0)


def plateau(state: RunState, turn: Turn, settings: DetectorSettings, **_: object) -> Firing | None:
    k = settings.plateau_window
    evals = state.tool_evaluations
    if turn.new_evaluations == 0 or len(evals) < k or _since_last_firing(state, "plateau") < k:
        return None
    window = evals[-k:]
    if any(e.gain for e in window):
        return None
    return Firing(
        "plateau",
        f"no gain in the run's best speedup over the last {k} evaluations",
        {"best_speedup": state.best_speedup, "window": [e.speedup for e in window]},
    )


def failure_streak(state: RunState, turn: Turn, settings: DetectorSettings, **_: object) -> Firing | None:
    n = settings.failure_streak
    evals = state.tool_evaluations
    if turn.new_evaluations == 0 or len(evals) < n or _since_last_firing(state, "failure-streak") < n:
        return None
    window = evals[-n:]
    if not all(e.failed for e in window):
        return None
    return Firing(
        "failure-streak",
        f"the last {n} evaluations failed to compile, were incorrect or errored",
        {"statuses": [e.status for e in window]},
    )


def regression(state: RunState, turn: Turn, settings: DetectorSettings, **_: object) -> Firing | None:
    evals = state.tool_evaluations
    if turn.new_evaluations == 0 or not evals:
        return None

    def regressed(e: EvalRecord) -> bool:
        best_before = e.best_after  # a regression never raises the best, so best_after is the best before it
        return (
            e.all_correct
            and e.speedup is not None
            and best_before is not None
            and e.speedup < best_before * settings.regression_ratio
        )

    latest = evals[-1]
    if not regressed(latest):
        return None
    previous_correct = [e for e in evals[:-1] if e.all_correct]
    if previous_correct and regressed(previous_correct[-1]):
        return None  # still the same regression: asked about already
    return Firing(
        "regression",
        f"the latest correct kernel runs at {latest.speedup:.3g}x, below the best {latest.best_after:.3g}x",
        {"speedup": latest.speedup, "best_speedup": latest.best_after},
    )


DETECTORS: dict[str, Callable[..., Firing | None]] = {
    "stopped-short": stopped_short,
    "claimed-limit": claimed_limit,
    "plateau": plateau,
    "failure-streak": failure_streak,
    "regression": regression,
}


def detect(
    state: RunState, turn: Turn, settings: DetectorSettings, patterns: tuple[re.Pattern[str], ...] = ()
) -> list[Firing]:
    """Every enabled detector that fires, in the policy's priority order (the first is the one asked about)."""
    fired: list[Firing] = []
    for name in settings.priority:
        if name in settings.enabled and name in DETECTORS:
            firing = DETECTORS[name](state, turn, settings, patterns=patterns)
            if firing:
                fired.append(firing)
    return fired
