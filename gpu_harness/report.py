"""Text rendering of an EvalResult: a compact table (one row a scenario) and a summary line.

This module sits above `result.py` (it imports the verdict type; the verdict knows nothing of its rendering):
`render_table(result)`, `summary_line(result)`.
"""

from __future__ import annotations

from .figures import BEST_LIBRARY, host_busy, no_difference, scenario_interval, speedup_over, verdict_speedup_text
from .result import EvalResult


def _num(x, fmt):
    return "n/a" if x is None else format(x, fmt)


def summary_line(r: EvalResult) -> str:
    n = len(r.scenarios)
    ok = sum(1 for s in r.scenarios if s.correct)
    parts = [f"{r.task}: {r.status.upper()}"]
    if r.reason:
        parts.append(r.reason)
    parts.append(f"{ok}/{n} scenarios correct")
    if r.geomean_tflops is not None:
        parts.append(f"geomean {r.geomean_tflops:.4g} TFLOP/s")
    verdict = r.to_dict()
    for name in r.baselines:
        if speedup_over(verdict, name) is None:
            parts.append(f"vs {name}: n/a" + (f" ({r.baseline_notes[name]})" if name in r.baseline_notes else ""))
        else:
            text = verdict_speedup_text(verdict, name, times="x")
            parts.append(f"vs {name}: {text} over {r.geomean[name].get('count')}")
    if busy := host_busy(verdict):
        parts.append(f"host was busy ({busy})")
    parts.append(f"{r.wall_s:.1f}s")
    return " | ".join(parts)


def _speedup_cell(scenario: dict, baseline: str) -> str:
    """A scenario's speedup in the table: "no diff" where its interval holds 1.0 (figures.no_difference)."""
    value = (scenario.get("speedup") or {}).get(baseline)
    if no_difference(scenario_interval(scenario, baseline)):
        return "no diff"
    return _num(value, ".3f")


def render_table(r: EvalResult, max_rows: int | None = None) -> str:
    libraries = bool(r.libraries)
    head = ["scenario", "ok", "error", "tol", "ms", "TFLOP/s"] + [f"x {b}" for b in r.baselines]
    head += ["best library"] if libraries else []
    rows = []
    scenario_dicts = r.to_dict()["scenarios"]
    for s, sd in zip(r.scenarios, scenario_dicts):
        rows.append(
            [
                s.id,
                "yes" if s.correct else "NO",
                _num(s.error, ".2e"),
                _num(s.tolerance, ".1e"),
                _num(s.time_ms, ".4g"),
                _num(s.tflops, ".4g"),
            ]
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
    lines.append(summary_line(r))
    return "\n".join(lines)
