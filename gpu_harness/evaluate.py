"""evaluate(): the parent process, which is the judge.

Order of work: read and hash the source; start the child (or take one booted ahead), whose start overlaps
the rest; build the source (cached) and check its dependencies; pick a fresh seed and give the child its job;
take a private copy of each output the child puts into an output slot (exchange.py), free the
slot, and judge the copy against a reference computed here from the same seed; then ask the child to time each
correct scenario (interleaved with the baselines), judge the outputs of randomly chosen timed calls too, and
time a batch of calls with this process's own clock.

This module decides whether a child runs at all (reading the source, the build, the runtime check) and turns
the outcomes into the verdict; the work with the child, phase by phase, is gpu_harness/evaluation.py's.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import hashlib
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import childbox, figures, verdict
from .build import build, read_kernel_source
from .evaluation import TIMING, Evaluation, Plan
from .report import summary_line
from .result import EvalResult, ScenarioOutcome
from .runner import ChildSession
from .tasks import Scenario, Task, TaskError, get_task

__all__ = ["TIMING", "close_spares", "evaluate"]

# (task, scenario id, device, versions, baseline) -> median ms, and the same key + "interval" -> the interval on
# that median ([low, high] ms, verdict.median_interval); reused within one process run
_BASELINE_CACHE: dict[tuple[Any, ...], float | list[float]] = {}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _new_seed() -> int:
    return int.from_bytes(os.urandom(8), "little") & ((1 << 62) - 1)


@dataclass(frozen=True)
class Request:
    """What the caller asked of one evaluation (evaluate()'s arguments, the task and scenarios resolved)."""

    kernel: Path
    scenarios: list[Scenario]
    baselines: list[str] | None  # None: the task's defaults
    seed: int | None  # None: a fresh one
    say: Callable[[str], None]
    deadline: float | None  # time.monotonic() by which it must be over
    arch: str | None
    baseline_cache: bool  # reuse baseline medians timed by earlier evaluations of this process
    timing: bool
    spare_child: bool


def evaluate(
    task: str,
    kernel: str | os.PathLike[str],
    scenarios: str | list[str] = "quick",
    baselines: list[str] | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
    timeout_s: float | None = None,
    arch: str | None = None,
    baseline_cache: bool = True,
    timing: bool = True,
    spare_child: bool = False,
) -> EvalResult:
    """Judge a candidate kernel. Raises ValueError only for a bad task name or scenario list (caller errors);
    everything the kernel does wrong ends up in the returned EvalResult.

    `spare_child`: when done, boot the next evaluation's child process now (a process that evaluates again
    and again, like the harness service, then skips the child's start of ~4 s on a GPU host)."""
    say = progress or (lambda _msg: None)
    t_start = time.monotonic()
    t = get_task(task)
    request = Request(
        kernel=Path(kernel),
        scenarios=t.select(scenarios),
        baselines=baselines,
        seed=seed,
        say=say,
        deadline=None if timeout_s is None else t_start + timeout_s,
        arch=arch,
        baseline_cache=baseline_cache,
        timing=timing,
        spare_child=spare_child,
    )
    res = EvalResult(
        task=t.name,
        kernel_sha256="",
        kernel_source="",
        status="error",
        host=socket.gethostname(),
        started_at=_now(),
        kernel_path=str(kernel),
    )
    try:
        _evaluate_into(res, t, request)
    except TaskError as e:  # the task's reference or baseline broke: an error of the task, never the candidate's
        res.status, res.reason = "error", f"task error: {e}"
    finally:
        res.finished_at = _now()
        res.wall_s = round(time.monotonic() - t_start, 3)
    say(summary_line(res))
    return res


def _evaluate_into(res: EvalResult, t: Task, request: Request) -> None:
    try:
        source = read_kernel_source(request.kernel)
    except (OSError, UnicodeDecodeError) as e:
        res.reason = f"cannot read kernel {request.kernel}: {e}"
        return
    # the candidate's process starts now (or was started ahead): its imports and CUDA start overlap this
    # process's own imports (the runtime check imports torch) and the build
    session = _take_child(t) if t.may_run_here() else None
    t0 = time.monotonic()
    why = t.runtime_unavailable()
    res.phases["runtime_check_s"] = round(time.monotonic() - t0, 2)
    if why and session is not None:
        session.close()
        session = None
    elif not why and session is None:  # the guess was wrong: candidates can run here after all
        session = _take_child(t)
    try:
        _judge_source(res, t, request, source, session, why)
    finally:
        if session is not None:
            if request.spare_child and not session.started:
                _SPARES.setdefault(_spare_key(t), session)  # never given a job: still as good as new
            else:
                session.close()
        if request.spare_child and not why:
            _boot_spare(t)


def _judge_source(
    res: EvalResult, t: Task, request: Request, source: str, session: ChildSession | None, why: str | None
) -> None:
    """Build the source; where candidates can run here, run the child's phases (evaluation.py) on it."""
    res.kernel_source = source
    res.kernel_sha256 = hashlib.sha256(source.encode()).hexdigest()
    names, res.libraries = _baseline_names(t, request.baselines)
    res.baselines = [*names, figures.BEST_LIBRARY] if res.libraries else names
    res.seed = seed = _new_seed() if request.seed is None else int(request.seed)
    res.scenarios = [ScenarioOutcome(s.id, dict(s.params), correct=False, reason="not run") for s in request.scenarios]

    t.parent_prepare()
    request.say(f"building {request.kernel.name} ({t.language})")
    t0 = time.monotonic()
    b = build(request.kernel, t.language, arch=request.arch)
    res.phases["build_s"] = round(time.monotonic() - t0, 2)
    res.build = {"cache_hit": b.cache_hit, "compile_s": round(b.compile_s, 2), "kernels": b.kernels, "arch": b.arch}
    if b.source_sha256 and b.source_sha256 != res.kernel_sha256:  # the build read the file again
        b.ok, b.reason = (
            False,
            f"{request.kernel} changed while it was evaluated: the verdict would not be its source's",
        )
    if not b.ok:
        res.reason = b.reason
        for o in res.scenarios:
            o.reason = "not run: the build failed or was refused"
        if b.log:
            res.build["log"] = b.log[-3000:]
        return
    if why:
        res.status = "compiled"
        res.reason = why
        for o in res.scenarios:
            o.reason = "not run: " + why
        return
    assert session is not None  # (there is none only where candidates cannot run here: `why`)
    res.child_sandbox = session.sandbox

    availability = t.baseline_availability(names)
    res.baseline_notes = {n: note for n, note in availability.items() if note}
    if res.libraries and all(n in res.baseline_notes for n in res.libraries):
        res.baseline_notes[figures.BEST_LIBRARY] = f"none of the libraries ({', '.join(res.libraries)}) runs here"
    runnable = [n for n in names if not availability.get(n)]
    t0 = time.monotonic()
    facts = t.parent_setup()
    res.phases["setup_s"] = round(time.monotonic() - t0, 2)
    res.device_name = facts.get("device", "")
    res.peaks = {k: facts[k] for k in ("peak_tflops", "peak_gbps") if facts.get(k)}
    try:
        libs = t.baseline_libs(runnable)
    except RuntimeError as e:
        res.reason = str(e)
        return
    plan = Plan(
        scenarios=request.scenarios,
        baselines=runnable,
        baseline_libs=libs,
        seed=seed,
        timing=request.timing,
        baseline_cache=_BASELINE_CACHE,
        reuse_baselines=request.baseline_cache,
        deadline=request.deadline,
    )
    evaluation = Evaluation(res, t, session, plan, t.timing_limits(), facts.get("device", ""), request.say)
    assert b.lib_path is not None  # (a build that is ok has its library)
    try:
        evaluation.run(b.lib_path)
    finally:
        res.reference = t.reference_note()
    _finish(res, request.scenarios, res.baselines)


def _baseline_names(t: Task, requested: list[str] | None) -> tuple[list[str], list[str]]:
    """(the baselines to time, the libraries among them). "best_library" asked for by name stands for every
    library of the task; the task's defaults where nothing is asked for."""
    names = list(t.default_baselines if requested is None else requested)
    if figures.BEST_LIBRARY in names:
        names = [n for n in names if n != figures.BEST_LIBRARY]
        names += [n for n in t.libraries if n not in names]
    return names, [n for n in t.libraries if n in names]


# (task, the child's environment) -> a child process booted ahead for this process's next evaluation
_SPARES: dict[tuple[Any, ...], ChildSession] = {}


def _spare_key(t: Task) -> tuple[Any, ...]:
    return t.name, ChildSession.environment_key(t.child_env()), childbox.sandbox_for(t.target)


def _new_child(t: Task) -> ChildSession:
    return ChildSession(t.name, t.child_env(), sandbox=childbox.sandbox_for(t.target))


def _take_child(t: Task) -> ChildSession:
    spare = _SPARES.pop(_spare_key(t), None)
    if spare is not None and spare.alive():
        return spare
    if spare is not None:
        spare.close()
    return _new_child(t)


def _boot_spare(t: Task) -> None:
    key = _spare_key(t)
    if key not in _SPARES:
        _SPARES[key] = _new_child(t)


@atexit.register
def close_spares() -> None:
    """Stop the children booted ahead (they would also stop by themselves once this process is gone)."""
    while _SPARES:
        _SPARES.popitem()[1].close()


def _finish(res: EvalResult, selected: list[Scenario], names: list[str]) -> None:
    res.geomean = verdict.geomean_speedups([o.speedup for o in res.scenarios if o.correct], names)
    res.geomean_tflops = figures.geometric_mean([o.tflops for o in res.scenarios if o.correct and o.tflops])
    if res.status == "correct":
        bad = [o for o in res.scenarios if not o.correct]
        if bad:
            res.status = "incorrect"
            res.reason = f"{len(bad)} of {len(res.scenarios)} scenarios fail; first: {bad[0].id}: {bad[0].reason}"
