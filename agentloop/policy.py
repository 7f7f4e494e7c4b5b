"""Loads policy.toml: prompts, claimed-limit phrases, detector settings, tool limits. (A task's goal is its own,
task.toml [goal]: one goal per task, nowhere else.)"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentloop.config import RunConfig

POLICY_PATH = Path(__file__).resolve().parent / "policy.toml"


@dataclass(frozen=True)
class DetectorSettings:
    enabled: tuple[str, ...]
    plateau_window: int = 3
    failure_streak: int = 3
    regression_ratio: float = 0.9
    cooldown_steps: int = 30
    max_proposals: int = 3
    priority: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    system_prompt: str
    task_template: str
    not_done_template: str
    limit_patterns: tuple[re.Pattern[str], ...]
    detectors: DetectorSettings
    tools: dict[str, Any]

    def task_prompt(self, config: RunConfig, facts: dict[str, Any]) -> str:
        """The run's first user message: the task template filled from the run's config and its task's `facts`
        (agent.task_facts: language, ABI, scenario ids, baselines)."""
        return self.task_template.format(
            task=config.task,
            language=facts["language"],
            kernel_filename=config.kernel_filename,
            abi=facts["abi"],
            scenario_count=len(facts["full_ids"]),
            quick_count=len(facts["quick_ids"]),
            scenario_ids=", ".join(facts["full_ids"]),
            baselines=", ".join(facts["baselines"]),
            goal_speedup=f"{config.goal.speedup:g}",
            goal_baseline=config.goal.baseline,
            goal_note=_goal_note(config.goal.baseline, facts.get("libraries") or []),
            starting_kernel=config.starting_kernel.rstrip("\n"),
        )


def _goal_note(baseline: str, libraries: list[str]) -> str:
    """What a `best_library` goal is over, said where the goal is (the task's definition, not a hint)."""
    if baseline != "best_library" or not libraries:
        return ""
    return f" (on each scenario, the fastest of the libraries {', '.join(libraries)} that runs it)"


def _strip(text: str) -> str:
    return text.strip("\n")


def load_policy(path: str | Path | None = None) -> Policy:
    data = tomllib.loads(Path(path or POLICY_PATH).read_text(encoding="utf-8"))
    d = data["detectors"]
    return Policy(
        system_prompt=_strip(data["prompts"]["system"]),
        task_template=_strip(data["prompts"]["task"]),
        not_done_template=_strip(data["prompts"]["not_done"]),
        limit_patterns=tuple(re.compile(p, re.IGNORECASE) for p in data["limits"]["claimed_limit_patterns"]),
        detectors=DetectorSettings(
            enabled=tuple(d["enabled"]),
            plateau_window=int(d["plateau_window"]),
            failure_streak=int(d["failure_streak"]),
            regression_ratio=float(d["regression_ratio"]),
            cooldown_steps=int(d["cooldown_steps"]),
            max_proposals=int(d["max_proposals"]),
            priority=tuple(d["priority"]),
        ),
        tools=dict(data["tools"]),
    )


@lru_cache(maxsize=1)
def default_policy() -> Policy:
    return load_policy()
