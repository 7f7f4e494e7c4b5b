"""The compare page's two detailed views: the runs' best kernels scenario by scenario (a grid of ratios, laid
out by the evidence view's rule, runs/kernel_pages/evidence.py), and the aligned timeline of the questions each run asked,
with the gain (or none) over the evaluations that followed each one.

The figures come from where the rest of the dashboard takes them: a run's best kernel is its evaluation with
the best verified speedup over its own goal baseline (gpu_harness.figures.headline_speedup: measured by a harness of
this site on the task's full set; never an imported claim or a quick-set figure), a question's gain is the bank's
own attribution (runs.selectors_bank.attributions), so the compare page cannot disagree with the run or bank pages.
"""

from __future__ import annotations

from typing import Any

from gpu_harness import figures
from runs.kernel_pages.evidence import SCENARIO_AXIS, scenario_grid
from runs.kernel_pages.selectors_evidence import _param_text, _sig, column_headers, speedup_tone
from runs.models import Evaluation, Run
from runs.run_pages.selectors import run_evaluations
from runs.selectors_bank import attributions, gain_text


def best_evaluation(run: Run) -> Evaluation | None:
    """The run's evaluation with the best verified speedup over its goal baseline (the first of equals): the
    headline rule (`figures.headline_speedup`), so an imported run, whose figures are its trace's claims, and a run
    with quick-set figures alone have none."""
    baseline, _ = run.goal
    full_ids, imported = list(run.task.scenario_ids or []), bool(run.imported_from)
    best, best_speedup = None, None
    for evaluation in run_evaluations(run):
        speedup = figures.headline_speedup(evaluation.verdict, baseline, full_ids, imported=imported)
        if speedup is not None and (best_speedup is None or speedup > best_speedup):
            best, best_speedup = evaluation, speedup
    return best


def _ratio(a: dict | None, b: dict | None) -> float | None:
    """How many times faster scenario `a` ran than `b` (b's time over a's), where both are correct and timed."""
    if a is None or b is None or not (a.get("correct") and b.get("correct")):
        return None
    ta, tb = a.get("time_ms"), b.get("time_ms")
    if not (isinstance(ta, (int, float)) and isinstance(tb, (int, float)) and ta > 0 and tb > 0):
        return None
    return tb / ta


def no_best_note(run: Run) -> str:
    """What the grid says instead of ratios when `run` has no verified best kernel (`best_evaluation` is None)."""
    if run.imported_from:
        return (
            f"run {run.pk} is imported: its evaluations are the trace's claims, not measured here, so it has no "
            'verified best kernel to compare ("Verify here" on its kernel\'s page measures one here)'
        )
    return (
        f"run {run.pk} has no verified evaluation yet: none measured here on its task's full set of scenarios "
        "and correct on all of them"
    )


def same_source_note(first: Run, other: Run, best: Evaluation) -> str:
    """What the grid says instead of ratios when both runs' best kernels are one source: any ratio between two
    timings of one source is the machine's noise, not a difference between the runs."""
    return (
        f"same source: the best kernels of runs {first.pk} and {other.pk} are one source "
        f"(sha256 {best.kernel.sha256[:12]}), so their timings differ by noise only"
    )


def _ratio_cell(sid: str, ratio: float | None, a: dict, b: dict, run_a: int, run_b: int) -> dict:
    """One cell of a ratio grid: the ratio, or "no difference" where the interval on it (from the two timings'
    intervals, gpu_harness.figures.time_ratio_interval) holds 1.0; its title gives the times and the interval."""
    interval = figures.time_ratio_interval(a, b) if ratio is not None else None
    same = figures.no_difference(interval)
    title = f"{sid}: run {run_a} {_sig(a.get('time_ms'))} ms, run {run_b} {_sig(b.get('time_ms'))} ms"
    return {
        "id": sid,
        "text": "no difference" if same else (_sig(ratio, "×") if ratio is not None else "—"),
        "tone": "even" if same else speedup_tone(ratio),
        "title": title + (f" · interval {figures.format_interval(interval)}" if interval else ""),
    }


def ratio_grids(runs: list[Run]) -> list[dict]:
    """The first run's best kernel against each other run's, one grid per other run: in each cell, how many
    times faster the first run's best kernel ran that scenario (the other's time over the first's)."""
    if not runs:
        return []
    first = runs[0]
    first_best = best_evaluation(first)
    grids = []
    for other in runs[1:]:
        entry: dict[str, Any] = {"run_a": first.pk, "run_b": other.pk, "grid_rows": [], "note": ""}
        grids.append(entry)
        if other.task_id != first.task_id:
            entry["note"] = f"run {other.pk} is of another task ({other.task.name}): no scenario in common"
            continue
        other_best = best_evaluation(other)
        if first_best is None or other_best is None:
            entry["note"] = no_best_note(first if first_best is None else other)
            continue
        if first_best.kernel.sha256 == other_best.kernel.sha256:
            entry["note"] = same_source_note(first, other, first_best)
            continue
        a = {s["id"]: s for s in first_best.verdict["scenarios"]}
        b = {s["id"]: s for s in other_best.verdict["scenarios"]}
        common = [s for sid, s in a.items() if sid in b]
        if not common:
            entry["note"] = "their best evaluations ran no scenario in common"
            continue
        spec = first.task.spec or {}
        grid = scenario_grid(list(spec.get("parameters") or []), common)
        ratios = {sid: _ratio(a[sid], b[sid]) for sid in (s["id"] for s in common)}
        for r, values in enumerate(grid.rows):
            cells: list[dict[str, Any] | None] = []
            for c in range(len(grid.columns)):
                sid = grid.cell(r, c)
                if sid is None:
                    cells.append(None)
                    continue
                cells.append(_ratio_cell(sid, ratios[sid], a[sid], b[sid], first.pk, other.pk))
            entry["grid_rows"].append({"values": [_param_text(v) for v in values], "cells": cells})
        entry.update(
            evaluation_a=first_best.pk,
            evaluation_b=other_best.pk,
            row_axes=[a_ if a_ != SCENARIO_AXIS else "scenario" for a_ in grid.row_axes],
            column_headers=column_headers(grid.column_axes, grid.columns),
            header_depth=max(1, len(grid.column_axes)),
            **_ratio_summary(ratios, a, b),
        )
    return grids


def _ratio_summary(ratios: dict[str, float | None], a: dict, b: dict) -> dict:
    """The line above a ratio grid, by the cells' own rule: the geometric mean of the ratios with its interval
    ("no difference (…)" where that holds 1.0), and on how many scenarios the first run's kernel was faster beyond
    the noise (`figures.faster_beyond_noise`): a cell that says "no difference" is not counted as faster."""
    measured = {sid: v for sid, v in ratios.items() if v is not None}
    intervals = {sid: figures.time_ratio_interval(a[sid], b[sid]) for sid in measured}
    geomean = figures.geometric_mean(list(measured.values())) if measured else None
    interval = figures.geomean_of_intervals(list(intervals.values()))
    if geomean is None:
        text = "—"
    elif figures.no_difference(interval):
        text = f"no difference ({figures.format_interval(interval)})"
    else:
        text = _sig(geomean, "×") + (f" ({figures.format_interval(interval)})" if interval else "")
    return {
        "geomean": text,
        "faster": sum(1 for sid, v in measured.items() if figures.faster_beyond_noise(v, intervals[sid])),
        "measured": len(measured),
    }


def question_timeline(runs: list[Run], markers_by_run: dict[int, list[dict]]) -> dict:
    """The questions of every run aligned by the number of evaluations before them: {"rows": [{"evaluation": N,
    "cells": one list of questions per run}], "runs": the run ids}. Each question carries its text, decision, who
    decided, and the bank's gain over the evaluations that followed it (None: no verified gain measured), written
    with its interval (`runs.selectors_bank.gain_text`)."""
    gains = {a.question_id: a for a in attributions([r.pk for r in runs]) if a.gain is not None}
    by_point: dict[int, dict[int, list[dict]]] = {}
    for run in runs:
        # An imported run's figures are its trace's claims: never a gain (the bank's rule), and the table says why.
        none = (
            "no gain measured: imported, its figures are the trace's claims"
            if run.imported_from
            else "no gain measured"
        )
        for marker in markers_by_run.get(run.pk, []):
            found = gains.get(marker["question_id"])
            # the gain with its interval ("no difference" where that holds 1.0; "noise unknown" without one)
            text = none if found is None else gain_text(found.gain, found.gain_low, found.gain_high)
            entry = {**marker, "gain": found.gain if found is not None else None, "gain_text": text}
            by_point.setdefault(marker["evaluation"], {}).setdefault(run.pk, []).append(entry)
    rows = [{"evaluation": n, "cells": [by_point[n].get(run.pk, []) for run in runs]} for n in sorted(by_point)]
    return {"runs": [r.pk for r in runs], "rows": rows}
