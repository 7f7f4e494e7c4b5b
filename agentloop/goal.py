"""The goal check: what the harness's verdict says about the run's goal. Pure functions over EvalResult dicts.

The model's words never enter here. A run succeeds only on a verdict that is correct on every scenario of the
task's full set and at least the target speedup over the goal baseline.
"""

from __future__ import annotations

from agentloop.config import Goal


def all_correct(result: dict) -> bool:
    scenarios = result.get("scenarios") or []
    return result.get("status") == "correct" and bool(scenarios) and all(s.get("correct") for s in scenarios)


def speedup_over(result: dict, baseline: str) -> float | None:
    value = ((result.get("geomean") or {}).get(baseline) or {}).get("speedup")
    return float(value) if isinstance(value, (int, float)) else None


def covers(result: dict, scenario_ids: list[str]) -> bool:
    """True when the verdict ran every one of `scenario_ids` (the task's full set)."""
    ran = {s.get("id") for s in result.get("scenarios") or []}
    return bool(scenario_ids) and set(scenario_ids) <= ran


def meets_target(result: dict, goal: Goal) -> bool:
    """Correct on what it ran and fast enough: worth a full check (a quick verdict never ends a run by itself)."""
    speedup = speedup_over(result, goal.baseline)
    return all_correct(result) and speedup is not None and speedup >= goal.speedup


def goal_met(result: dict, goal: Goal, full_ids: list[str]) -> bool:
    return meets_target(result, goal) and covers(result, full_ids)


def verified_speedup(result: dict, goal: Goal) -> float | None:
    """The speedup that counts toward the run's best: only from a verdict correct on everything it ran."""
    return speedup_over(result, goal.baseline) if all_correct(result) else None


def describe(result: dict, goal: Goal) -> str:
    speedup = speedup_over(result, goal.baseline)
    measured = "not measured" if speedup is None else f"{speedup:.3g}x"
    if not all_correct(result):
        return f"{result.get('status', 'error')}: {result.get('reason') or 'not every scenario is correct'}"
    return f"correct, {measured} over {goal.baseline} (target {goal.speedup:g}x)"
