"""A run's settings: task, goal, model, budgets, review mode. Stored in the run's first event, so that a run
can be resumed from its trace alone."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from agentloop.errors import ConfigError

REVIEW_MODES = ("auto", "review", "review_timeout")
BUDGET_NAMES = ("steps", "tokens", "cost_usd", "wall_s", "evaluations")


@dataclass(frozen=True)
class Goal:
    baseline: str
    speedup: float

    def __post_init__(self) -> None:
        if not self.baseline:
            raise ConfigError("the goal needs a baseline name")
        if not isinstance(self.speedup, (int, float)) or not math.isfinite(self.speedup) or self.speedup <= 0:
            raise ConfigError(f"the goal speedup must be a positive number, not {self.speedup!r}")


@dataclass(frozen=True)
class Budgets:
    """Any budget reached ends the run; None means no limit of that kind."""

    steps: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    wall_s: float | None = None
    evaluations: int | None = None

    def __post_init__(self) -> None:
        for name in BUDGET_NAMES:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
                raise ConfigError(f"budget {name} must be a positive number or unset, not {value!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Budgets:
        d = d or {}
        unknown = set(d) - set(BUDGET_NAMES)
        if unknown:
            raise ConfigError(f"unknown budget(s) {', '.join(sorted(unknown))} (known: {', '.join(BUDGET_NAMES)})")
        values: dict[str, Any] = {
            k: (float(v) if k in ("cost_usd", "wall_s") and v is not None else v) for k, v in d.items()
        }
        return cls(**values)


@dataclass(frozen=True)
class RunConfig:
    task: str
    goal: Goal
    model: str
    starting_kernel: str  # source text
    kernel_filename: str
    budgets: Budgets = field(default_factory=Budgets)
    review_mode: str = "auto"
    review_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.review_mode not in REVIEW_MODES:
            raise ConfigError(f"review mode must be one of {', '.join(REVIEW_MODES)}, not {self.review_mode!r}")
        if self.review_mode == "review_timeout" and not self.review_timeout_s:
            raise ConfigError("review mode 'review_timeout' needs a review timeout in seconds")
        if not self.kernel_filename or "/" in self.kernel_filename or self.kernel_filename.startswith("."):
            raise ConfigError(f"the kernel file name must be a plain file name, not {self.kernel_filename!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        try:
            return cls(
                task=d["task"],
                goal=Goal(**d["goal"]),
                model=d["model"],
                starting_kernel=d["starting_kernel"],
                kernel_filename=d["kernel_filename"],
                budgets=Budgets.from_dict(d.get("budgets")),
                review_mode=d.get("review_mode", "auto"),
                review_timeout_s=d.get("review_timeout_s"),
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"incomplete run settings: {exc}") from None
