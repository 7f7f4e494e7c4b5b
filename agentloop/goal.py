"""The goal check: what the harness's verdict says about the run's goal. Pure functions over EvalResult dicts.

The model's words never enter here. A run succeeds only on a verdict that is correct on every scenario of the
task's full set and at least the target speedup over the goal baseline beyond the noise: the low end of the
interval on its geometric mean reaches the target (`figures.clears_target`, within `figures.goal_met`, the one
function the server's check in `runs/services/kernels.py` calls too). A `best_library` goal also needs every
library of the task timed in that verdict: a library not installed where it ran leaves the best of the others.
The rules themselves are `gpu_harness.figures` (the dashboard reads verdicts through the same functions); this
module applies them to a run's `Goal`.
"""

from __future__ import annotations

from typing import Any

from agentloop.config import Goal
from gpu_harness import figures
from gpu_harness.figures import all_correct, covers, speedup_over

__all__ = [
    "all_correct",
    "covers",
    "goal_met",
    "meets_target",
    "speedup_over",
    "verified_speedup",
    "worth_a_goal_check",
]


def meets_target(result: dict[str, Any], goal: Goal) -> bool:
    """Correct on what it ran and fast enough: worth a full check (a quick verdict never ends a run by itself)."""
    return figures.meets_target(result, goal.baseline, goal.speedup)


def goal_met(result: dict[str, Any], goal: Goal, full_ids: list[str], libraries: list[str]) -> bool:
    """`figures.goal_met` over the run's goal, the task's full set and its libraries (a best_library goal is met
    only by a verdict that timed every one of them)."""
    return figures.goal_met(result, goal.baseline, goal.speedup, full_ids, libraries)


def worth_a_goal_check(result: dict[str, Any], goal: Goal, libraries: list[str]) -> bool:
    """A verdict at the target on the scenarios it ran that a fresh full check could confirm: not one that missed
    a library of a best_library goal (a check on the same host would miss it again)."""
    return meets_target(result, goal) and figures.libraries_complete(result, goal.baseline, libraries)


def verified_speedup(result: dict[str, Any], goal: Goal) -> float | None:
    """The speedup that counts toward the run's best: only from a verdict correct on everything it ran."""
    return figures.verified_speedup(result, goal.baseline)
