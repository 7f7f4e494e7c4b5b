"""The typed verdict of one evaluation: what the agent loop, the CLI and the dashboard read.

The field names are a contract with the agent loop (see docs/harness.md); add fields, never rename. The figures
derived from a verdict (all correct, speedup over a baseline, goal met, best so far) live in `figures.py`, on the
verdict's dict; its text rendering in `report.py`, which imports this module (never the other way round).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, cast

from . import figures

STATUSES = ("compiled", "incorrect", "correct", "error")


@dataclass
class ScenarioOutcome:
    id: str
    params: dict[str, Any]
    correct: bool
    error: float | None = None  # relative error of the main output (O for attention, C for matmul)
    reason: str | None = None  # why it is not correct, or why its timing is suspect
    time_ms: float | None = None  # median of the timed calls (None when not timed)
    tflops: float | None = None
    speedup: dict[str, float | None] = field(default_factory=dict)  # baseline -> baseline_ms / time_ms
    # Added fields (beyond the contract):
    spread_ms: float | None = None  # interquartile range of the timed calls
    repeats: int | None = None
    tolerance: float | None = None  # the error bound this scenario was held to
    baseline_ms: dict[str, float | None] = field(default_factory=dict)
    host_ms: float | None = None  # the parent's own wall clock over a batch, per call
    # the compulsory bytes of one call (the task's `bytes` formula) the timing was checked against: with
    # time_ms, the scenario's GB/s, as tflops is its FLOP count over time_ms (None when not timed)
    bytes: float | None = None
    # the uncertainty of the medians (verdict.median_interval, [low, high] in ms): the candidate's, and each
    # baseline's with its median; figures.scenario_interval turns them into an interval on each speedup
    time_ci_ms: list[float] | None = None
    baseline_ci_ms: dict[str, list[float]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalResult:
    task: str
    kernel_sha256: str
    kernel_source: str
    status: str  # one of STATUSES
    reason: str | None = None
    host: str = ""
    device_name: str = ""
    scenarios: list[ScenarioOutcome] = field(default_factory=list)
    geomean: dict[str, dict[str, Any]] = field(default_factory=dict)  # baseline -> {"speedup", "count"}
    started_at: str = ""
    finished_at: str = ""
    wall_s: float = 0.0
    # Added fields:
    kernel_path: str = ""
    seed: int | None = None
    baselines: list[str] = field(default_factory=list)
    baseline_notes: dict[str, str] = field(default_factory=dict)  # baseline -> why it is n/a
    # the baselines the task marks as libraries that this evaluation asked for: the "best_library" baseline is
    # the fastest of them on each scenario (figures.best_library)
    libraries: list[str] = field(default_factory=list)
    build: dict[str, Any] = field(default_factory=dict)  # registers, spills, shared memory, compile time, cache hit
    geomean_tflops: float | None = None
    # seconds spent in each part of this evaluation: build_s, setup_s (the judge's imports and peak
    # measurement), start_s (the child's start and load), correctness_s, timing_s, judge_s (inside the two)
    phases: dict[str, Any] = field(default_factory=dict)
    reference: str = ""  # what the outputs were judged against (e.g. "fused fp32 kernel")
    # the device's measured peaks the timings were checked against: peak_tflops, peak_gbps (empty on a CPU)
    peaks: dict[str, Any] = field(default_factory=dict)
    # how loaded the host was while timing: load_1m (the highest 1-minute load average seen), cores (usable);
    # figures.host_busy says whether that, or the timings' own spread, makes the figures doubtful
    host_load: dict[str, Any] = field(default_factory=dict)
    # where the candidate's process ran: "bubblewrap" (a sandbox of its own: gpu_harness/childbox.py) or "none";
    # "" where no candidate ran (the build failed, or candidates cannot run on this host)
    child_sandbox: str = ""

    @property
    def all_correct(self) -> bool:
        """`gpu_harness.figures.all_correct` of this verdict's dict: the one rule, on the typed form."""
        return figures.all_correct(self.to_dict())

    def speedup_over(self, baseline: str) -> float | None:
        """`gpu_harness.figures.speedup_over` of this verdict's dict."""
        return figures.speedup_over(self.to_dict(), baseline)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return cast("dict[str, Any]", _json_safe(d))  # (a dict stays a dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        d = dict(d)
        d["scenarios"] = [ScenarioOutcome(**_known(ScenarioOutcome, s)) for s in d.get("scenarios", [])]
        return cls(**_known(cls, d))


def _known(cls: type[Any], d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _json_safe(x: object) -> object:
    # NaN and infinities are not JSON: store them as None so that to_dict() always serialises.
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x
