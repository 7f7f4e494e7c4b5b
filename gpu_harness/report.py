"""Text rendering of an EvalResult: a compact table (one row a scenario) and a summary line.

This module sits above `result.py` (it imports the verdict type; the verdict knows nothing of its rendering):
`render_table(result)`, `summary_line(result)`.

Where the harness measured the device's peaks, each row leads with the rate that bounds it (figures.bound_by:
GB/s for a memory-bound scenario such as attention decode, TFLOP/s otherwise), its share of the measured peak,
for a memory-bound one its share of the maker's bandwidth where the device is listed, and then the other rate.
The counts come from the task's formulas, both of them (this process knows the task that judged; a verdict holds
its bytes only since the harness recorded them, `ScenarioOutcome.bytes`); a task not known here leaves TFLOP/s
leading.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import figures
from .figures import BEST_LIBRARY, host_busy, no_difference, scenario_interval, speedup_over, verdict_speedup_text
from .result import EvalResult, ScenarioOutcome


def _num(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def summary_line(r: EvalResult) -> str:
    n = len(r.scenarios)
    ok = sum(1 for s in r.scenarios if s.correct)
    parts = [f"{r.task}: {r.status.upper()}"]
    if r.reason:
        parts.append(r.reason)
    parts.append(f"{ok}/{n} scenarios correct{_coverage_words(r)}")
    if r.geomean_tflops is not None:
        parts.append(f"geomean {r.geomean_tflops:.4g} TFLOP/s")
    verdict = r.to_dict()
    for name in r.baselines:
        if speedup_over(verdict, name) is None:
            parts.append(f"vs {name}: n/a{_na_words(r, verdict, name)}")
        else:
            text = verdict_speedup_text(verdict, name, times="x")
            scope = figures.library_scope(verdict, name, _task_libraries(r.task)) if name == BEST_LIBRARY else ""
            over = f"vs {name}: {text} over {r.geomean[name].get('count')}"
            parts.append(figures.with_notes(over, scope, figures.host_wait_words(verdict, name)))
    if busy := host_busy(verdict):
        parts.append(f"host was busy ({busy})")
    parts.append(f"{r.wall_s:.1f}s")
    return " | ".join(parts)


def _na_words(r: EvalResult, verdict: dict[str, Any], name: str) -> str:
    """Why `name` has no figure, as the summary says it: the run's note (the judge could not import or find it),
    else the one note that every scenario's child gave (a library that imports in the judge but not in the
    contained child: flash-attn-4 on an H200, docs/harness.md), else nothing (the scenario cells say)."""
    if name in r.baseline_notes:
        return f" ({r.baseline_notes[name]})"
    notes = {figures.scenario_na_note(s, name) for s in verdict["scenarios"]}
    note = notes.pop() if len(notes) == 1 else None
    return f" ({note}, on every scenario)" if note else ""


def _coverage_words(r: EvalResult) -> str:
    """ " (of the task's 10: not the full set)" where the verdict ran some of its task's scenarios (eval's default,
    the quick set): "3/3 correct" alone reads as the whole task, and its figures are not the full set's. "" where it
    ran them all, ran none, or the task is not known here."""
    total = len(_task_counts(r.task))
    ran = len(r.scenarios)
    return f" (of the task's {total}: not the full set)" if 0 < ran < total else ""


def _speedup_cell(scenario: dict[str, Any], baseline: str) -> str:
    """A scenario's speedup in the table: "no diff" where its interval holds 1.0 (figures.no_difference)."""
    value = (scenario.get("speedup") or {}).get(baseline)
    if no_difference(scenario_interval(scenario, baseline)):
        return "no diff"
    return _num(value, ".3f")


def timed_speedups_text(s: ScenarioOutcome, baselines: list[str]) -> str:
    """A timed scenario's speedups for its progress line, as its table row writes them: ", x0.52 vs numpy, no diff
    vs naive" (a speedup whose interval holds 1.0 is never shown as a number: docs/harness.md, "Noise")."""
    scenario = dataclasses.asdict(s)
    words = []
    for name in baselines:
        if not s.speedup.get(name):
            continue
        cell = _speedup_cell(scenario, name)
        words.append(f"{cell} vs {name}" if cell == "no diff" else f"x{s.speedup[name]:.2f} vs {name}")
    return "".join(f", {w}" for w in words)


def _task_counts(task: str) -> dict[str, tuple[float, float]]:
    """scenario id -> (flops, bytes) from the task's own formulas; {} where the task is not known here (a verdict
    of a task folder this checkout lacks)."""
    from .tasks import TaskError, get_task  # the registry only when a table is drawn: report sits low

    try:
        return {s.id: (s.flops, s.bytes) for s in get_task(task).scenarios()}
    except (ValueError, TaskError, OSError):
        return {}


def _task_libraries(task: str) -> list[str]:
    """The task's libraries, from its spec; [] where the task is not known here."""
    from .tasks import TaskError, get_task

    try:
        return list(get_task(task).libraries)
    except (ValueError, TaskError, OSError):
        return []


def _rates(s: ScenarioOutcome, counts: dict[str, Any], r: EvalResult) -> dict[str, Any]:
    flops, nbytes = counts.get(s.id, (None, None))
    flops = figures.implied_flops(s.tflops, s.time_ms) if flops is None else flops  # a task not known here
    return figures.scenario_rates(flops, nbytes, s.time_ms, r.peaks, r.device_name)


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def _rate_cells(rates: dict[str, Any], nominal: bool) -> list[str]:
    """bound, rate, % peak, [% nominal], also: the bound rate first (figures.lead_rate), then the other."""
    value, unit, share = figures.lead_rate(rates)
    other, other_unit, _ = figures.other_rate(rates)
    cells = [rates["bound"] or "n/a", "n/a" if value is None else f"{value:.4g} {unit}", _share(share)]
    if nominal:
        cells.append(_share(rates["gbps_nominal_share"]) if rates["bound"] == figures.MEMORY_BOUND else "")
    return cells + ["" if other is None else f"{other:.4g} {other_unit}"]


def _rate_head(r: EvalResult, nominal: bool) -> list[str]:
    if not r.peaks:
        return ["TFLOP/s"]  # no ridge point: nothing is bound, the table is as it always was
    return ["bound", "rate", "% peak"] + (["% nominal"] if nominal else []) + ["also"]


def _rates_note(r: EvalResult, nominal: float | None) -> str | None:
    """What the rate columns measure against: the measured peaks, the ridge point, the maker's bandwidth."""
    ridge = figures.ridge_point(r.peaks)
    if ridge is None:
        return None
    note = (
        f"% peak: of the measured {r.peaks['peak_tflops']:.4g} TFLOP/s or {r.peaks['peak_gbps']:.4g} GB/s; "
        f"memory-bound: FLOP per byte below the ridge point {ridge:.4g}, rated in GB/s"
    )
    return note + (f"; % nominal: of {r.device_name}'s {nominal:.4g} GB/s" if nominal else "")


def render_table(r: EvalResult, max_rows: int | None = None) -> str:
    libraries = bool(r.libraries)
    nominal = figures.nominal_gbps(r.device_name) if r.peaks else None
    head = ["scenario", "ok", "error", "tol", "ms"] + _rate_head(r, bool(nominal)) + [f"x {b}" for b in r.baselines]
    head += ["best library"] if libraries else []
    counts = _task_counts(r.task) if r.peaks else {}
    rows = []
    scenario_dicts = r.to_dict()["scenarios"]
    for s, sd in zip(r.scenarios, scenario_dicts):
        rate_cells = _rate_cells(_rates(s, counts, r), bool(nominal)) if r.peaks else [_num(s.tflops, ".4g")]
        rows.append(
            [
                s.id,
                "yes" if s.correct else "NO",
                _num(s.error, ".2e"),
                _num(s.tolerance, ".1e"),
                _num(s.time_ms, ".4g"),
            ]
            + rate_cells
            + [_speedup_cell(sd, b) for b in r.baselines]
            + ([s.details.get(BEST_LIBRARY) or "n/a"] if libraries else [])
        )
    shown = rows if max_rows is None or len(rows) <= max_rows else rows[:max_rows]
    widths = [max(len(str(c)) for c in col) for col in zip(head, *shown)] if shown else [len(h) for h in head]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in shown]
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more scenarios")
    failures = [s for s in r.scenarios if s.reason]
    for s in failures[:20]:
        lines.append(f"  {s.id}: {s.reason}")
    if len(failures) > 20:
        lines.append(f"  ... {len(failures) - 20} more notes")
    if r.reference:
        lines.append(f"judged against: {r.reference}")
    if note := _rates_note(r, nominal):
        lines.append(note)
    lines.append(summary_line(r))
    return "\n".join(lines)
