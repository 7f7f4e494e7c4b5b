"""What a reader is shown of a task, as one JSON-safe dict: the same for a class task and a folder task.

The dashboard stores it as it is (`manage.py sync_tasks` -> `runs.models.Task.spec`) and its task pages read
nothing else of the harness, so a task's ABI, scenarios, baselines and tolerance have one source: the task.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .base import Task

# The summary's shape; a reader that finds another version shows what it knows and ignores the rest.
SUMMARY_VERSION = 1


def _number(value: float) -> float | None:
    # JSON has no infinity or NaN; a count that is neither finite nor a number is left out.
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def task_summary(task: Task) -> dict[str, Any]:
    """The task's description, target, ABI, parameter names, scenarios (id, parameters, FLOP and byte counts), quick subset,
    baselines (each described, default or not), which are libraries, tolerance rule, FLOP formula, own goal and starting kernel."""
    defaults = set(task.default_baselines)
    described = task.baseline_descriptions()
    # Every default baseline is listed even where the task does not describe it, defaults first, in its order.
    names = list(dict.fromkeys([*task.default_baselines, *described]))
    scenarios = task.scenarios()
    return {
        "version": SUMMARY_VERSION,
        "name": task.name,
        "description": task.description,
        "target": task.target,
        "language": task.language,
        "symbol": task.symbol,
        "abi": task.abi,
        # The parameters' names in the task's order: a JSON object's keys may come back in another (PostgreSQL's
        # jsonb sorts them), and a table of scenarios reads best in the order the task writes them.
        "parameters": list(dict.fromkeys(key for s in scenarios for key in s.params)),
        "scenarios": [
            {"id": s.id, "params": dict(s.params), "flops": _number(s.flops), "bytes": _number(s.bytes)}
            for s in scenarios
        ],
        "quick": list(task.quick_ids()),
        "baselines": [
            {"name": name, "describe": described.get(name, name), "default": name in defaults} for name in names
        ],
        # the baselines that are libraries: "best_library" in a verdict is the fastest of them on each scenario
        "libraries": list(task.libraries),
        "tolerance": task.tolerance_text,
        "flops": task.flops_text,
        "goal": dict(task.goal) if task.goal else None,
        "starting_kernel": Path(task.starting_kernel).name if task.starting_kernel else None,
    }
