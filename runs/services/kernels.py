"""Writes to kernels and evaluations (a harness verdict, stored once as the harness wrote it)."""

import hashlib
import math
import re
import unicodedata
from typing import cast

from django.db import transaction

from agentloop.protocol import KERNEL_SOURCE_MAX_BYTES, kernel_source_refusal
from gpu_harness import figures
from runs.events import publish_after_commit
from runs.models import Evaluation, EvaluationStatus, Kernel, Run, Step, Task
from runs.services.errors import ServiceError
from runs.services.steps import as_datetime


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# What a kernel's file name never holds: control characters (newline included), format characters (the bidi
# overrides and isolates, zero-width ones), surrogates, private-use and unassigned code points, line and
# paragraph separators. A name comes from a worker's or a trace's kernel_path, and the pages and the download's
# Content-Disposition show it.
_NOT_IN_A_FILENAME = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def safe_filename(name: str, language: str = "cuda") -> str:
    """A kernel's file name as it is kept: the last part of a path (no / or \\), without the characters above or
    leading and trailing spaces and dots, within Kernel.filename's length (its extension kept); `kernel.cu` (or
    `.cpp`) when nothing is left of a name that was given, "" when none was."""
    if not name:
        return ""
    base = re.split(r"[/\\]", name)[-1]
    kept = "".join(c for c in base if unicodedata.category(c) not in _NOT_IN_A_FILENAME).strip(" .")
    if not kept:
        return "kernel.cu" if language == "cuda" else "kernel.cpp"
    limit = cast(int, Kernel._meta.get_field("filename").max_length)
    if len(kept) > limit:
        stem, dot, extension = kept.rpartition(".")
        tail = dot + extension if stem and len(extension) <= 16 else ""
        kept = kept[: limit - len(tail)] + tail
    return kept


def kernel_record(
    *,
    source: str,
    task: Task | None = None,
    language: str = "cuda",
    target_arch: str = "",
    filename: str = "",
    parent: Kernel | None = None,
    run: Run | None = None,
    step: Step | None = None,
) -> Kernel:
    """Store a kernel's source. Within one run the same source is one kernel, however often it is evaluated.

    A source over the protocol's limit (KERNEL_SOURCE_MAX_BYTES) is refused, whoever sends it: a worker's
    evaluation is then refused for good and kept on its run, a trace import refused with its line. The file name
    is kept as safe_filename makes it."""
    _within_source_limit(source)
    try:
        digest = sha256_text(source)
    except UnicodeEncodeError as bad:  # a lone surrogate ("\ud800" in JSON): no text UTF-8 can carry
        raise ServiceError(
            f"the kernel source holds {ascii(bad.object[bad.start])}, a lone surrogate, at character {bad.start:,}: "
            "not text that UTF-8 can carry"
        ) from None
    if run is not None:
        existing = Kernel.objects.filter(run=run, sha256=digest).first()
        if existing:
            return existing
    return Kernel.objects.create(
        source=source,
        sha256=digest,
        task=task,
        language=language,
        target_arch=target_arch,
        filename=safe_filename(filename, language),
        parent=parent,
        run=run,
        step=step,
    )


def _within_source_limit(source: str) -> None:
    # Under a quarter of the limit in characters, the UTF-8 bytes are within it: no encoding needed.
    if len(source) > KERNEL_SOURCE_MAX_BYTES // 4:
        refusal = kernel_source_refusal(len(source.encode("utf-8", "surrogatepass")))
        if refusal:
            raise ServiceError(refusal)


def kernel_release(*, kernel: Kernel, name: str, note: str = "") -> Kernel:
    """Release `kernel` under `name` (the release it replaces is released no more), with its maintainers' note."""
    if not name:
        raise ServiceError("a released kernel needs a name")
    with transaction.atomic():
        Kernel.objects.filter(released=True, release_name=name).exclude(pk=kernel.pk).update(released=False)
        kernel.released, kernel.release_name, kernel.release_note = True, name, note
        kernel.save(update_fields=["released", "release_name", "release_note"])
    return kernel


def evaluation_record(*, kernel: Kernel, result: dict, run: Run | None = None, step: Step | None = None) -> Evaluation:
    """Store a harness verdict (`EvalResult.to_dict()`) as one row, its `verdict` the dict as the harness wrote it
    (`stored_verdict`: under its own names, malformed fields dropped, the source left to its kernel).

    When the evaluation is a verified one (correct on every scenario of its task's full set, measured here: not
    a quick one, not an imported trace's claim; `_counts_toward_best`) and beats the run's best over the run's
    goal baseline, the run's best speedups move with it.
    """
    verdict = stored_verdict(result)
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            kernel=kernel,
            run=run,
            step=step,
            status=verdict["status"],
            verdict=verdict,
            scenarios_correct=scenarios_correct(verdict),
        )
        if run is not None and _counts_toward_best(run, verdict):
            _raise_run_best(run, verdict)
    return evaluation


def scenarios_correct(verdict: dict) -> dict[str, bool]:
    """The verdict's index column (Evaluation.scenarios_correct): each scenario's id -> whether it was correct."""
    return {s["id"]: bool(s.get("correct")) for s in verdict.get("scenarios") or []}


# ---- what is stored of a verdict: the harness's fields under their own names, each kept only when well formed ----
#
# A worker's verdict is not trusted blindly: each field the server stores is checked here, and a malformed one is
# dropped (never stored), as if the harness had not written it; a null is kept where the harness writes one for
# "not known" (a reason, an error, a time). What makes the whole verdict unusable (an unknown status, a time that is
# no time, a scenario without its id or twice) refuses it. A field unknown to the harness's dataclasses
# (gpu_harness/result.py: the server runs the same harness code) is not stored. `kernel_source` is not stored: the
# kernel's row holds it, within the protocol's limit (kernel_record), and `kernel_sha256` says which source it is.
# The step's payload keeps the event as it was sent (the event log); this is the verdict every figure reads.
NOT_STORED = frozenset({"kernel_source"})
DROP = object()  # what a check gives for a malformed value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _optional(check):
    """`check`, with null kept: the harness's own "not known"."""
    return lambda value: None if value is None else check(value)


def _positive(value):
    return value if _number(value) and value > 0 else DROP


def _non_negative(value):
    return value if _number(value) and value >= 0 else DROP


def _text(value):
    return value if isinstance(value, str) else DROP


def _whole(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else DROP


def _mapping(value):
    return value if isinstance(value, dict) else DROP


def _names(value):
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else DROP


def _speedups(value):
    # baseline -> speedup, null where the baseline was not measured (the harness's own n/a)
    if not isinstance(value, dict):
        return DROP
    return {str(name): v for name, v in value.items() if v is None or _positive(v) is not DROP}


def _geomeans(value):
    # baseline -> {"speedup": a positive number or null (the harness's n/a), "count": a whole number}: an entry of
    # another shape is dropped (pages reading `{"naive": 5}` failed whole), as is a geomean that is no mapping,
    # and a count that is no whole number (no figure reads it from here)
    if not isinstance(value, dict):
        return DROP
    kept = {}
    for name, entry in value.items():
        speedup = _optional(_positive)(entry.get("speedup")) if isinstance(entry, dict) else DROP
        if speedup is DROP:
            continue
        count = _whole(entry.get("count"))
        kept[str(name)] = {"speedup": speedup} | ({} if count is DROP or count < 0 else {"count": count})
    return kept


def _instant(value):
    # A time as the parser reads an event's `ts` (one without an offset is UTC; the harness writes UTC with its
    # offset, which this keeps as it is); "" the harness's "not recorded"; a time that is none refuses the verdict.
    if not value:
        return "" if value == "" else DROP
    return as_datetime(value).isoformat()


# The verdict's fields (EvalResult) and each scenario's (ScenarioOutcome), each with what keeps it (a value, or
# DROP). status, scenarios, peaks, host_load and the noise fields have their own rules below.
VERDICT_FIELDS = {
    "task": _text,
    "kernel_sha256": _text,
    "reason": _optional(_text),
    "host": _text,
    "device_name": _text,
    "geomean": _geomeans,
    "started_at": _instant,
    "finished_at": _instant,
    "wall_s": _non_negative,
    "kernel_path": _text,
    "seed": _optional(_whole),
    "baselines": _names,
    "baseline_notes": _mapping,
    "libraries": _names,
    "build": _mapping,
    "geomean_tflops": _optional(_positive),
    "phases": _mapping,
    "reference": _text,
    "child_sandbox": _text,
    # not the harness's: the event's `scenario_set` (quick, full, or the ids), which the event store adds
    "scenario_set": _text,
}
SCENARIO_FIELDS = {
    "params": _mapping,
    "error": _optional(_non_negative),
    "reason": _optional(_text),
    "time_ms": _optional(_positive),
    "tflops": _optional(_non_negative),
    "bytes": _optional(_positive),
    "speedup": _speedups,
    "repeats": _optional(_whole),
    "tolerance": _optional(_non_negative),
    "host_ms": _optional(_positive),
    "details": _mapping,
}
# The noise fields (figures.scenario_noise_fields keeps the well-formed ones) and how the harness writes "none".
NOISE_NONE: dict[str, object] = {"spread_ms": None, "time_ci_ms": None, "baseline_ms": {}, "baseline_ci_ms": {}}


def _kept(fields: dict, given: dict) -> dict:
    return {name: value for name, keep in fields.items() if name in given and (value := keep(given[name])) is not DROP}


def stored_verdict(result: dict) -> dict:
    """What is stored of a harness verdict: its fields under the harness's names, the malformed ones dropped.
    ServiceError for a verdict that cannot be stored at all."""
    status = result.get("status")
    if status not in EvaluationStatus.values:
        raise ServiceError(f"unknown evaluation status {status!r:.60}")
    verdict: dict = {"status": status, **_kept(VERDICT_FIELDS, result)}
    verdict["peaks"] = _peaks(result.get("peaks"))
    verdict["host_load"] = figures.host_load(result)
    scenarios = result.get("scenarios") or []
    if not isinstance(scenarios, list):
        raise ServiceError("a verdict's scenarios are a list")
    verdict["scenarios"] = [_stored_scenario(s) for s in scenarios]
    seen: set[str] = set()
    for s in verdict["scenarios"]:
        if s["id"] in seen:
            raise ServiceError(f"scenario {s['id']!r:.60} is in the verdict twice")
        seen.add(s["id"])
    return verdict


def _stored_scenario(s: dict) -> dict:
    if not isinstance(s, dict) or "id" not in s:
        raise ServiceError("each of a verdict's scenarios must be an object with its id (result.scenarios)")
    scenario = {"id": str(s["id"]), "correct": bool(s.get("correct"))}
    scenario |= {"params": {}, "speedup": {}} | _kept(SCENARIO_FIELDS, s)
    # the noise fields (spread_ms, baseline_ms, time_ci_ms, baseline_ci_ms) as figures.scenario_noise_fields keeps
    # them, and each the harness wrote as "none" as it wrote it
    noise = figures.scenario_noise_fields(s)
    scenario |= {name: none for name, none in NOISE_NONE.items() if name in s and s[name] == none and name not in noise}
    return scenario | noise


def _peaks(value) -> dict:
    # Only the two figures the pages read, and only as positive numbers: a worker's verdict is not trusted blindly.
    value = value if isinstance(value, dict) else {}
    peaks = {}
    for name in ("peak_tflops", "peak_gbps"):
        figure = value.get(name)
        if isinstance(figure, (int, float)) and not isinstance(figure, bool) and math.isfinite(figure) and figure > 0:
            peaks[name] = float(figure)
    return peaks


def _counts_toward_best(run: Run, verdict: dict) -> bool:
    """A run's best is a headline figure: only a verified verdict moves it (gpu_harness.figures.standing), so a
    quick-set outlier or a figure copied from an imported trace never becomes the run's best."""
    full_ids = list(run.task.scenario_ids or [])
    verified = figures.standing(verdict, full_ids, imported=bool(run.imported_from)) == figures.VERIFIED
    return verified and figures.all_correct(verdict)


def _set_changed(run: Run, values: dict) -> list[str]:
    """Set each of `values` (field name -> value) on `run` where it differs; the names of those set."""
    changed = [name for name, value in values.items() if getattr(run, name) != value]
    for name in changed:
        setattr(run, name, values[name])
    return changed


def _raise_run_best(run: Run, verdict: dict) -> None:
    run = Run.objects.select_for_update().get(pk=run.pk)
    best = figures.best_per_baseline(run.best_speedups, verdict)
    intervals = figures.best_intervals_after(run.best_speedups, run.best_intervals, verdict)
    # kept beside the intervals: a best without one is either from before intervals or of unknown noise
    noise_unknown = figures.best_noise_unknown_after(run.best_speedups, run.best_noise_unknown, verdict)
    best_over_goal = figures.best_so_far(run.best_speedup, figures.verified_speedup(verdict, run.goal[0]))
    sets_library_best = best.get(figures.BEST_LIBRARY) != (run.best_speedups or {}).get(figures.BEST_LIBRARY)
    fields = _set_changed(
        run,
        {
            "best_speedups": best,
            "best_intervals": intervals,
            "best_noise_unknown": noise_unknown,
            "best_speedup": best_over_goal,
        },
    )
    if sets_library_best:  # the best over best_library is this verdict's: so is what it is the best of
        scope = figures.library_scope(verdict, figures.BEST_LIBRARY, run.task.libraries)
        if scope != run.best_library_scope:
            run.best_library_scope = scope
            fields.append("best_library_scope")
    if fields:
        run.save(update_fields=fields + ["updated_at"])
        publish_after_commit(run.pk, {"type": "run.changed", "run_id": run.pk, "status": run.status}, to_all_runs=True)


def evaluation_meets_goal(evaluation: Evaluation, run: Run) -> bool:
    """Whether this stored evaluation confirms `run`'s goal, by the server's own reading of it (docs/protocol.md
    1.2 `goal_met`): a correct verdict, every scenario correct, every scenario of the task's full set among them,
    and the geometric-mean speedup over the run's goal baseline at least the run's target beyond the noise (the
    low end of its interval, `gpu_harness.figures.clears_target`, as the agent loop's own check), and over
    best_library every library of the task timed. The worker's own `goal_met` is not taken on trust."""
    baseline, target = run.goal
    return figures.goal_met(evaluation.verdict, baseline, target, list(run.task.scenario_ids or []), run.task.libraries)


def run_goal_evaluation(run: Run) -> Evaluation | None:
    """The run's stored evaluation that confirms its goal, or None."""
    for evaluation in Evaluation.objects.filter(run=run, status=EvaluationStatus.CORRECT).order_by("-pk"):
        if evaluation_meets_goal(evaluation, run):
            return evaluation
    return None
