"""The evidence view of one evaluation: its scenarios as a grid by the task's own axes (runs/kernel_pages/evidence.py),
coloured by speed-up against a chosen baseline, the rates and their share of the measured peak, and how the
speed-ups are spread. Every figure comes from gpu_harness.figures; this module only lays them out as text."""

from __future__ import annotations

from gpu_harness import figures
from runs.kernel_pages.evidence import SCENARIO_AXIS, scenario_grid
from runs.models import Evaluation

# Tone of a cell by its speed-up: slower than the baseline is red, about even is pale, faster is green. The upper
# bound of each band, ascending; the stylesheet colours each (static/kseek.css, .tone-*).
TONES = [(0.5, "down3"), (0.8, "down2"), (0.95, "down1"), (1.05, "even"), (1.25, "up1"), (2.0, "up2")]
TOP_TONE = "up3"
OUTCOME_TEXT = {"correct": "correct", "wrong": "wrong", "not_run": "not run"}


def speedup_tone(value: float | None) -> str:
    if value is None:
        return "none"
    return next((tone for bound, tone in TONES if value < bound), TOP_TONE)


def _sig(value, suffix: str = "") -> str:
    return figures.format_significant(value, 3, suffix=suffix)


def _param_text(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _sig(value)
    return "—" if value is None else str(value)


def _share_text(share: float | None) -> str:
    return "—" if share is None else _sig(share * 100, "%")


def _spec_counts(spec: dict) -> dict[str | None, dict]:
    return {s.get("id"): s for s in (spec or {}).get("scenarios") or [] if isinstance(s, dict)}


def scenario_counts(s: dict, spec_counts: dict) -> tuple[float | None, float | None]:
    """The FLOP and byte counts of one call of a verdict's scenario, both from one source, so that its TFLOP/s and
    its GB/s (and what bounds it) are of the same call: the verdict's own where the harness recorded its bytes
    (the FLOP count its TFLOP/s and time imply, the bytes it checked the timing against); else, for a verdict
    from before the harness recorded them (the released kernels' results, a trace), both from the task's summary,
    the only counts there are; else the verdict's FLOP count alone."""
    implied = figures.implied_flops(s.get("tflops"), s.get("time_ms"))
    if s.get("bytes") is not None:
        return implied, s.get("bytes")
    counts = spec_counts.get(s["id"]) or {}
    if counts.get("flops") is not None:
        return counts.get("flops"), counts.get("bytes")
    return implied, None


def evaluation_baselines(evaluation: Evaluation) -> list[str]:
    """The baselines the evaluation measured (its geomean's), in the order its task lists them, then any other by
    name, `best_library` last. Not the stored dict's order: PostgreSQL's jsonb keeps no key order."""
    spec = (evaluation.kernel.task.spec if evaluation.kernel.task_id else None) or {}
    listed = [b.get("name") for b in spec.get("baselines") or [] if isinstance(b, dict)]
    position = {name: i for i, name in enumerate(listed)}
    return sorted(
        figures.geomean_entries(evaluation.verdict),
        key=lambda name: (name == figures.BEST_LIBRARY, position.get(name, len(position)), name),
    )


def default_baseline(evaluation: Evaluation, baselines: list[str]) -> str | None:
    """The run's goal baseline (`Run.goal`), or the task's for an evaluation of no run, when it was measured;
    else the first measured one."""
    goal = (
        evaluation.run.goal[0]
        if evaluation.run_id
        else (evaluation.kernel.task.goal_baseline if evaluation.kernel.task_id else None)
    )
    return goal if goal in baselines else (baselines[0] if baselines else None)


def _best_library_name(s: dict, libraries: list[str], baselines: list[str]) -> str:
    """Which library was the fastest on this scenario (figures.best_library over its stored medians), where the
    evaluation measured the best library and the task names its libraries; else ""."""
    if figures.BEST_LIBRARY not in baselines:
        return ""
    best = figures.best_library(s, libraries)
    return best["name"] if best else ""


def _rate_text(rate: tuple[float | None, str, float | None]) -> str:
    """One rate with its unit, and its share of the measured peak where there is one: `3480 GB/s (87.1%)`."""
    value, unit, share = rate
    if value is None:
        return "—"
    return f"{_sig(value)} {unit}" + (f" ({_share_text(share)})" if share is not None else "")


def _rate_fields(rates: dict) -> dict:
    """The row's rates: the bound one first (figures.lead_rate) and the other (figures.other_rate), as text, and
    each of the four figures on its own (the hover's details)."""
    value, unit, share = figures.lead_rate(rates)
    memory = rates["bound"] == figures.MEMORY_BOUND
    return {
        "bound": rates["bound"] or "",
        "rate": "—" if value is None else f"{_sig(value)} {unit}",
        "rate_share": _share_text(share),
        "rate_nominal_share": _share_text(rates["gbps_nominal_share"]) if memory else "",
        "other_rate": _rate_text(figures.other_rate(rates)),
        "tflops": _sig(rates["tflops"]),
        "tflops_share": _share_text(rates["tflops_share"]),
        "gbps": _sig(rates["gbps"]),
        "gbps_share": _share_text(rates["gbps_share"]),
    }


def _scenario_row(s: dict, spec_counts: dict, evaluation: Evaluation, baselines: list[str], libraries: list) -> dict:
    outcome = figures.scenario_outcome(s)
    verdict = evaluation.verdict
    flops, nbytes = scenario_counts(s, spec_counts)
    rates = figures.scenario_rates(
        flops, nbytes, s.get("time_ms"), verdict.get("peaks") or {}, verdict.get("device_name") or ""
    )
    over_peak = any(share is not None and share > 1.0 for share in (rates["tflops_share"], rates["gbps_share"]))
    speedups = {b: figures.scenario_speedup(s, b) for b in baselines}
    intervals = {b: figures.scenario_interval(s, b) for b in baselines}
    return {
        "id": s["id"],
        "params": s.get("params") or {},
        "outcome": outcome,
        "outcome_text": OUTCOME_TEXT[outcome],
        "reason": s.get("reason") or "",
        "error": _sig(s.get("error")),
        "time_ms": _sig(s.get("time_ms")),
        **_rate_fields(rates),
        # A figure above the measured peak, or a correct scenario the harness still wrote a reason for (a timing
        # it found suspect), is marked so that it stands out.
        "suspect": over_peak or (outcome == "correct" and bool(s.get("reason"))),
        "speedups": {b: _speedup_cell_text(v, intervals[b]) for b, v in speedups.items()},
        "intervals": {b: figures.format_interval(i) for b, i in intervals.items()},
        "tones": {b: "even" if figures.no_difference(intervals[b]) else speedup_tone(v) for b, v in speedups.items()},
        "best_library": _best_library_name(s, libraries, baselines),
        # why a correct scenario has no figure for a baseline (a wrong or unrun one has none for any)
        "na_notes": {b: _na_note(s, verdict, b) for b, v in speedups.items() if v is None and outcome == "correct"},
        # a baseline whose time may hold the GPU waiting on its host path: the speed-up may be partly over that path
        "host_waits": {b: note[:NA_NOTE_CHARS] for b in speedups if (note := figures.scenario_host_wait(s, b))},
    }


# How much of a baseline's n/a note a page shows (the harness cuts an import's message shorter; a stored verdict
# may come from elsewhere)
NA_NOTE_CHARS = 300


def _na_note(s: dict, verdict: dict, baseline: str) -> str:
    """Why `baseline` has no figure on scenario `s`: the note its child gave there (a shape the library refuses, a
    library that does not import in the child), else the evaluation's own (not installed where the judge ran),
    else ""."""
    for note in (figures.scenario_na_note(s, baseline), figures.whole_run_notes(verdict).get(baseline)):
        if isinstance(note, str) and note.strip():
            return note.strip()[:NA_NOTE_CHARS]
    return ""


def _speedup_cell_text(value: float | None, interval: tuple[float, float] | None) -> str:
    """A scenario's speed-up in a cell: "no difference" where its interval holds 1.0 (gpu_harness.figures)."""
    return "no difference" if figures.no_difference(interval) else _sig(value, "×")


def _cell_title(row: dict, params_shown: list[str], has_peaks: bool) -> str:
    lines = [row["id"], ", ".join(f"{p}={_param_text(row['params'].get(p))}" for p in params_shown)]
    lines.append(row["outcome_text"] + (f": {row['reason']}" if row["reason"] else ""))
    lines.append(f"time {row['time_ms']} ms · error {row['error']}")
    tflops = f"{row['tflops']} TFLOP/s" + (f" ({row['tflops_share']} of peak)" if has_peaks else "")
    gbps = f"{row['gbps']} GB/s" + (f" ({row['gbps_share']} of peak" if has_peaks else "")
    if row["rate_nominal_share"]:
        gbps += f", {row['rate_nominal_share']} of nominal"
    gbps += ")" if has_peaks else ""
    # the bound rate first (figures.bound_by): a memory-bound scenario is measured against the bandwidth
    rates = [gbps, tflops] if row["bound"] == figures.MEMORY_BOUND else [tflops, gbps]
    lines.append((f"{row['bound']}-bound: " if row["bound"] else "") + " · ".join(rates))
    lines.append(" · ".join(_speedup_title(row, b, text) for b, text in row["speedups"].items()))
    if row["best_library"]:
        lines.append(f"best library here: {row['best_library']}")
    return "\n".join(lines)


def _speedup_title(row: dict, baseline: str, text: str) -> str:
    """One baseline's part of a cell's title: its speed-up with its interval, or "n/a" and why."""
    if note := row["na_notes"].get(baseline):
        return f"vs {baseline} n/a ({note})"
    interval = f" ({row['intervals'][baseline]})" if row["intervals"][baseline] else ""
    wait = f" [{baseline}: {row['host_waits'][baseline]}]" if baseline in row["host_waits"] else ""
    return f"vs {baseline} {text}{interval}{wait}"


def _cell_text(row: dict, baseline: str | None) -> tuple[str, str]:
    if row["outcome"] == "wrong":
        return "✗ wrong", "wrong"
    if row["outcome"] == "not_run":
        return "not run", "not-run"
    if baseline is None:
        return "—", "none"
    if row["na_notes"].get(baseline):  # the baseline did not run this scenario: its hover says why
        return "n/a", "none"
    return row["speedups"][baseline], row["tones"][baseline]


def column_headers(axes: list[str], columns: list[tuple]) -> list[list[tuple[str, int]]]:
    """The grid's column header rows, one per column axis: each a list of (label, span), a value spanning the
    columns next to each other that share it and every value before it (dtype=bf16 over causal no, yes)."""
    headers = []
    for level, axis in enumerate(axes):
        row: list[tuple[str, int]] = []
        previous = None
        for column in columns:
            key = column[: level + 1]
            if key == previous:
                row[-1] = (row[-1][0], row[-1][1] + 1)
            else:
                row.append((f"{axis} {_param_text(column[level])}", 1))
            previous = key
        headers.append(row)
    return headers or [[("speed-up", 1)]]


def _spread_row(verdict: dict, baseline: str, goal: bool) -> dict:
    """One baseline's row of the spread table: the speed-ups' spread, and the geometric mean with its interval
    ("no difference" where it holds 1.0), or "noise unknown" where a scenario it covers lost its interval among
    others (figures.noise_unknown: the point is then no figure beyond the noise, as verdict_speedup_text says)."""
    spread = figures.speedup_spread(verdict, baseline)
    interval = figures.geomean_interval(verdict, baseline)
    unknown = spread["geomean"] is not None and figures.noise_unknown(verdict, baseline)
    return {
        "baseline": baseline,
        "goal": goal,
        "count": spread["count"],
        "min": _sig(spread["min"], "×"),
        "median": _sig(spread["median"], "×"),
        "geomean": "no difference" if figures.no_difference(interval) else _sig(spread["geomean"], "×"),
        "interval": "noise unknown" if unknown else figures.format_interval(interval),
        "below_one": spread["below_one"],
    }


def _peaks_note(peaks: dict, device_name: str) -> str:
    """The measured peaks, the ridge point they make (figures.ridge_point: the rule that says which scenarios are
    memory-bound) and the maker's bandwidth of the device where it is listed; or that none was measured."""
    if not peaks:
        return "No share of the peak: the harness recorded no measured device peak for this evaluation."
    measured = [
        f"{_sig(peaks['peak_tflops'])} TFLOP/s" if peaks.get("peak_tflops") else "",
        f"{_sig(peaks['peak_gbps'])} GB/s" if peaks.get("peak_gbps") else "",
    ]
    note = "Measured peak: " + " · ".join(text for text in measured if text)
    if (ridge := figures.ridge_point(peaks)) is not None:
        note += (
            f". Ridge point {_sig(ridge)} FLOP/byte: a scenario doing fewer FLOP per byte it must move is"
            " memory-bound, rated in GB/s and its share of the measured bandwidth"
        )
    if (nominal := figures.nominal_gbps(device_name)) is not None:
        note += f". Nominal memory bandwidth of the {device_name}: {_sig(nominal)} GB/s"
    return note


def evaluation_evidence(evaluation: Evaluation) -> dict:
    """Everything the evidence view shows of `evaluation`, from its stored verdict (the task's summary gives the
    grid's parameters, the baselines' order, the libraries, and a scenario's counts only where the verdict has
    none: `scenario_counts`)."""
    task = evaluation.kernel.task if evaluation.kernel.task_id else None
    spec = (task.spec if task else None) or {}
    verdict = evaluation.verdict
    outcomes = verdict.get("scenarios") or []
    baselines = evaluation_baselines(evaluation)
    chosen = default_baseline(evaluation, baselines)
    peaks = verdict.get("peaks") or {}
    spec_counts = _spec_counts(spec)
    has_bytes = any((scenario_counts(s, spec_counts)[1] or 0) > 0 for s in outcomes)
    libraries = [name for name in spec.get("libraries") or [] if isinstance(name, str)]
    rows = [_scenario_row(s, spec_counts, evaluation, baselines, libraries) for s in outcomes]
    by_id = {r["id"]: r for r in rows}
    grid = scenario_grid(list(spec.get("parameters") or []), outcomes)
    shown = [a for a in [*grid.row_axes, *grid.column_axes] if a != SCENARIO_AXIS]
    has_peaks = bool(peaks)
    for row in rows:
        row["param_texts"] = [_param_text(row["params"].get(p)) for p in shown]
        row["title"] = _cell_title(row, shown, has_peaks)
        row["cell_text"], row["cell_tone"] = _cell_text(row, chosen)
        row["cells"] = {b: _cell_text(row, b) for b in baselines}
    grid_rows = []
    for r, values in enumerate(grid.rows):
        cells = [by_id.get(grid.cell(r, c)) for c in range(len(grid.columns))]
        grid_rows.append({"values": [_param_text(v) for v in values], "cells": cells})
    spread = [_spread_row(verdict, b, b == chosen) for b in baselines]
    counts = {k: sum(1 for r in rows if r["outcome"] == k) for k in OUTCOME_TEXT}
    return {
        "baselines": baselines,
        "baseline": chosen,
        # the goal baseline's geometric mean with its interval ("no difference" where it holds 1.0): the figure the
        # kernel page writes in its Evidence heading, on screen at 390 px where the spread table scrolls
        "headline": figures.verdict_speedup_text(verdict, chosen) if chosen else None,
        # where the goal baseline's time may hold a host wait, on how many scenarios (beside the headline)
        "host_waits": figures.host_wait_words(verdict, chosen) if chosen else "",
        "best_library": figures.BEST_LIBRARY,
        # which libraries this evaluation's best_library is the best of, where it did not time all of the task's
        "library_scope": figures.library_scope(verdict, figures.BEST_LIBRARY, libraries),
        "row_axes": [a if a != SCENARIO_AXIS else "scenario" for a in grid.row_axes],
        "column_axes": grid.column_axes,
        "column_headers": column_headers(grid.column_axes, grid.columns),
        "header_depth": max(1, len(grid.column_axes)),
        "constant": [(name, _param_text(value)) for name, value in grid.constant.items()],
        "grid_rows": grid_rows,
        "rows": rows,
        "params": shown,
        "spread": spread,
        "counts": counts,
        "has_peaks": has_peaks,
        "has_bytes": has_bytes,
        "peaks_note": _peaks_note(peaks, verdict.get("device_name") or ""),
        # a column saying what bounds each scenario, and one for the share of the maker's bandwidth, where any has it
        "has_bounds": any(r["bound"] for r in rows),
        "has_nominal": any(r["rate_nominal_share"] for r in rows),
        "host_busy": figures.host_busy(verdict),
        "cells_json": {r["id"]: r["cells"] for r in rows},
    }
