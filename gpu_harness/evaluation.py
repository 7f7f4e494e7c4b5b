"""One evaluation's work with the candidate's process, in named phases: start the child, check correctness,
time each correct scenario (with spot checks of timed outputs and the parent's own clock), and stop cleanly
when the child fails.

An `Evaluation` is made for one evaluation and dropped after it: everything it learns (the verdicts so far,
the first run's outputs, the scenario being run) lives on it, and what the judge holds for it (the parent's
end of the output exchange, the references computed ahead, the judging's seconds) on its `judge_side`, the
task's JudgeSide (gpu_harness/tasks/sides.py) made for it alone: never on the task, which is cached per
process and judges the next evaluation.
evaluate.py decides whether a child runs at all (the build, the runtime check) and turns the outcomes into
the verdict.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from . import figures, verdict
from .exchange import SLOTS
from .report import timed_speedups_text
from .result import EvalResult, ScenarioOutcome
from .runner import ChildFailed, ChildSession
from .stopwatch import Stopwatch
from .tasks import Scenario, Task, derive_seed
from .tasks.base import Arrays, Judgement
from .taskspec.vocabulary import TIMING_DEFAULTS

TIMING = TIMING_DEFAULTS  # (gpu_harness/taskspec/vocabulary.py, beside what a task may change of it)
HOST_BATCHES = 3  # host-clock batches tried before a disagreement is called suspect
STAGE_TIMEOUT_S = 120.0  # anything that is not a candidate call (start, input generation, ...)
SAVE_MARGIN_S = 15.0  # after a call: copying its outputs into a slot

STOP_KINDS = {"timeout": "hang/timeout", "crash": "crash", "protocol": "protocol error"}
# What reading a forged message can raise: a missing field, a field of the wrong type, an empty or malformed
# value (`"notes": []`, `"cand_ms": []`, `"n": 0`; a kernel of allowlisted imports writes such lines onto the
# message pipe through `stderr`'s file number). A task's own failure (TaskError, a RuntimeError) is none of them.
MALFORMED = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError)


@dataclass
class Plan:
    """What one evaluation runs: the scenarios, the baselines that can run here and their built libraries,
    the seed everything derives from, whether to time, and the process's cache of baseline medians (each
    median timed here goes into it; `reuse_baselines` False: none is taken from it)."""

    scenarios: list[Scenario]
    baselines: list[str]
    baseline_libs: dict[str, str]
    seed: int
    timing: bool
    baseline_cache: dict[tuple[Any, ...], float | list[float]]
    reuse_baselines: bool
    deadline: float | None  # time.monotonic() by which everything must be over (None: no bound)


@dataclass
class Evaluation:
    res: EvalResult
    task: Task
    session: ChildSession
    plan: Plan
    limits: verdict.TimingLimits
    device: str  # the judge's device name: part of the baseline cache's key
    say: Callable[[str], None]
    current: str = "starting the candidate's process"  # what the child is doing, for a timeout's message
    current_sid: str | None = None  # the scenario being run: the culprit when the child fails
    outcome: dict[str, ScenarioOutcome] = field(init=False)  # scenario id -> its outcome in res

    def __post_init__(self) -> None:
        self.outcome = {o.id: o for o in self.res.scenarios}
        self.by_id = {s.id: s for s in self.plan.scenarios}
        self.versions = self.task.versions()
        self.phases = self.res.phases
        self.spent = Stopwatch(self.phases)
        self.outdir = os.path.join(self.session.workdir, "out")
        self.judge_side = self.task.new_judge()  # this evaluation's alone; closed by close()

    # ---- the whole conversation ----
    def run(self, lib_path: str) -> None:
        """Start the child, check every scenario, time the correct ones; a failure of the child ends it as
        an error naming the scenario being run."""
        self.phases["judge_s"] = 0.0
        try:
            self.start(lib_path)
            self.check_correctness()
            self.time_correct_scenarios()
            self.res.status = "correct"
        except (ChildFailed, *MALFORMED) as e:
            # a message missing a field or of the wrong type (the candidate can write to the child's message
            # pipe) stops the evaluation as a protocol error, never the harness
            if not isinstance(e, ChildFailed):
                e = ChildFailed("protocol", f"malformed message from the child ({type(e).__name__}: {e})")
            self.stopped(e)
        finally:
            self.close()

    # ---- start ----
    def jobs(self) -> list[dict[str, Any]]:
        return [
            {
                "id": s.id,
                "params": s.params,
                "seed_a": derive_seed(self.plan.seed, s.id, "a"),
                "seed_b": derive_seed(self.plan.seed, s.id, "b"),
                "warm": self.to_warm(s),
            }
            for s in self.plan.scenarios
        ]

    def start(self, lib_path: str) -> None:
        os.makedirs(self.outdir)
        self.job_by_id = {j["id"]: j for j in self.jobs()}
        t_phase = time.monotonic()
        job = {
            "task": self.task.name,
            "lib": lib_path,
            "baseline_libs": self.plan.baseline_libs,
            "outdir": self.outdir,
            "scenarios": list(self.job_by_id.values()),
        }
        self.session.start(job)
        ready = self.recv(STAGE_TIMEOUT_S)
        if ready.get("ev") == "exception":
            raise ChildFailed("crash", ready.get("error", "child failed to start"))
        self.current = "loading the candidate library"
        loaded = self.recv(STAGE_TIMEOUT_S)
        if loaded.get("ev") != "loaded":
            raise ChildFailed("crash", f"loading the library failed: {loaded.get('error', loaded)}")
        slot_bytes = max(self.task.output_nbytes(s.params) for s in self.plan.scenarios)
        try:
            self.judge_side.attach(loaded.get("exchange"), slot_bytes, SLOTS, self.outdir)
        except (ValueError, RuntimeError) as e:
            raise ChildFailed("protocol", f"cannot reach the child's outputs: {e}") from e
        self.phases["start_s"] = time.monotonic() - t_phase

    # ---- correctness: each scenario on seed a, seed a again (bit for bit), seed b ----
    def check_correctness(self) -> None:
        t_phase = time.monotonic()
        seed, selected = self.plan.seed, self.plan.scenarios
        # what will be judged, in the child's order (seed a sets the scenario's tolerance, seed b is held to it)
        self.judge_side.ahead(
            [(s.params, derive_seed(seed, s.id, run), run == "a") for s in selected for run in ("a", "b")]
        )
        self.say(f"checking {len(selected)} scenarios (seed {seed})")
        first_run: dict[str, Arrays] = {}
        verdicts: dict[str, list[Any]] = {s.id: [] for s in selected}
        done_count = 0
        timeout_next = STAGE_TIMEOUT_S
        while True:
            with self.spent("wait_child_s"):
                msg = self.recv(timeout_next)
            ev = msg.get("ev")
            if ev == "calling":
                sc = self.by_id[msg["sid"]]
                self.current, self.current_sid = f"running {sc.id} ({msg['run']})", sc.id
                timeout_next = self.task.call_timeout_s(sc) + SAVE_MARGIN_S
                continue
            timeout_next = STAGE_TIMEOUT_S
            if ev == "checked":
                for part, secs in (msg.get("seconds") or {}).items():  # the child's word: diagnostics only
                    if isinstance(secs, (int, float)):
                        self.phases[f"child_{part}_s"] = secs
                break
            if ev in ("device_error", "exception"):
                if msg.get("sid") in self.outcome:
                    self.outcome[msg["sid"]].reason = f"device error: {msg.get('error')}"
                raise ChildFailed("crash", f"{msg.get('sid', '')} ({msg.get('run', '')}): {msg.get('error')}")
            sid = msg["sid"]
            o = self.outcome[sid]
            if ev == "unsupported":
                verdicts[sid].append((False, f"candidate returned {msg['rc']} (configuration not supported)"))
                o.reason = verdicts[sid][-1][1]
                done_count += 1
                continue
            if ev != "outputs":
                raise ChildFailed("protocol", f"unexpected message {ev!r}")
            run = msg["run"]
            with self.spent("take_s"):
                outputs = self.take(self.by_id[sid].params, msg["slot"])
            if run == "a2":
                same = self.task.identical(first_run.pop(sid), outputs)
                verdicts[sid].append(
                    (same, None if same else "outputs differ between two runs on identical inputs (a race?)")
                )
                continue
            # a bound the task's rule holds (measured once, or fixed) is set on seed a and seed b is held to it;
            # a rule measured on each run bounds each seed by its own inputs' baseline error. The scenario shows
            # the error and bound of the run nearest its bound, never one run's error beside another's bound.
            j = self.judge(self.by_id[sid].params, msg["seed"], outputs, tolerance=None if run == "a" else o.tolerance)
            o.error, o.tolerance = verdict.nearer_bound((o.error, o.tolerance), (j.error, j.tolerance))
            o.details.update({f"{run}_{k}": v for k, v in j.details.items() if v is not None})
            verdicts[sid].append((j.correct, None if j.correct else f"seed {run}: {j.reason}"))
            if run == "a":
                first_run[sid] = outputs
            else:
                done_count += 1
                o.correct = all(v for v, _ in verdicts[sid])
                o.reason = next((r for v, r in verdicts[sid] if not v), None)
                err = "n/a" if o.error is None else f"{o.error:.2e}"
                self.say(
                    f"[{done_count}/{len(selected)}] {sid}: {'correct' if o.correct else 'WRONG: ' + str(o.reason)}"
                    f" (error {err} / tolerance {o.tolerance:.1e})"
                )
            del outputs
        first_run.clear()
        self.phases["correctness_s"] = time.monotonic() - t_phase
        for sid, vs in verdicts.items():  # the child said it was done before all three runs of a scenario
            if len(vs) < 3 and self.outcome[sid].reason in (None, "not run"):
                self.outcome[sid].reason = "not all runs completed"
                self.outcome[sid].correct = False

    # ---- timing ----
    def time_correct_scenarios(self) -> None:
        t_phase = time.monotonic()
        to_time = [s for s in self.plan.scenarios if self.outcome[s.id].correct] if self.plan.timing else []
        if to_time:
            self.res.host_load = host_load_now()
        for i, sc in enumerate(to_time):
            o = self.outcome[sc.id]
            self.time_scenario(sc, o)
            self.say(
                f"[time {i + 1}/{len(to_time)}] {sc.id}: {o.time_ms:.4g} ms, {o.tflops or 0:.4g} TFLOP/s"
                + timed_speedups_text(o, self.res.baselines)
            )
        if to_time and "load_1m" in (after := host_load_now()):  # the higher reading: a load that rose counts
            self.res.host_load["load_1m"] = max(self.res.host_load.get("load_1m", 0.0), after["load_1m"])
        self.phases["timing_s"] = time.monotonic() - t_phase

    def time_scenario(self, sc: Scenario, o: ScenarioOutcome) -> None:
        """The candidate's median (interleaved with the baselines not cached yet), the outputs of timed calls
        chosen after the calls judged, then the parent's own clock over a batch."""
        cached = {n: m for n in self.plan.baselines if (m := self.cached_median(sc, n)) is not None}
        base_names = [n for n in self.plan.baselines if n not in cached]
        self.current, self.current_sid = f"timing {sc.id}", sc.id
        self.session.send(cmd="time", scenario=self.job_by_id[sc.id], baselines=base_names, **self.timing())
        per_call = self.task.call_timeout_s(sc)
        _expect(self.recv(STAGE_TIMEOUT_S), "calling")  # the warm-up call
        deadline = time.monotonic() + self.timing_wait_s(per_call, len(base_names))
        msg, outputs = self.timed_outputs(sc, o, deadline)
        for part, secs in (msg.get("seconds") or {}).items():  # the child's word: diagnostics only
            if part in ("warmup", "repeats") and isinstance(secs, (int, float)):
                self.phases[f"timing_{part}_s"] = self.phases.get(f"timing_{part}_s", 0.0) + secs
        self.judge_timed_calls(sc, o, msg["cand_ms"], outputs)
        med, spread = verdict.median_and_spread(msg["cand_ms"])
        o.time_ms, o.spread_ms, o.repeats = med, spread, len(msg["cand_ms"])
        o.time_ci_ms = list(verdict.median_interval(msg["cand_ms"]))
        o.tflops = sc.flops / (med * 1e-3) / 1e12 if med > 0 else None
        o.bytes = sc.bytes  # what the GB/s of this timing is of, as the pages read it from the verdict
        intervals = self.baseline_times(sc, msg["base_ms"], cached)
        for n, note in msg["notes"].items():
            o.details[figures.na_detail_key(n)] = note
        self.note_host_waits(o, msg)
        o.baseline_ms = {n: cached.get(n) for n in self.res.baselines}
        o.baseline_ci_ms = {n: intervals[n] for n in self.res.baselines if n in intervals}
        o.speedup = {n: (cached[n] / med if n in cached and med > 0 else None) for n in self.res.baselines}
        if figures.BEST_LIBRARY in self.res.baselines:
            self.add_best_library(o)
        suspect = self.host_clock(o, per_call)
        suspect = suspect or verdict.timing_suspicion(med, None, sc.flops, sc.bytes, self.limits)
        if suspect:
            o.correct = False
            o.reason = "; ".join(r for r in (o.reason, "suspect timing: " + suspect) if r)

    def note_host_waits(self, o: ScenarioOutcome, msg: dict[str, Any]) -> None:
        """A note on each baseline whose host path outlasted the GPU's pre-call spin on at least half its timed
        calls: its median then may hold the GPU waiting on the host (the GPU had finished the spin before the call
        returned, so it may have idled inside the timed span). The child's count is its word, as its times are;
        a malformed one is left out, not trusted."""
        outran = msg.get("outran")
        if not isinstance(outran, dict):
            return
        for name, count in outran.items():
            calls = msg["base_ms"].get(name) if name in self.res.baselines else None
            if not isinstance(count, int) or isinstance(count, bool) or not isinstance(calls, list):
                continue
            if calls and 2 * count >= len(calls) and count <= len(calls):
                o.details[figures.host_wait_detail_key(name)] = (
                    f"the host path outlasted the GPU's pre-call spin on {count} of {len(calls)} timed calls"
                    f"{host_path_words(msg, name)}: the time may hold the GPU waiting on the host"
                )

    def timing(self) -> dict[str, Any]:
        """The harness's timing settings with the task's overrides ([timing], within their bounds)."""
        return {**TIMING, **self.task.timing_overrides}

    def timing_wait_s(self, per_call: float, n_baselines: int) -> float:
        """How long one scenario's timing may take before the child counts as hung: every repeat of the candidate
        and of each baseline at its per-call bound. The repeats are the task's ([timing] may raise max_reps above
        the harness's default, and a min_reps above max_reps wins: verdict.adaptive_repeats), or a correct kernel
        that is merely slow would be judged a hang."""
        timing = self.timing()
        reps = int(max(timing["max_reps"], timing["min_reps"]))
        return per_call * (reps + 2) * (1 + n_baselines) + STAGE_TIMEOUT_S

    def add_best_library(self, o: ScenarioOutcome) -> None:
        """The fastest library on this scenario (figures.best_library) as one more baseline: its median, interval
        and speedup, and in `details` which library it was (absent where no library ran the scenario)."""
        best = figures.best_library(
            {"baseline_ms": o.baseline_ms, "baseline_ci_ms": o.baseline_ci_ms}, self.res.libraries
        )
        if best is None:
            o.speedup[figures.BEST_LIBRARY] = None
            return
        o.baseline_ms[figures.BEST_LIBRARY] = best["ms"]
        if best["interval"] is not None:
            o.baseline_ci_ms[figures.BEST_LIBRARY] = best["interval"]
        o.speedup[figures.BEST_LIBRARY] = best["ms"] / o.time_ms if o.time_ms else None
        o.details[figures.BEST_LIBRARY] = best["name"]

    def timed_outputs(self, sc: Scenario, o: ScenarioOutcome, deadline: float) -> tuple[dict[str, Any], list[Arrays]]:
        """The child's `timed` message, and a private copy of every timed call's outputs in call order: each slot
        is given back once copied, and the child waits for it before it times anything else, so no copy runs
        beside a timed call."""
        outputs: list[Arrays] = []
        while True:
            msg = self.recv(max(0.0, deadline - time.monotonic()))
            if msg.get("ev") == "device_error":
                o.correct = False
                o.reason = f"device error while timing: {msg.get('error')}"
                raise ChildFailed("crash", f"{sc.id}: {msg.get('error')}")
            if msg.get("ev") != "timed_output":
                _expect(msg, "timed")
                return msg, outputs
            if msg.get("rep") != len(outputs):
                raise ChildFailed(
                    "protocol",
                    f"malformed message from the child: timed call {msg.get('rep')!r}'s outputs came as {len(outputs)}'s",
                )
            outputs.append(self.take(sc.params, msg["slot"]))

    def judge_timed_calls(self, sc: Scenario, o: ScenarioOutcome, cand_ms: list[float], outputs: list[Arrays]) -> None:
        """Judge the timed calls whose times set the median (a call cut short to look fast would be one of them),
        and `checks` - 1 others drawn now, after every call ran: no call could know it would be judged. Each on
        the inputs the parent derives from the call's number, never on the child's word."""
        if len(outputs) != len(cand_ms) or not cand_ms:
            raise ChildFailed(
                "protocol", f"malformed message from the child: {len(cand_ms)} timed call(s), {len(outputs)} outputs"
            )
        median_reps = verdict.median_calls(cand_ms)
        others = [rep for rep in range(len(cand_ms)) if rep not in median_reps]
        extra = self.timing()["checks"] - 1
        drawn = [others.pop(_urandom_below(len(others))) for _ in range(min(extra, len(others)))]
        seed_a = self.job_by_id[sc.id]["seed_a"]
        for rep in median_reps + drawn:  # the first wrong one is the reason: the median's, where it is wrong
            seed = derive_seed(seed_a, "timed", rep)
            j = self.judge(sc.params, seed, outputs[rep], tolerance=o.tolerance, spot_check=True)
            if not j.correct and o.correct is not False:
                role = " (the median's)" if rep in median_reps else ""
                o.correct, o.reason = False, f"output of timed call {rep}{role} is wrong: {j.reason}"
        outputs.clear()  # the copies go as soon as they are judged

    def host_clock(self, o: ScenarioOutcome, per_call: float) -> str | None:
        """The parent's clock against the in-process timer over the same batch of calls; a disagreement is
        looked at again (a burst of load on the machine is not a cheat) before it counts. Returns why the
        timing is suspect, or None."""
        with self.spent("timing_batch_s"):
            for attempt in range(HOST_BATCHES):
                host, inproc = self.host_batch_ms(o, per_call, again=attempt > 0)
                host_net = max(0.0, host - self.limits.batch_latency_ms / self.session.batch_n)
                suspect = verdict.timing_suspicion(inproc, host_net, 0, 0, self.limits)
                if attempt == 0 or host / max(inproc, 1e-9) < o.host_ms / max(o.details["inproc_ms"], 1e-9):
                    o.host_ms, o.details["inproc_ms"] = host, inproc
                if not suspect:
                    break
            self.session.send(cmd="next")
        return suspect

    def host_batch_ms(self, o: ScenarioOutcome, per_call: float, again: bool = False) -> tuple[float, float]:
        """Time one batch of candidate calls with this process's clock (which the candidate cannot reach).
        Returns (parent's ms per call, child's in-process ms per call) for the same calls."""
        if not again:
            ready = self.recv(STAGE_TIMEOUT_S)
            _expect(ready, "batch_ready")
            self.session.batch_n = ready["n"]
        n = self.session.batch_n
        t0 = time.perf_counter()
        self.session.send(cmd="go")
        done = self.recv(per_call * n + STAGE_TIMEOUT_S, f"{self.current} (batch)")
        t1 = time.perf_counter()
        _expect(done, "batch_done")
        if done.get("error"):
            o.correct = False
            o.reason = f"device error in batch: {done['error']}"
            raise ChildFailed("crash", o.reason)
        return (t1 - t0) * 1e3 / n, float(done.get("inproc_ms", 0.0)) / n

    # ---- stop ----
    def stopped(self, e: ChildFailed) -> None:
        """The child failed: the evaluation is an error, and the scenario being run is the culprit."""
        res = self.res
        res.status = "error"
        kind = STOP_KINDS[e.kind]
        res.reason = f"{kind}: {e}"
        for o in res.scenarios:
            if o.reason == "not run":
                o.reason = f"not run: evaluation stopped ({kind})"
            elif o.correct is False and o.reason is None:
                o.reason = f"evaluation stopped ({kind})"
        if self.current_sid in self.outcome:
            self.outcome[self.current_sid].correct = False
            self.outcome[self.current_sid].reason = f"{kind}: {e}"
        self.say(f"stopped: {res.reason}")

    def close(self) -> None:
        self.judge_side.stop_ahead()
        self.phases.update({f"judge_{part}_s": s for part, s in self.judge_side.seconds.items()})
        for name, seconds in self.phases.items():  # summed raw, rounded once
            self.phases[name] = round(seconds, 2)
        self.judge_side.close()
        self.session.close()

    # ---- helpers ----
    def recv(self, stage_s: float, what: str | None = None) -> dict[str, Any]:
        """The child's next message, waiting at most `stage_s` (and never past the deadline)."""
        return self.session.recv(left(self.plan.deadline, stage_s), what or self.current)

    def take(self, params: dict[str, Any], slot: int) -> Arrays:
        """A private copy of the outputs in `slot`, then the slot goes back to the child."""
        try:
            got = self.judge_side.import_outputs(params, slot)
        except ValueError as e:
            raise ChildFailed("protocol", f"outputs in slot {slot!r}: {e}") from e
        self.session.send(cmd="free", slot=slot)
        return got

    def judge(
        self,
        params: dict[str, Any],
        seed: int,
        outputs: Arrays,
        tolerance: float | None = None,
        spot_check: bool = False,
    ) -> Judgement:
        with self.spent("judge_s"):
            judgement: Judgement = self.judge_side.judge(
                params, seed, outputs, tolerance=tolerance, spot_check=spot_check
            )
            return judgement

    def cache_key(self, s: Scenario, name: str) -> tuple[Any, ...]:
        return self.task.name, s.id, self.device, self.versions, name

    def baseline_times(self, sc: Scenario, base_ms: dict[str, Any], cached: dict[str, Any]) -> dict[str, list[float]]:
        """Add the baselines timed now to `cached` (name -> median) and to the process's cache, and return each
        baseline's interval on its median (verdict.median_interval): a cached one's from the evaluation that
        timed it, which ran under that evaluation's load, not this one's."""
        intervals: dict[str, list[float]] = {}
        for n in cached:
            if (interval := self.plan.baseline_cache.get((*self.cache_key(sc, n), "interval"))) is not None:
                intervals[n] = cast("list[float]", interval)  # (an interval's key holds one)
        for n, samples in base_ms.items():
            if samples:
                cached[n], _ = verdict.median_and_spread(samples)
                intervals[n] = list(verdict.median_interval(samples))
                self.plan.baseline_cache[self.cache_key(sc, n)] = cached[n]
                self.plan.baseline_cache[(*self.cache_key(sc, n), "interval")] = intervals[n]
        return intervals

    def cached_median(self, s: Scenario, name: str) -> float | None:
        """The baseline's median on this scenario from an earlier evaluation; None: it is timed in this one."""
        cached = self.plan.baseline_cache.get(self.cache_key(s, name)) if self.plan.reuse_baselines else None
        return cast("float | None", cached)  # (a median's key holds one)

    def to_warm(self, s: Scenario) -> list[str]:
        """The baselines the child calls once on this scenario while we judge (see Task.baselines_to_warm):
        those it will time, i.e. whose median for this scenario is not cached yet."""
        if not self.plan.timing:
            return []
        return [n for n in self.plan.baselines if n in self.task.baselines_to_warm and self.cached_median(s, n) is None]


def host_path_words(msg: dict[str, Any], name: str) -> str:
    """ " (its host path took a median 0.9 ms from the flush to the call's return)" from the child's `timed`
    message, where that figure is there and plausible; "" otherwise. The spin before each call is made to
    outlast twice that median (up to 10 ms: cuda_device.spin_cycles), so a call still outran by a short path
    waited on something else (a synchronizing call, a stall of its thread)."""
    by_name = msg.get("host_ms")
    host_ms = figures.measured(by_name.get(name)) if isinstance(by_name, dict) else None
    if host_ms is None or host_ms >= 1e6:
        return ""
    return f" (its host path took a median {host_ms:.3g} ms from the flush to the call's return)"


def host_load_now() -> dict[str, Any]:
    """The host's 1-minute load average and the cores this process may use ({} where the system has no load
    average). Read by the parent, out of the candidate's reach; the timed child itself adds about 1 to it."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return {}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return {"load_1m": round(load, 2), "cores": cores}


def _urandom_below(n: int) -> int:
    """A number in [0, n) from the OS, drawn in the parent after the calls ran (n < 2**32)."""
    return int.from_bytes(os.urandom(4), "little") * n // 2**32


def left(deadline: float | None, stage_s: float) -> float:
    if deadline is None:
        return stage_s
    return max(0.0, min(stage_s, deadline - time.monotonic()))


def _expect(msg: dict[str, Any], ev: str) -> None:
    if msg.get("ev") == "exception":
        raise ChildFailed("crash", msg.get("error", "exception in child"))
    if msg.get("ev") != ev:
        raise ChildFailed("protocol", f"expected {ev!r}, got {msg.get('ev')!r}")
