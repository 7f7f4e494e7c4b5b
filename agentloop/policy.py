"""Loads policy.toml: prompts, claimed-limit phrases, detector settings, tool limits. (A task's goal is its own,
task.toml [goal]: one goal per task, nowhere else.)"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

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
