"""evaluate(): the parent process, which is the judge.

Order of work: read and hash the source; start the child (or take one booted ahead), whose start overlaps
the rest; build the source (cached) and check its dependencies; pick a fresh seed and give the child its job;
take a private copy of each output the child puts into an output slot (exchange.py), free the
slot, and judge the copy against a reference computed here from the same seed; then ask the child to time each
correct scenario (interleaved with the baselines), judge the outputs of randomly chosen timed calls too, and
time a batch of calls with this process's own clock.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import hashlib
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from . import verdict
from .build import build
from .exchange import SLOTS
from .report import summary_line
from .result import EvalResult, ScenarioOutcome
from .runner import ChildFailed, ChildSession
from .stopwatch import Stopwatch
from .tasks import Scenario, TaskError, derive_seed, get_task

# Timing knobs (per scenario). The candidate gets ~budget_ms of timed calls, between min and max repeats.
# 60 ms / 15 gave the same geometric means as 120 ms / 25 over the full attention grid on an H200 (0.902x vs
# 0.903x cuDNN, 1.471x vs 1.472x FA2) in 15 s less (docs/benchmarks.md).
# Within that, timing stops early once every implementation's median is pinned down to 0.5% (after 5 calls
# at least; verdict.median_settled).
# The host-clock batch is ~10 ms of back-to-back calls (25 ms before: 4.6 s of a 48 s full grid): the parent's
# per-batch latency is subtracted (TimingLimits.batch_latency_ms), and what the check catches (work the events
# do not see) adds a call's worth of time per call, whatever the batch's length.
TIMING = {
    "budget_ms": 60.0,
    "min_reps": 3,
    "max_reps": 15,
    "early_min": 5,
    "ci_rel": 0.005,
    "checks": 2,
    "batch_ms": 10.0,
    "batch_max": 200,
}
HOST_BATCHES = 3  # host-clock batches tried before a disagreement is called suspect
STAGE_TIMEOUT_S = 120.0  # anything that is not a candidate call (start, input generation, ...)
SAVE_MARGIN_S = 15.0  # after a call: copying its outputs into a slot
assert TIMING["checks"] < SLOTS  # the child never waits for a slot in the middle of timing

# (task, scenario id, device, versions, baseline) -> median ms; reused within one process run
_BASELINE_CACHE: dict[tuple, float] = {}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _new_seed() -> int:
    return int.from_bytes(os.urandom(8), "little") & ((1 << 62) - 1)


def evaluate(
    task: str,
    kernel: str | os.PathLike,
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
    deadline = None if timeout_s is None else t_start + timeout_s
    t = get_task(task)
    selected = t.select(scenarios)
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
        _evaluate_into(
            res, t, Path(kernel), selected, baselines, seed, say, deadline, arch, baseline_cache, timing, spare_child
        )
    except TaskError as e:  # the task's reference or baseline broke: an error of the task, never the candidate's
        res.status, res.reason = "error", f"task error: {e}"
    finally:
        res.finished_at = _now()
        res.wall_s = round(time.monotonic() - t_start, 3)
    say(summary_line(res))
    return res


def _evaluate_into(
    res, t, kernel, selected, baselines, seed, say, deadline, arch, baseline_cache, timing, spare_child
) -> None:
    try:
        source = kernel.read_text()
    except (OSError, UnicodeDecodeError) as e:
        res.reason = f"cannot read kernel {kernel}: {e}"
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
        _judge_source(
            res, t, kernel, source, selected, baselines, seed, say, deadline, arch, baseline_cache, timing, session, why
        )
    finally:
        if session is not None:
            if spare_child and not session.started:
                _SPARES.setdefault(_spare_key(t), session)  # never given a job: still as good as new
            else:
                session.close()
        if spare_child and not why:
            _boot_spare(t)


def _judge_source(
    res, t, kernel, source, selected, baselines, seed, say, deadline, arch, baseline_cache, timing, session, why
) -> None:
    res.kernel_source = source
    res.kernel_sha256 = hashlib.sha256(source.encode()).hexdigest()
    names = list(t.default_baselines if baselines is None else baselines)
    res.baselines = names
    res.seed = seed = _new_seed() if seed is None else int(seed)
    res.scenarios = [ScenarioOutcome(s.id, dict(s.params), correct=False, reason="not run") for s in selected]

    t.parent_prepare()
    say(f"building {kernel.name} ({t.language})")
    t0 = time.monotonic()
    b = build(kernel, t.language, arch=arch)
    res.phases["build_s"] = round(time.monotonic() - t0, 2)
    res.build = {"cache_hit": b.cache_hit, "compile_s": round(b.compile_s, 2), "kernels": b.kernels, "arch": b.arch}
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

    availability = t.baseline_availability(names)
    res.baseline_notes = {n: note for n, note in availability.items() if note}
    runnable = [n for n in names if not availability.get(n)]
    t0 = time.monotonic()
    facts = t.parent_setup()
    res.phases["setup_s"] = round(time.monotonic() - t0, 2)
    res.device_name = facts.get("device", "")
    limits = t.timing_limits()
    try:
        libs = t.baseline_libs(runnable)
    except RuntimeError as e:
        res.reason = str(e)
        return

    try:
        _run_child(
            res,
            t,
            session,
            b.lib_path,
            selected,
            runnable,
            libs,
            seed,
            say,
            deadline,
            limits,
            facts,
            baseline_cache,
            timing,
        )
    finally:
        res.reference = t.reference_note()
    _finish(res, selected, names)


# (task, the child's environment) -> a child process booted ahead for this process's next evaluation
_SPARES: dict[tuple, ChildSession] = {}


def _spare_key(t) -> tuple:
    return t.name, ChildSession.environment_key(t.child_env())


def _take_child(t) -> ChildSession:
    spare = _SPARES.pop(_spare_key(t), None)
    if spare is not None and spare.alive():
        return spare
    if spare is not None:
        spare.close()
    return ChildSession(t.name, t.child_env())


def _boot_spare(t) -> None:
    key = _spare_key(t)
    if key not in _SPARES:
        _SPARES[key] = ChildSession(t.name, t.child_env())


@atexit.register
def close_spares() -> None:
    """Stop the children booted ahead (they would also stop by themselves once this process is gone)."""
    while _SPARES:
        _SPARES.popitem()[1].close()


def _left(deadline, stage_s):
    if deadline is None:
        return stage_s
    return max(0.0, min(stage_s, deadline - time.monotonic()))


def _run_child(
    res,
    t,
    session: ChildSession,
    lib_path,
    selected: list[Scenario],
    runnable,
    libs,
    seed,
    say,
    deadline,
    limits,
    facts,
    baseline_cache,
    timing=True,
) -> None:
    outdir = os.path.join(session.workdir, "out")
    os.makedirs(outdir)
    by_id = {s.id: s for s in selected}
    outcome = {o.id: o for o in res.scenarios}
    device, versions = facts.get("device", ""), t.versions()

    def cache_key(s: Scenario, name: str) -> tuple:
        return t.name, s.id, device, versions, name

    def cached_median(s: Scenario, name: str) -> float | None:
        """The baseline's median on this scenario from an earlier evaluation; None: it is timed in this one."""
        return _BASELINE_CACHE.get(cache_key(s, name)) if baseline_cache else None

    def to_warm(s: Scenario) -> list[str]:
        """The baselines the child calls once on this scenario while we judge (see Task.baselines_to_warm):
        those it will time, i.e. whose median for this scenario is not cached yet."""
        if not timing:
            return []
        return [n for n in runnable if n in t.baselines_to_warm and cached_median(s, n) is None]

    jobs = [
        {
            "id": s.id,
            "params": s.params,
            "seed_a": derive_seed(seed, s.id, "a"),
            "seed_b": derive_seed(seed, s.id, "b"),
            "warm": to_warm(s),
        }
        for s in selected
    ]
    job = {"task": t.name, "lib": lib_path, "baseline_libs": libs, "outdir": outdir, "scenarios": jobs}
    job_by_id = {j["id"]: j for j in jobs}
    current, current_sid = "starting the candidate's process", None
    phases = res.phases
    phases["judge_s"] = 0.0
    spent = Stopwatch(phases)
    t_phase = time.monotonic()
    try:
        session.start(job)
        ready = session.recv(_left(deadline, STAGE_TIMEOUT_S), current)
        if ready.get("ev") == "exception":
            raise ChildFailed("crash", ready.get("error", "child failed to start"))
        current = "loading the candidate library"
        loaded = session.recv(_left(deadline, STAGE_TIMEOUT_S), current)
        if loaded.get("ev") != "loaded":
            raise ChildFailed("crash", f"loading the library failed: {loaded.get('error', loaded)}")
        slot_bytes = max(t.output_nbytes(s.params) for s in selected)
        try:
            t.exchange_attach(loaded.get("exchange"), slot_bytes, SLOTS, outdir)
        except (ValueError, RuntimeError) as e:
            raise ChildFailed("protocol", f"cannot reach the child's outputs: {e}") from e
        phases["start_s"] = time.monotonic() - t_phase

        def take(params, slot):
            """A private copy of the outputs in `slot`, then the slot goes back to the child."""
            try:
                got = t.import_outputs(params, slot)
            except ValueError as e:
                raise ChildFailed("protocol", f"outputs in slot {slot!r}: {e}") from e
            session.send(cmd="free", slot=slot)
            return got

        def judge(params, seed, outputs, tolerance=None, spot_check=False):
            with spent("judge_s"):
                return t.judge(params, seed, outputs, tolerance=tolerance, spot_check=spot_check)

        # ---- correctness ----
        t_phase = time.monotonic()
        # what will be judged, in the child's order (seed a sets the scenario's tolerance, seed b is held to it)
        t.judge_ahead([(s.params, derive_seed(seed, s.id, run), run == "a") for s in selected for run in ("a", "b")])
        say(f"checking {len(selected)} scenarios (seed {seed})")
        first_run: dict[str, object] = {}
        verdicts: dict[str, list] = {s.id: [] for s in selected}
        stop_reason = None
        done_count = 0
        timeout_next = STAGE_TIMEOUT_S
        while True:
            with spent("wait_child_s"):
                msg = session.recv(_left(deadline, timeout_next), current)
            ev = msg.get("ev")
            if ev == "calling":
                sc = by_id[msg["sid"]]
                current, current_sid = f"running {sc.id} ({msg['run']})", sc.id
                timeout_next = t.call_timeout_s(sc) + SAVE_MARGIN_S
                continue
            timeout_next = STAGE_TIMEOUT_S
            if ev == "checked":
                for part, secs in (msg.get("seconds") or {}).items():  # the child's word: diagnostics only
                    if isinstance(secs, (int, float)):
                        phases[f"child_{part}_s"] = secs
                break
            if ev in ("device_error", "exception"):
                stop_reason = f"{msg.get('sid', '')} ({msg.get('run', '')}): {msg.get('error')}"
                if msg.get("sid") in outcome:
                    outcome[msg["sid"]].reason = f"device error: {msg.get('error')}"
                raise ChildFailed("crash", stop_reason)
            sid = msg["sid"]
            o = outcome[sid]
            if ev == "unsupported":
                verdicts[sid].append((False, f"candidate returned {msg['rc']} (configuration not supported)"))
                o.reason = verdicts[sid][-1][1]
                done_count += 1
                continue
            if ev != "outputs":
                raise ChildFailed("protocol", f"unexpected message {ev!r}")
            run = msg["run"]
            with spent("take_s"):
                outputs = take(by_id[sid].params, msg["slot"])
            if run == "a2":
                same = t.identical(first_run.pop(sid), outputs)
                verdicts[sid].append(
                    (same, None if same else "outputs differ between two runs on identical inputs (a race?)")
                )
                continue
            # cuDNN's error on the same inputs sets the bound once per scenario (seed a); seed b is held to it
            j = judge(by_id[sid].params, msg["seed"], outputs, tolerance=None if run == "a" else o.tolerance)
            o.error = j.error if o.error is None or (j.error is not None and j.error > o.error) else o.error
            o.tolerance = j.tolerance
            o.details.update({f"{run}_{k}": v for k, v in j.details.items() if v is not None})
            verdicts[sid].append((j.correct, None if j.correct else f"seed {run}: {j.reason}"))
            if run == "a":
                first_run[sid] = outputs
            else:
                done_count += 1
                ok = all(v for v, _ in verdicts[sid])
                o.correct = ok
                o.reason = next((r for v, r in verdicts[sid] if not v), None)
                err = "n/a" if o.error is None else f"{o.error:.2e}"
                say(
                    f"[{done_count}/{len(selected)}] {sid}: {'correct' if ok else 'WRONG: ' + str(o.reason)}"
                    f" (error {err} / tolerance {o.tolerance:.1e})"
                )
            del outputs
        first_run.clear()
        phases["correctness_s"] = time.monotonic() - t_phase
        for sid, vs in verdicts.items():
            if len(vs) < 3 and outcome[sid].reason in (None, "not run"):
                outcome[sid].reason = outcome[sid].reason or "not all runs completed"
                outcome[sid].correct = False

        # ---- timing ----
        t_phase = time.monotonic()
        to_time = [s for s in selected if outcome[s.id].correct] if timing else []
        for i, sc in enumerate(to_time):
            o = outcome[sc.id]
            cached = {n: m for n in runnable if (m := cached_median(sc, n)) is not None}
            base_names = [n for n in runnable if n not in cached]
            current, current_sid = f"timing {sc.id}", sc.id
            session.send(
                cmd="time", scenario=job_by_id[sc.id], baselines=base_names, **{**TIMING, **t.timing_overrides}
            )
            per_call = t.call_timeout_s(sc)
            msg = session.recv(_left(deadline, STAGE_TIMEOUT_S), current)  # calling (warm-up)
            _expect(msg, "calling")
            budget = per_call * (TIMING["max_reps"] + 2) * (1 + len(base_names)) + STAGE_TIMEOUT_S
            msg = session.recv(_left(deadline, budget), current)
            if msg.get("ev") == "device_error":
                o.correct = False
                o.reason = f"device error while timing: {msg.get('error')}"
                raise ChildFailed("crash", f"{sc.id}: {msg.get('error')}")
            _expect(msg, "timed")
            for part, secs in (msg.get("seconds") or {}).items():  # the child's word: diagnostics only
                if part in ("warmup", "repeats") and isinstance(secs, (int, float)):
                    phases[f"timing_{part}_s"] = phases.get(f"timing_{part}_s", 0.0) + secs
            for chk in msg["checked"]:
                j = judge(sc.params, chk["seed"], take(sc.params, chk["slot"]), tolerance=o.tolerance, spot_check=True)
                if not j.correct:
                    o.correct = False
                    o.reason = f"output of timed call {chk['rep']} is wrong: {j.reason}"
            if not msg["checked"]:
                o.correct = False
                o.reason = "no timed output was checked"
            med, spread = verdict.median_and_spread(msg["cand_ms"])
            o.time_ms, o.spread_ms, o.repeats = med, spread, len(msg["cand_ms"])
            o.tflops = sc.flops / (med * 1e-3) / 1e12 if med > 0 else None
            for n, samples in msg["base_ms"].items():
                if samples:
                    m, _ = verdict.median_and_spread(samples)
                    cached[n] = m
                    _BASELINE_CACHE[cache_key(sc, n)] = m
            for n, note in msg["notes"].items():
                o.details[f"{n}_na"] = note
            o.baseline_ms = {n: cached.get(n) for n in res.baselines}
            o.speedup = {n: (cached[n] / med if n in cached and med > 0 else None) for n in res.baselines}

            # the parent's clock against the in-process timer over the same batch of calls; a disagreement
            # is looked at again (a burst of load on the machine is not a cheat) before it counts
            with spent("timing_batch_s"):
                for attempt in range(HOST_BATCHES):
                    host, inproc = _host_clock_ms(session, deadline, per_call, current, o, again=attempt > 0)
                    host_net = max(0.0, host - limits.batch_latency_ms / session.batch_n)
                    suspect = verdict.timing_suspicion(inproc, host_net, 0, 0, limits)
                    if attempt == 0 or host / max(inproc, 1e-9) < o.host_ms / max(o.details["inproc_ms"], 1e-9):
                        o.host_ms, o.details["inproc_ms"] = host, inproc
                    if not suspect:
                        break
                session.send(cmd="next")
            suspect = suspect or verdict.timing_suspicion(med, None, sc.flops, sc.bytes, limits)
            if suspect:
                o.correct = False
                o.reason = "; ".join(r for r in (o.reason, "suspect timing: " + suspect) if r)
            say(
                f"[time {i + 1}/{len(to_time)}] {sc.id}: {med:.4g} ms, {o.tflops or 0:.4g} TFLOP/s"
                + "".join(f", x{o.speedup[n]:.2f} vs {n}" for n in res.baselines if o.speedup.get(n))
            )
        phases["timing_s"] = time.monotonic() - t_phase
        res.status = "correct"
    except (ChildFailed, KeyError, TypeError) as e:
        # a message missing a field or of the wrong type (the candidate can write to the child's message pipe)
        # stops the evaluation as a protocol error, never the harness
        if not isinstance(e, ChildFailed):
            e = ChildFailed("protocol", f"malformed message from the child ({type(e).__name__}: {e})")
        res.status = "error"
        kind = {"timeout": "hang/timeout", "crash": "crash", "protocol": "protocol error"}[e.kind]
        res.reason = f"{kind}: {e}"
        for o in res.scenarios:
            if o.reason == "not run":
                o.reason = f"not run: evaluation stopped ({kind})"
            elif o.correct is False and o.reason is None:
                o.reason = f"evaluation stopped ({kind})"
        # the scenario being run when it stopped is the culprit
        if current_sid in outcome:
            outcome[current_sid].correct = False
            outcome[current_sid].reason = f"{kind}: {e}"
        say(f"stopped: {res.reason}")
    finally:
        t.judge_done()
        phases.update({f"judge_{part}_s": s for part, s in t.judge_seconds.items()})
        for name, seconds in phases.items():  # summed raw, rounded once
            phases[name] = round(seconds, 2)
        t.exchange_close()
        session.close()


def _host_clock_ms(session, deadline, per_call, current, o, again=False) -> tuple[float, float]:
    """Time one batch of candidate calls with this process's clock (which the candidate cannot reach).
    Returns (parent's ms per call, child's in-process ms per call) for the same calls."""
    if not again:
        ready = session.recv(_left(deadline, STAGE_TIMEOUT_S), current)
        _expect(ready, "batch_ready")
        session.batch_n = ready["n"]
    n = session.batch_n
    t0 = time.perf_counter()
    session.send(cmd="go")
    done = session.recv(_left(deadline, per_call * n + STAGE_TIMEOUT_S), f"{current} (batch)")
    t1 = time.perf_counter()
    _expect(done, "batch_done")
    if done.get("error"):
        o.correct = False
        o.reason = f"device error in batch: {done['error']}"
        raise ChildFailed("crash", o.reason)
    return (t1 - t0) * 1e3 / n, float(done.get("inproc_ms", 0.0)) / n


def _expect(msg: dict, ev: str) -> None:
    if msg.get("ev") == "exception":
        raise ChildFailed("crash", msg.get("error", "exception in child"))
    if msg.get("ev") != ev:
        raise ChildFailed("protocol", f"expected {ev!r}, got {msg.get('ev')!r}")


def _finish(res: EvalResult, selected, names) -> None:
    res.geomean = verdict.geomean_speedups([o.speedup for o in res.scenarios if o.correct], names)
    res.geomean_tflops = verdict.geometric_mean([o.tflops for o in res.scenarios if o.correct and o.tflops])
    if res.status == "correct":
        bad = [o for o in res.scenarios if not o.correct]
        if bad:
            res.status = "incorrect"
            res.reason = f"{len(bad)} of {len(res.scenarios)} scenarios fail; first: {bad[0].id}: {bad[0].reason}"
