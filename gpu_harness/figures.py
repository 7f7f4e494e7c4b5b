"""The figures every reader derives from a verdict: one function each, on the verdict dict.

A verdict is `EvalResult.to_dict()`: the form the harness returns, the agent loop records in its `evaluation`
events and the dashboard stores (an `Evaluation` row gives the same dict back, `Evaluation.verdict()`). The agent
loop (`agentloop.goal`, `agentloop.state`), the server's run totals (`runs.services.kernels`), its pages and
charts (`runs.run_pages.selectors`, the `speedup` template filter) and the question bank's figures (`runs.selectors_bank`)
all read a verdict through these functions, so that they cannot disagree on what counts. Each caller passes the
goal it means; the dashboard always passes the run's own goal (`Run.goal`), never its task's.

No Django and no torch here: this module sits at the bottom, under `agentloop` and `runs` alike.
"""

from __future__ import annotations

import math
from typing import Any, cast

from . import figure_rates

# The rates and the roofline (figure_rates.py), here too: every reader takes a verdict's figures from this module.
measured = figure_rates.measured
tflops = figure_rates.tflops
gbps = figure_rates.gbps
peak_share = figure_rates.peak_share
MEMORY_BOUND = figure_rates.MEMORY_BOUND
COMPUTE_BOUND = figure_rates.COMPUTE_BOUND
NOMINAL_GBPS = figure_rates.NOMINAL_GBPS
arithmetic_intensity = figure_rates.arithmetic_intensity
ridge_point = figure_rates.ridge_point
bound_by = figure_rates.bound_by
DEVICE_NAME_MAX = figure_rates.DEVICE_NAME_MAX
device_of = figure_rates.device_of
device_text = figure_rates.device_text
nominal_gbps = figure_rates.nominal_gbps
scenario_rates = figure_rates.scenario_rates
implied_flops = figure_rates.implied_flops
lead_rate = figure_rates.lead_rate
other_rate = figure_rates.other_rate


def geometric_mean(values: list[float]) -> float | None:
    """The geometric mean of the positive finite values (a verdict's per baseline, the compare page's ratios); None
    where there is none."""
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def all_correct(verdict: dict[str, Any]) -> bool:
    """Correct on every scenario it ran: the status says so, and there is at least one scenario, none failed."""
    scenarios = verdict.get("scenarios") or []
    return verdict.get("status") == "correct" and bool(scenarios) and all(s.get("correct") for s in scenarios)


def geomean_entries(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The verdict's geometric mean per baseline ({name: {"speedup", "count"}}), each entry that is a mapping under
    a name; a malformed geomean (verdicts come from workers and imports too) measured none."""
    given = verdict.get("geomean")
    if not isinstance(given, dict):
        return {}
    return {name: entry for name, entry in given.items() if isinstance(name, str) and isinstance(entry, dict)}


def speedup_over(verdict: dict[str, Any], baseline: str) -> float | None:
    """The geometric-mean speedup over `baseline`, or None where it was not measured (or is not a positive finite
    number: the harness stores NaN and infinities as None and a geometric mean of speedups is never 0 or less, so
    nothing else is a measurement)."""
    value = geomean_entries(verdict).get(baseline, {}).get("speedup")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def verified_speedup(verdict: dict[str, Any], baseline: str) -> float | None:
    """The speedup that counts toward a best: only from a verdict correct on everything it ran."""
    return speedup_over(verdict, baseline) if all_correct(verdict) else None


def meets_target(verdict: dict[str, Any], baseline: str, target: float) -> bool:
    """Correct on what it ran and at least `target` over `baseline`. Exactly at the target counts as met."""
    speedup = verified_speedup(verdict, baseline)
    return speedup is not None and speedup >= target


def covers(verdict: dict[str, Any], scenario_ids: list[str]) -> bool:
    """True when the verdict ran every one of `scenario_ids` (a task's full set); an empty set is never covered."""
    ran = {s.get("id") for s in verdict.get("scenarios") or []}
    return bool(scenario_ids) and set(scenario_ids) <= ran


def goal_met(
    verdict: dict[str, Any], baseline: str, target: float, full_ids: list[str], task_libraries: list[str]
) -> bool:
    """The goal: at least `target` over `baseline` beyond the noise (`clears_target`: the interval's low end),
    every scenario correct, the full set run, and, over best_library, every library of the task timed
    (`libraries_complete`): where one was not installed, the figure is over the best of the others, which is not
    the goal the run was given."""
    return (
        meets_target(verdict, baseline, target)
        and clears_target(verdict, baseline, target)
        and covers(verdict, full_ids)
        and libraries_complete(verdict, baseline, task_libraries)
    )


def best_so_far(best: float | None, speedup: float | None) -> float | None:
    """The best after one more verified speedup (None: nothing verified yet, or nothing to add)."""
    if speedup is None:
        return best
    return speedup if best is None or speedup > best else best


def best_per_baseline(best: dict[str, float], verdict: dict[str, Any]) -> dict[str, float]:
    """The best verified speedup over each baseline after this verdict (a new dict; `best` is not changed)."""
    after = dict(best)
    for baseline in geomean_entries(verdict):
        value = best_so_far(after.get(baseline), verified_speedup(verdict, baseline))
        if value is not None:
            after[baseline] = value
    return after


def _raised_baselines(best: dict[str, float], verdict: dict[str, Any]) -> list[str]:
    """The baselines over which this verdict raises the best (`best_per_baseline`'s rule: a verified speedup
    above the best held, or the first one)."""
    raised = []
    for baseline in geomean_entries(verdict):
        speedup = verified_speedup(verdict, baseline)
        if speedup is not None and not (baseline in best and best[baseline] >= speedup):
            raised.append(baseline)
    return raised


def best_intervals_after(
    best: dict[str, float], intervals: dict[str, list[float]], verdict: dict[str, Any]
) -> dict[str, list[float]]:
    """The interval of each best after this verdict (a new dict, `best_per_baseline`'s companion): where the
    verdict raises the best over a baseline, its geomean interval replaces the old one (or the old one goes,
    where the verdict has none); elsewhere the interval stays the one of the verdict that set that best. Kept
    with the bests so that a list page writes a best with its noise without reading any verdict."""
    after = dict(intervals)
    for baseline in _raised_baselines(best, verdict):
        interval = geomean_interval(verdict, baseline)
        if interval is None:
            after.pop(baseline, None)
        else:
            after[baseline] = list(interval)
    return after


def best_noise_unknown_after(best: dict[str, float], unknown: list[str], verdict: dict[str, Any]) -> list[str]:
    """The baselines whose best's noise is unknown after this verdict (sorted; `best_intervals_after`'s
    companion): where the verdict raises the best over a baseline, that baseline is in the list exactly when the
    verdict's noise over it is unknown (`noise_unknown`); elsewhere it stays as the verdict that set that best
    left it. Kept because a best without an interval is either from before intervals (held to its point) or one
    whose noise is unknown (no figure beyond the noise), and only the verdict tells them apart."""
    after = set(unknown or [])
    for baseline in _raised_baselines(best, verdict):
        if noise_unknown(verdict, baseline):
            after.add(baseline)
        else:
            after.discard(baseline)
    return sorted(after)


def noise_unknown_text(text: str, unknown: bool) -> str:
    """A speedup's text with "(noise unknown)" after it where its noise is unknown: the one writer of that mark,
    for a verdict's figure (`verdict_speedup_text`) and for a best read from a run's stored marker
    (`best_noise_unknown_after`) or a scoreboard's cell without its verdict."""
    return f"{text} (noise unknown)" if unknown else text


def interval_of(value: object) -> tuple[float, float] | None:
    """A stored interval ([low, high], as `best_intervals_after` keeps it) as a pair, or None where it is not a
    well-formed one (absent, from before intervals were kept, or malformed)."""
    return _pair(value)


def best_series(verdicts: list[dict[str, Any]], baseline: str) -> list[float | None]:
    """The best verified speedup over `baseline` after each verdict, in order (None until one is verified)."""
    series, best = [], None
    for verdict in verdicts:
        best = best_so_far(best, verified_speedup(verdict, baseline))
        series.append(best)
    return series


# ---- what a figure may be called: verified, quick, imported or recorded (issue 34) ----
# A figure is "verified" only where a harness of this site measured it on the task's full scenario set; one it
# measured on fewer scenarios (the quick set) is "quick"; one copied from an imported trace is "imported", and a
# released kernel's results file, read from the repository, is "recorded": claims that no harness here measured
# (a results file's kernel_sha256 is a field anyone can write). Only a verified figure is a headline "best" or is
# called "verified"; "Verify here" is how a claim becomes one.
VERIFIED, QUICK, IMPORTED, RECORDED = "verified", "quick", "imported", "recorded"


def standing(verdict: dict[str, Any], full_ids: list[str], *, imported: bool = False, recorded: bool = False) -> str:
    """VERIFIED, QUICK, IMPORTED or RECORDED: what this verdict's figures may be called. `imported`: the record
    says no harness here measured it (its run was made from a trace); `recorded`: it is a released kernel's
    results file, loaded with the repository (runs/management/commands/load_released_kernels.py)."""
    if recorded:
        return RECORDED
    if imported:
        return IMPORTED
    return VERIFIED if covers(verdict, full_ids) else QUICK


def claim_scope(verdict: dict[str, Any], full_ids: list[str]) -> str:
    """ "" for a verdict over the task's full set; else "on N of M scenarios": a claim (imported or recorded) made
    on a subset says so wherever it is shown, as a quick figure measured here does (issue 34)."""
    if covers(verdict, full_ids):
        return ""
    return f"on {scenarios_ran(verdict, full_ids)} of {len(full_ids)} scenarios"


def scenarios_ran(verdict: dict[str, Any], full_ids: list[str]) -> int:
    """How many of the task's scenarios (`full_ids`) the verdict ran."""
    return len({s.get("id") for s in verdict.get("scenarios") or []} & set(full_ids))


def claim_rank(
    verdict: dict[str, Any], full_ids: list[str], speedup: float, libraries_timed: bool = True
) -> tuple[bool, bool, float]:
    """How figures of one standing compete for a page's one figure: over the full set before any on a subset,
    then over every library the baseline names before over some (`libraries_complete`), then the higher
    speed-up (a screen on a subset, or against eager alone, must not stand for what the whole set showed)."""
    return (covers(verdict, full_ids), libraries_timed, speedup)


def headline_speedup(
    verdict: dict[str, Any], baseline: str, full_ids: list[str], *, imported: bool = False
) -> float | None:
    """The speedup a headline best or a "verified" figure may show: `verified_speedup` of a full evaluation
    measured here; None for a quick or an imported one."""
    return verified_speedup(verdict, baseline) if standing(verdict, full_ids, imported=imported) == VERIFIED else None


def headline_series(
    verdicts: list[dict[str, Any]], baseline: str, full_ids: list[str], *, imported: bool = False
) -> list[Any]:
    """The best headline speedup after each verdict, in order (None until one is verified): `best_series` over
    verified figures only, so a best-so-far line never steps up on a quick or an imported figure."""
    series, best = [], None
    for verdict in verdicts:
        best = best_so_far(best, headline_speedup(verdict, baseline, full_ids, imported=imported))
        series.append(best)
    return series


def build_arch(verdict: dict[str, Any]) -> str:
    """The GPU architecture the verdict's build was compiled for (e.g. sm_90a); empty when it does not say (a
    CPU build, or a verdict from before the harness recorded it)."""
    arch = (verdict.get("build") or {}).get("arch")
    return arch if isinstance(arch, str) else ""


def format_speedup(value: float | None, *, digits: str = ".3f", times: str = "x", missing: str = "n/a") -> str:
    """A speedup as text: `1.234x`, or `missing` when there is none. The dashboard writes `.3f` and `×`, with
    `—` for none (its `speedup` filter); the harness's tables and summaries `.3f` and `x`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return missing
    if math.isfinite(value) and abs(value) >= 1e6:  # (a forged 1e308 wrote 309 digits in fixed point)
        return f"{value:.3e}{times}"
    return f"{format(value, digits)}{times}"


# ---- per-scenario figures (the evidence view: runs/kernel_pages/evidence.py, runs/kernel_pages/selectors_evidence.py) ----

# The harness's reason for a scenario it never ran (no GPU on the host, the build failed first): such a scenario
# is not wrong, only not measured (gpu_harness/evaluate.py writes it).
NOT_RUN_PREFIX = "not run"


def scenario_not_run(scenario: dict[str, Any]) -> bool:
    """A scenario the harness never ran: not correct, and its reason says "not run"."""
    return not scenario.get("correct") and str(scenario.get("reason") or "").startswith(NOT_RUN_PREFIX)


def scenario_outcome(scenario: dict[str, Any]) -> str:
    """ "correct", "not_run" or "wrong": what one scenario of a verdict says, in one word."""
    if scenario.get("correct"):
        return "correct"
    return "not_run" if scenario_not_run(scenario) else "wrong"


def scenario_speedup(scenario: dict[str, Any], baseline: str) -> float | None:
    """One scenario's speedup over `baseline` (its `speedup` map), or None where there is no positive finite one."""
    return measured((scenario.get("speedup") or {}).get(baseline))


def scenario_speedups(verdict: dict[str, Any], baseline: str) -> list[float]:
    """The per-scenario speedups over `baseline` that its geometric mean covers: the correct scenarios with one
    (gpu_harness.verdict.geomean_speedups takes the same set), in the verdict's order."""
    values = (scenario_speedup(s, baseline) for s in verdict.get("scenarios") or [] if s.get("correct"))
    return [v for v in values if v is not None]


def speedup_spread(verdict: dict[str, Any], baseline: str) -> dict[str, Any]:
    """How the speedups over `baseline` are spread, not only their mean: the count, min, median, the geometric
    mean (the stored one, `speedup_over`) and how many scenarios are below 1.0x (slower than the baseline)."""
    values = sorted(scenario_speedups(verdict, baseline))
    n = len(values)
    median = None if not n else values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    return {
        "count": n,
        "min": values[0] if values else None,
        "median": median,
        "geomean": speedup_over(verdict, baseline),
        "below_one": sum(1 for v in values if v < 1.0),
    }


def format_significant(value: object, digits: int = 3, *, suffix: str = "", missing: str = "—") -> str:
    """A number to `digits` significant digits, written plainly where it can be (1230, 0.00220, 1.40: the
    trailing zeros say the precision), with `suffix` after it; `missing` for none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return missing
    rounded = float(format(value, f".{digits}g"))
    if rounded == 0:
        text = "0"
    elif 1e-4 <= abs(rounded) < 1e15:
        text = format(rounded, f".{max(0, digits - 1 - math.floor(math.log10(abs(rounded))))}f")
    else:
        text = format(rounded, f".{digits - 1}e")
    return f"{text}{suffix}"


# ---- the best library: what a user would otherwise call (issue 35) ----
#
# A task marks some of its baselines as libraries (`library = true` in task.toml: QuACK, torch's own paths, cuBLAS).
# On each scenario the best library is the fastest of those that ran it: its median is the least of their medians,
# and the speedup over it the least of the speedups over them. The harness writes it into each scenario as one more
# baseline named BEST_LIBRARY (its median, interval and speedup, and in `details` which library it was), so every
# reader (the geometric mean, a goal, the evidence view, the results table) takes it like any other baseline.
# The interval: each library's median lies in its interval, so their least lies between the least of the lows and
# the least of the highs; a library timed without an interval leaves the best library without one.
BEST_LIBRARY = "best_library"


def best_library(scenario: dict[str, Any], libraries: list[str]) -> dict[str, Any] | None:
    """The fastest of `libraries` on one scenario (its `baseline_ms`): {"name", "ms", "interval"} ([low, high] ms,
    or None), or None where none of them ran it (not installed, or each refused the shape)."""
    medians = given if isinstance(given := scenario.get("baseline_ms"), dict) else {}
    timed = {name: ms for name in libraries if (ms := measured(medians.get(name))) is not None}
    if not timed:
        return None
    name = min(timed, key=timed.__getitem__)
    intervals = [_median_interval(ms, _by_baseline(scenario, "baseline_ci_ms", n)) for n, ms in timed.items()]
    interval = None
    if all(i is not None for i in intervals):
        pairs = cast("list[tuple[float, float]]", intervals)  # (none is None)
        interval = [min(i[0] for i in pairs), min(i[1] for i in pairs)]
    return {"name": name, "ms": timed[name], "interval": interval}


def _libraries_asked(verdict: dict[str, Any]) -> list[str]:
    """The libraries a verdict asked for (`libraries`); a malformed list (verdicts come from workers too) asked
    for none."""
    given = verdict.get("libraries")
    return [name for name in given if isinstance(name, str)] if isinstance(given, list) else []


def _libraries_named(verdict: dict[str, Any], task_libraries: list[str]) -> list[str]:
    """The libraries a best_library figure of this verdict is to be the best of: the task's, then any other the
    verdict asked for (a task row that does not list its libraries still names those)."""
    return list(task_libraries) + [name for name in _libraries_asked(verdict) if name not in task_libraries]


def na_detail_key(baseline: str) -> str:
    """The key of a scenario's `details` under which the harness writes why its child could not run `baseline`
    there (a shape the library refuses, a library that does not import in the child)."""
    return f"{baseline}_na"


def host_wait_detail_key(baseline: str) -> str:
    """The key of a scenario's `details` under which the harness writes that most of `baseline`'s timed calls
    there outlasted the GPU's pre-call spin on the host: its time may hold the GPU waiting on the host (a library's
    long Python path, a synchronizing call), which the spin is there to keep out (docs/harness.md, "How one
    evaluation runs", step 4)."""
    return f"{baseline}_host_wait"


def scenario_host_wait(scenario: dict[str, Any], baseline: str) -> str | None:
    """The harness's note that `baseline`'s time on `scenario` may hold a host wait (`host_wait_detail_key`; for
    `best_library`, the note of the library it was there); None where there is none or it is malformed."""
    details = scenario.get("details")
    library = details.get(BEST_LIBRARY) if baseline == BEST_LIBRARY and isinstance(details, dict) else baseline
    return _detail_note(scenario, host_wait_detail_key(library)) if isinstance(library, str) else None


def host_wait_count(verdict: dict[str, Any], baseline: str) -> int:
    """How many of the verdict's scenarios carry a host-wait note for `baseline`."""
    scenarios = verdict.get("scenarios")
    listed = scenarios if isinstance(scenarios, list) else []
    return sum(1 for s in listed if isinstance(s, dict) and scenario_host_wait(s, baseline))


def host_wait_words(verdict: dict[str, Any], baseline: str) -> str:
    """ "its time may hold a host wait on N" where `baseline`'s timed calls outlasted the GPU's pre-call spin on N
    scenarios of the verdict: there the figure may be partly the library's host path. "" where on none. The
    summary line and the pages write it beside the figure."""
    count = host_wait_count(verdict, baseline)
    return f"its time may hold a host wait on {count}" if count else ""


def with_notes(text: str, *notes: str) -> str:
    """A figure's text with the notes that qualify it in brackets ("1.05x (best of cudnn only; its time may hold
    a host wait on 2)"), the empty ones left out: the summary line and the pages write a figure so."""
    said = [note for note in notes if note]
    return f"{text} ({'; '.join(said)})" if said else text


def scenario_na_note(scenario: dict[str, Any], baseline: str) -> str | None:
    """The child's note on why `baseline` did not run `scenario` (`na_detail_key`); None where there is none or it
    is malformed (verdicts come from workers and imports too)."""
    return _detail_note(scenario, na_detail_key(baseline))


def _detail_note(scenario: dict[str, Any], key: str) -> str | None:
    """The non-empty text under `key` of the scenario's `details`; None where there is none or it is malformed."""
    details = scenario.get("details")
    note = details.get(key) if isinstance(details, dict) else None
    return note if isinstance(note, str) and note else None


def whole_run_notes(verdict: dict[str, Any]) -> dict[str, Any]:
    """The verdict's `baseline_notes` (baseline -> why it could not run at all where the evaluation ran); {} where
    malformed. A note itself may still be malformed: each reader checks what it takes."""
    notes = verdict.get("baseline_notes")
    return notes if isinstance(notes, dict) else {}


def _timed_nowhere(verdict: dict[str, Any], name: str) -> bool:
    """Whether the verdict timed baselines on some scenario (`baseline_ms`) but `name` on none: a library that
    imported and then failed on every scenario (in a contained child, say) is n/a scenario by scenario, with no
    whole-run note, and its absence would otherwise go unsaid. A verdict without timings says nothing either way."""
    scenarios = verdict.get("scenarios")
    listed = scenarios if isinstance(scenarios, list) else []  # verdicts come from workers and imports too
    rows = [s["baseline_ms"] for s in listed if isinstance(s, dict) and isinstance(s.get("baseline_ms"), dict)]
    timed_rows = [row for row in rows if row]
    return bool(timed_rows) and not any(measured(row.get(name)) for row in timed_rows)


def libraries_not_timed(verdict: dict[str, Any], task_libraries: list[str]) -> list[str]:
    """The libraries that a verdict's best_library is not the best of (`_libraries_named`): the task's that were
    not asked for (a screen timed against eager alone), any asked for that were n/a for the whole evaluation
    (not installed where it ran: `baseline_notes`; malformed notes are none), and any that no scenario timed. A
    library that refused some shapes was timed; its refusals are per scenario and said there."""
    asked = _libraries_asked(verdict)
    run_notes = whole_run_notes(verdict)
    named = _libraries_named(verdict, task_libraries)
    return [name for name in named if name not in asked or name in run_notes or _timed_nowhere(verdict, name)]


def libraries_unavailable(verdict: dict[str, Any], baseline: str) -> dict[str, str]:
    """Of the libraries a best_library figure of this verdict asked for, those that could not run at all where it
    ran (a whole-run `baseline_notes` entry: not installed, not importable), with that note; {} for any other
    baseline. Unlike a library not asked for, no later evaluation on the same host can time these."""
    if baseline != BEST_LIBRARY:
        return {}
    run_notes = whole_run_notes(verdict)
    return {
        name: note if isinstance(note := run_notes[name], str) else "n/a"
        for name in _libraries_asked(verdict)
        if name in run_notes
    }


def missing_libraries(verdict: dict[str, Any], baseline: str, task_libraries: list[str]) -> list[str]:
    """What a figure over `baseline` misses of what it names: `libraries_not_timed` for best_library, nothing for
    any other baseline (a baseline names only itself)."""
    return libraries_not_timed(verdict, task_libraries) if baseline == BEST_LIBRARY else []


def library_scope(verdict: dict[str, Any], baseline: str, task_libraries: list[str]) -> str:
    """ "" unless `baseline` is best_library and the verdict did not time every library of its task; then what
    its best library is the best of, so that a figure over eager alone never reads as one over the strongest
    library: "best of eager only; not timed: compile, quack"."""
    missing = missing_libraries(verdict, baseline, task_libraries)
    if not missing:
        return ""
    timed = [name for name in _libraries_named(verdict, task_libraries) if name not in missing]
    return f"best of {', '.join(timed) if timed else 'no library'} only; not timed: {', '.join(missing)}"


def libraries_complete(verdict: dict[str, Any], baseline: str, task_libraries: list[str]) -> bool:
    """Whether a figure over `baseline` is over everything it names (always, but for a best_library that missed
    one of its task's libraries): a figure over every library ranks before one over some (`claim_rank`)."""
    return not missing_libraries(verdict, baseline, task_libraries)


# ---- uncertainty: an interval on each speedup, "no difference", a busy host (docs/harness.md, "Noise") ----
#
# The harness records, per scenario, an interval on each median it timed (`time_ci_ms`, and `baseline_ci_ms`
# beside `baseline_ms`): the order statistics that hold the true median with at least 95% confidence, whatever the
# distribution of the calls (gpu_harness.verdict.median_interval). A speedup is a baseline's median over the
# candidate's, so it lies between the baseline's low over the candidate's high and the baseline's high over the
# candidate's low whenever both medians lie in their intervals. The geometric mean only grows with each scenario's
# speedup, so it lies between the geometric mean of the lows and that of the highs whenever every scenario's does.
# Verdicts from before the harness measured these, and malformed ones (they come from workers and imports too),
# have no interval: the point figure alone is shown, as it was.

# A host is busy when the runnable threads of others (the 1-minute load average, less the one the timed child
# adds) reach half its usable cores: the timed calls then share cores, caches and memory bandwidth with them.
BUSY_LOAD_PER_CORE = 0.5
# Or when, in the median timed scenario, the interquartile range of the calls is over a quarter of their median.
NOISY_SPREAD = 0.25
_ROUNDING = 1e-9  # stored figures are rounded through JSON: a point this close to a bound is inside


def _pair(value: object) -> tuple[float, float] | None:
    """[low, high]: two positive finite numbers, low <= high; anything else is no interval."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    low, high = measured(value[0]), measured(value[1])
    return (low, high) if low is not None and high is not None and low <= high else None


def _inside(value: float, low: float, high: float) -> bool:
    return low * (1 - _ROUNDING) <= value <= high * (1 + _ROUNDING)


def _median_interval(median: object, interval: object) -> tuple[float, float] | None:
    median, interval = measured(median), _pair(interval)
    return interval if median is not None and interval is not None and _inside(median, *interval) else None


def _by_baseline(scenario: dict[str, Any], name: str, baseline: str) -> object:
    mapping = scenario.get(name)
    return mapping.get(baseline) if isinstance(mapping, dict) else None


def scenario_interval(scenario: dict[str, Any], baseline: str) -> tuple[float, float] | None:
    """The interval on one scenario's speedup over `baseline` (the baseline's interval over the candidate's),
    or None where the verdict has none or holds one that does not fit its own medians and speedup."""
    speedup = scenario_speedup(scenario, baseline)
    candidate = _median_interval(scenario.get("time_ms"), scenario.get("time_ci_ms"))
    base = _median_interval(
        _by_baseline(scenario, "baseline_ms", baseline), _by_baseline(scenario, "baseline_ci_ms", baseline)
    )
    if speedup is None or candidate is None or base is None:
        return None
    low, high = base[0] / candidate[1], base[1] / candidate[0]
    return (low, high) if _inside(speedup, low, high) else None


def geomean_interval(verdict: dict[str, Any], baseline: str) -> tuple[float, float] | None:
    """The interval on the geometric-mean speedup over `baseline`: the geometric means of the scenarios' lows and
    highs, over the scenarios the mean covers (`scenario_speedups`'s); None unless every one of them has one."""
    covered = [
        s for s in verdict.get("scenarios") or [] if s.get("correct") and scenario_speedup(s, baseline) is not None
    ]
    speedup = speedup_over(verdict, baseline)
    interval = geomean_of_intervals([scenario_interval(s, baseline) for s in covered])
    if speedup is None or interval is None:
        return None
    return interval if _inside(speedup, *interval) else None


def geomean_of_intervals(intervals: list[tuple[float, float] | None]) -> tuple[float, float] | None:
    """The interval on a geometric mean of ratios from the intervals on each: the geometric means of their lows
    and of their highs (the mean only grows with each ratio); None unless every one has an interval."""
    if not intervals or any(i is None for i in intervals):
        return None
    pairs = cast("list[tuple[float, float]]", intervals)  # (none is None)
    low = math.exp(sum(math.log(i[0]) for i in pairs) / len(pairs))
    high = math.exp(sum(math.log(i[1]) for i in pairs) / len(pairs))
    return low, high


def noise_unknown(verdict: dict[str, Any], baseline: str) -> bool:
    """The geometric mean over `baseline` has no interval although some scenario it covers has interval fields:
    one of them lacks its interval or holds a malformed one (the harness writes one on every timed scenario). Its
    noise is unknown, not unmeasured, so it is never held to its point: only a verdict with no interval fields at
    all (from before the harness measured them) is (`clears_target`)."""
    if geomean_interval(verdict, baseline) is not None:
        return False
    covered = [
        s for s in verdict.get("scenarios") or [] if s.get("correct") and scenario_speedup(s, baseline) is not None
    ]
    return any(s.get(name) not in (None, {}, []) for s in covered for name in ("time_ci_ms", "baseline_ci_ms"))


def no_difference(interval: tuple[float, float] | None) -> bool:
    """True when the interval holds 1.0: the candidate cannot be told from the baseline; shown as "no
    difference", never as a speedup or a slowdown."""
    return interval is not None and interval[0] <= 1.0 <= interval[1]


def faster_beyond_noise(ratio: float | None, interval: tuple[float, float] | None) -> bool:
    """Whether a ratio (a speed-up, or how many times faster one timing ran than another) counts as faster: above
    1.0 and, where it has an interval, not inside the noise (`no_difference`); one without an interval is held to
    its point. A count of "faster" scenarios counts these only, as the cells beside it say "no difference"."""
    return ratio is not None and ratio > 1.0 and not no_difference(interval)


def clears_target(verdict: dict[str, Any], baseline: str, target: float) -> bool:
    """At least `target` over `baseline` beyond the noise: the low end of the geometric mean's interval reaches
    the target. A verdict without any interval (from before the harness measured one) is held to its point; one
    whose noise is unknown (`noise_unknown`: an interval missing or malformed among others) clears nothing."""
    interval = geomean_interval(verdict, baseline)
    if interval is None:
        speedup = speedup_over(verdict, baseline)
        return speedup is not None and speedup >= target and not noise_unknown(verdict, baseline)
    return interval[0] >= target


def host_load(verdict: dict[str, Any]) -> dict[str, Any]:
    """The verdict's `host_load` ({"load_1m", "cores"}) when well formed (a load that is a non-negative finite
    number, a positive whole number of cores); else {}."""
    value = verdict.get("host_load")
    if not isinstance(value, dict):
        return {}
    load, cores = value.get("load_1m"), value.get("cores")
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not math.isfinite(load) or load < 0:
        return {}
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        return {}
    return {"load_1m": float(load), "cores": cores}


def _median_spread_share(verdict: dict[str, Any]) -> float | None:
    shares = sorted(
        spread / time
        for s in verdict.get("scenarios") or []
        if s.get("correct")
        and (time := measured(s.get("time_ms"))) is not None
        and (spread := measured(s.get("spread_ms"))) is not None
    )
    return shares[len(shares) // 2] if shares else None


def host_busy(verdict: dict[str, Any]) -> str | None:
    """Why the verdict's timings were taken on a busy host (its load while timing, or the calls' own spread), or
    None: not busy, or not recorded (a verdict from before the harness measured it)."""
    load = host_load(verdict)
    if load and (load["load_1m"] - 1) / load["cores"] >= BUSY_LOAD_PER_CORE:
        return f"load {load['load_1m']:.2f} on {load['cores']} cores while timing"
    share = _median_spread_share(verdict)
    if share is not None and share > NOISY_SPREAD:
        return f"timed calls spread {share:.0%} of their median"
    return None


def scenario_noise_fields(scenario: dict[str, Any]) -> dict[str, Any]:
    """What a store keeps of a scenario's noise figures (time_ci_ms, spread_ms, baseline_ms, baseline_ci_ms):
    only the well-formed ones; a malformed field from a worker or an import is dropped, not stored."""
    kept: dict[str, Any] = {}
    if (interval := _median_interval(scenario.get("time_ms"), scenario.get("time_ci_ms"))) is not None:
        kept["time_ci_ms"] = list(interval)
    if (spread := measured(scenario.get("spread_ms"))) is not None:
        kept["spread_ms"] = spread
    medians = given if isinstance(given := scenario.get("baseline_ms"), dict) else {}
    kept_medians, kept_intervals = {}, {}
    for name, median in medians.items():
        if (median := measured(median)) is None:
            continue
        kept_medians[name] = median
        interval = _median_interval(median, _by_baseline(scenario, "baseline_ci_ms", name))
        if interval is not None:
            kept_intervals[name] = list(interval)
    if kept_medians:
        kept["baseline_ms"] = kept_medians
    if kept_intervals:
        kept["baseline_ci_ms"] = kept_intervals
    return kept


def time_ratio_interval(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float] | None:
    """The interval on how many times faster scenario `a` ran than `b` (b's time over a's), two evaluations'
    timings of one scenario (the compare page); None where either has no interval."""
    ia = _median_interval(a.get("time_ms"), a.get("time_ci_ms"))
    ib = _median_interval(b.get("time_ms"), b.get("time_ci_ms"))
    return None if ia is None or ib is None else (ib[0] / ia[1], ib[1] / ia[0])


def format_interval(interval: tuple[float, float] | None, *, times: str = "×", missing: str = "") -> str:
    """An interval as text, 3 significant digits: `0.820–1.31×`; `missing` for none."""
    if interval is None:
        return missing
    return f"{format_significant(interval[0])}–{format_significant(interval[1])}{times}"


def speedup_text(
    value: float | None, interval: tuple[float, float] | None, *, times: str = "×", missing: str = "—"
) -> str:
    """A speedup with its interval: `1.520× (1.41–1.63×)`; `no difference (0.820–1.31×)` when the interval holds
    1.0; the point alone (`format_speedup`) where there is no interval."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return missing
    if interval is None:
        return format_speedup(value, times=times, missing=missing)
    if no_difference(interval):
        return f"no difference ({format_interval(interval, times=times)})"
    return f"{format_speedup(value, times=times)} ({format_interval(interval, times=times)})"


def verdict_speedup_text(verdict: dict[str, Any], baseline: str, *, times: str = "×", missing: str = "—") -> str:
    """The geometric-mean speedup over `baseline` as every page and report writes it (`speedup_text`), with
    "(noise unknown)" after a point whose interval is missing among others (`noise_unknown`)."""
    text = speedup_text(
        speedup_over(verdict, baseline), geomean_interval(verdict, baseline), times=times, missing=missing
    )
    return noise_unknown_text(text, text != missing and noise_unknown(verdict, baseline))
