"""The figures every reader derives from a verdict: one function each, on the verdict dict.

A verdict is `EvalResult.to_dict()`: the form the harness returns, the agent loop records in its `evaluation`
events and the dashboard stores (an `Evaluation` row gives the same dict back, `Evaluation.verdict()`). The agent
loop (`agentloop.goal`, `agentloop.state`), the server's run totals (`runs.services.kernels`), its pages and
charts (`runs.selectors`, the `speedup` template filter) and the question bank's figures (`runs.selectors_bank`)
all read a verdict through these functions, so that they cannot disagree on what counts. Each caller passes the
goal it means; the dashboard always passes the run's own goal (`Run.goal`), never its task's.

No Django and no torch here: this module sits at the bottom, under `agentloop` and `runs` alike.
"""

from __future__ import annotations

import math


def all_correct(verdict: dict) -> bool:
    """Correct on every scenario it ran: the status says so, and there is at least one scenario, none failed."""
    scenarios = verdict.get("scenarios") or []
    return verdict.get("status") == "correct" and bool(scenarios) and all(s.get("correct") for s in scenarios)


def speedup_over(verdict: dict, baseline: str) -> float | None:
    """The geometric-mean speedup over `baseline`, or None where it was not measured (or is not a finite
    number: the harness stores NaN and infinities as None, so nothing else is a measurement)."""
    value = ((verdict.get("geomean") or {}).get(baseline) or {}).get("speedup")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def verified_speedup(verdict: dict, baseline: str) -> float | None:
    """The speedup that counts toward a best: only from a verdict correct on everything it ran."""
    return speedup_over(verdict, baseline) if all_correct(verdict) else None


def meets_target(verdict: dict, baseline: str, target: float) -> bool:
    """Correct on what it ran and at least `target` over `baseline`. Exactly at the target counts as met."""
    speedup = verified_speedup(verdict, baseline)
    return speedup is not None and speedup >= target


def covers(verdict: dict, scenario_ids: list[str]) -> bool:
    """True when the verdict ran every one of `scenario_ids` (a task's full set); an empty set is never covered."""
    ran = {s.get("id") for s in verdict.get("scenarios") or []}
    return bool(scenario_ids) and set(scenario_ids) <= ran


def goal_met(verdict: dict, baseline: str, target: float, full_ids: list[str]) -> bool:
    """The goal: at least `target` over `baseline`, every scenario correct, and the full set run."""
    return meets_target(verdict, baseline, target) and covers(verdict, full_ids)


def best_so_far(best: float | None, speedup: float | None) -> float | None:
    """The best after one more verified speedup (None: nothing verified yet, or nothing to add)."""
    if speedup is None:
        return best
    return speedup if best is None or speedup > best else best


def best_per_baseline(best: dict[str, float], verdict: dict) -> dict[str, float]:
    """The best verified speedup over each baseline after this verdict (a new dict; `best` is not changed)."""
    after = dict(best)
    for baseline in verdict.get("geomean") or {}:
        value = best_so_far(after.get(baseline), verified_speedup(verdict, baseline))
        if value is not None:
            after[baseline] = value
    return after


def best_series(verdicts: list[dict], baseline: str) -> list[float | None]:
    """The best verified speedup over `baseline` after each verdict, in order (None until one is verified)."""
    series, best = [], None
    for verdict in verdicts:
        best = best_so_far(best, verified_speedup(verdict, baseline))
        series.append(best)
    return series


def build_arch(verdict: dict) -> str:
    """The GPU architecture the verdict's build was compiled for (e.g. sm_90a); empty when it does not say (a
    CPU build, or a verdict from before the harness recorded it)."""
    arch = (verdict.get("build") or {}).get("arch")
    return arch if isinstance(arch, str) else ""


def format_speedup(value: float | None, *, digits: str = ".3f", times: str = "x", missing: str = "n/a") -> str:
    """A speedup as text: `1.234x`, or `missing` when there is none. The dashboard writes `.3f` and `×`, with
    `—` for none (its `speedup` filter); the harness's tables and summaries `.3f` and `x`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return missing
    return f"{format(value, digits)}{times}"
