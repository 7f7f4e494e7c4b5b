"""The candidate's process. A fresh one for each evaluation (python -m gpu_harness.child TASK), booted before
its job arrives on the command pipe (gpu_harness/runner.py), so that its start overlaps the parent's work.

It loads the candidate library, makes inputs from the seeds the parent chose, poisons outputs, calls the
candidate, puts the outputs into an output slot the parent reads (gpu_harness/exchange.py), and times calls
interleaved with the baselines. It reports over a
dedicated pipe (not stdout, which the candidate can print to). It never sees a reference output, and nothing
it says about correctness is believed: the parent judges the outputs, and times a batch of calls with its own
clock.

Protocol: JSON lines. Child -> parent on --msg-fd, parent -> child on --cmd-fd.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import resource
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .baseline_threads import BaselineThreads
from .exchange import SLOTS, SlotRing
from .stopwatch import Stopwatch

if TYPE_CHECKING:
    from .tasks.base import Arrays, KernelFunction, Task
    from .tasks.sides import ChildSide


class Channel:
    def __init__(self, msg_fd: int, cmd_fd: int) -> None:
        self._out = os.fdopen(msg_fd, "w", buffering=1)
        self._in = os.fdopen(cmd_fd, "r")
        self.slots = SlotRing(0)

    def send(self, **msg: object) -> None:
        self._out.write(json.dumps(msg) + "\n")
        self._out.flush()

    def _read(self) -> dict[str, Any]:
        line = self._in.readline()
        if not line:
            raise SystemExit(0)  # the parent is gone
        message: dict[str, Any] = json.loads(line)
        return message

    def recv(self) -> dict[str, Any]:
        """The next command; slots the parent freed in the meantime are noted on the way."""
        while True:
            cmd = self._read()
            if cmd.get("cmd") != "free":
                return cmd
            self.slots.release(cmd["slot"])

    def take_slot(self) -> int:
        return self.slots.take(self._read)

    def wait_freed(self, slot: int) -> None:
        """Until the parent has copied `slot` and given it back (a timed call's outputs: the parent's copy then
        never runs beside the next timed call)."""
        self.slots.wait_for(slot, self._read)


FILE_SIZE_FLOOR = 256 << 20  # the least size a file of the child may reach (libraries' caches are far smaller)


def limit_file_size(slot_bytes: int) -> None:
    """No file this process writes may grow past the larger of FILE_SIZE_FLOOR and two output slots (a CPU task's
    slot is a file): a write past it fails (EFBIG: Python ignores SIGXFSZ), so a kernel printing without end, or
    writing one huge file, no longer fills the disk. (Many files, each under the limit, are not stopped.)"""
    limit = max(FILE_SIZE_FLOOR, 2 * slot_bytes + (1 << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def run(task_name: str, ch: Channel) -> None:
    from .tasks import derive_seed, get_task
    from .tasks.sides import ChildSide

    task = get_task(task_name)  # data and pure functions; this process's own state is `side`
    side = ChildSide(task)
    facts = side.setup()
    ch.send(ev="ready", **facts)
    cmd = ch.recv()  # booted ahead of its job: wait for it (the parent kills us when done)
    if cmd.get("cmd") != "job":
        raise ValueError(f"expected a job, got {cmd.get('cmd')!r}")
    job = cmd["job"]

    slot_bytes = max(task.output_nbytes(sc["params"]) for sc in job["scenarios"])
    limit_file_size(slot_bytes)  # before the candidate's library is loaded: its static initialisers run then
    lib = ctypes.CDLL(job["lib"], mode=os.RTLD_LOCAL)
    fn = task.bind(lib)
    base_libs = {name: task.bind(ctypes.CDLL(path, mode=os.RTLD_LOCAL)) for name, path in job["baseline_libs"].items()}
    exchange = side.create_exchange(slot_bytes, SLOTS, job["outdir"])
    ch.slots = SlotRing(SLOTS)
    baselines = BaselineThreads(task.baseline_threads)
    bench = Bench(task, side, fn, base_libs, ch, derive_seed, baselines)
    ch.send(ev="loaded", exchange=exchange)

    try:
        spent = Stopwatch()  # where this phase's time goes on this side (diagnostics for the parent)
        # every scenario's baseline warm-up is queued now, on its owner thread: they run beside the
        # correctness runs below and are done (or nearly) by the time those are
        with spent("warm_submit"):
            for sc in job["scenarios"]:
                _warm_baselines(bench, sc, sc.get("warm", []))
        # ---- correctness: seed a, seed a again (bitwise repeatability), seed b ----
        for sc in job["scenarios"]:
            params = sc["params"]
            for run_name in ("a", "a2", "b"):
                seed = sc["seed_b"] if run_name == "b" else sc["seed_a"]
                with spent("inputs"):
                    inputs = task.make_inputs(params, seed)
                    outputs = task.new_outputs(params)
                    err = side.sync_error()
                if err:
                    ch.send(ev="device_error", sid=sc["id"], run=run_name, error="before the call: " + err)
                    return
                ch.send(ev="calling", sid=sc["id"], run=run_name)
                with spent("calls"):
                    rc = task.invoke(fn, inputs, outputs, params)
                    err = side.sync_error()
                if err:
                    ch.send(ev="device_error", sid=sc["id"], run=run_name, error=err)
                    return
                if rc != 0:
                    ch.send(ev="unsupported", sid=sc["id"], run=run_name, rc=rc)
                    break
                with spent("slot_wait"):
                    slot = ch.take_slot()
                with spent("export"):
                    side.export_outputs(outputs, slot)
                ch.send(ev="outputs", sid=sc["id"], run=run_name, seed=seed, slot=slot)
                del inputs, outputs
        with spent("warm_wait"):
            baselines.finish_warming()
        ch.send(ev="checked", seconds=spent.seconds)

        # ---- timing, scenario by scenario, as the parent asks ----
        while True:
            cmd = ch.recv()
            if cmd["cmd"] != "time":
                raise ValueError(f"unknown command {cmd!r}")
            _time_scenario(bench, cmd["scenario"], cmd)
    finally:
        baselines.close()  # at most the call in progress on each thread finishes


@dataclass(frozen=True)
class Bench:
    """What timing a scenario needs, gathered once per job: the task and this process's side of it, the
    candidate's function, the baselines' functions by name and the threads that own them, the channel to the
    parent and the seed derivation (the same as the parent's, so that it can regenerate any input)."""

    task: Task
    side: ChildSide
    fn: KernelFunction
    base_libs: dict[str, Any]
    ch: Channel
    derive_seed: Callable[..., Any]
    baselines: BaselineThreads

    def fresh_io(self, params: dict[str, Any], seed: int) -> tuple[Any, ...]:
        """New inputs from `seed` and new (poisoned) outputs for one call."""
        return self.task.make_inputs(params, seed), self.task.new_outputs(params)

    def time_candidate(self, inputs: Arrays, outputs: Arrays, params: dict[str, Any]) -> float:
        return self.side.time_call(lambda: self.task.invoke(self.fn, inputs, outputs, params))

    def export(self, outputs: Arrays) -> int:
        """Put the outputs into a free slot for the parent to judge; the slot's number."""
        slot = self.ch.take_slot()
        self.side.export_outputs(outputs, slot)
        return slot

    def fail_on_device_error(self, sid: str, run: str) -> None:
        """A device error ends this process (exit 3) after the parent is told which call it followed."""
        err = self.side.sync_error()
        if err:
            self.ch.send(ev="device_error", sid=sid, run=run, error=err)
            raise SystemExit(3)


def _warm_baselines(bench: Bench, sc: dict[str, Any], names: list[str]) -> None:
    """Queue one call of each baseline on this scenario's shape, on the thread that will time it, to run
    during the correctness phase: a library's first call of a shape is slow (cuDNN builds and compiles a
    plan), and this way that cost overlaps the correctness runs and the judging instead of adding to the
    timing phase."""
    if not names:
        return
    params = sc["params"]

    def work() -> None:
        inputs = bench.task.make_inputs(params, bench.derive_seed(sc["seed_a"], "prewarm"))
        for f in bench.task.baseline_callables(names, params, inputs, bench.base_libs).values():
            if callable(f):
                try:
                    f()
                except Exception:
                    pass
        bench.side.sync_error()

    bench.baselines.warm(sc["id"], work)


def _time_scenario(bench: Bench, sc: dict[str, Any], cmd: dict[str, Any]) -> None:
    t_warm = time.perf_counter()
    est, runnable, notes = _warm_up(bench, sc, cmd["baselines"])
    t_reps = time.perf_counter()
    cand_ms, base_ms, host = _timed_calls(bench, sc, cmd, est, runnable)
    bench.ch.send(
        ev="timed",
        sid=sc["id"],
        cand_ms=cand_ms,
        base_ms=base_ms,
        outran={name: sum(outran for outran, _ in calls) for name, calls in host.items()},
        host_ms={name: statistics.median(ms for _, ms in calls) for name, calls in host.items() if calls},
        notes=notes,
        estimate_ms=est,
        seconds={"warmup": t_reps - t_warm, "repeats": time.perf_counter() - t_reps},
    )
    _serve_batches(bench, sc, cmd, est)


def _warm_up(bench: Bench, sc: dict[str, Any], names: list[str]) -> tuple[float, dict[str, float], dict[str, str]]:
    """One call each: the candidate's is also the estimate for the repeat count. The estimate, the baselines
    that ran with the host path of their call (ms from the flush to its return), and a note for each that
    cannot run this scenario."""
    params = sc["params"]
    inputs, outputs = bench.fresh_io(params, bench.derive_seed(sc["seed_a"], "warm"))
    bench.ch.send(ev="calling", sid=sc["id"], run="warm-up")
    bench.side.flush_cache()
    est = bench.time_candidate(inputs, outputs, params)
    bench.fail_on_device_error(sc["id"], "warm-up")
    base_fns = bench.task.baseline_callables(names, params, inputs, bench.base_libs)
    notes = {n: f for n, f in base_fns.items() if isinstance(f, str)}
    runnable: dict[str, float] = {}
    for n in names:
        if n in notes:
            continue
        problem = _baseline_problem(bench, sc["id"], cast("Callable[[], object]", base_fns[n]))  # (no note)
        if problem:  # a baseline that cannot run this scenario is n/a there, not a failure
            notes[n] = problem
        else:
            runnable[n] = bench.side.host_ms_after_flush()
    return est, runnable, notes


def _baseline_problem(bench: Bench, sid: str, f: Callable[[], object]) -> str | None:
    """Why one call of a baseline failed, or None when it ran (timed as the timed calls are, so that its host
    path is known before them)."""
    try:
        bench.side.flush_cache()
        bench.side.time_call(lambda: bench.baselines.call(sid, f))
        err = bench.side.sync_error()
        if err:
            raise RuntimeError(err)
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return None


def _timed_calls(
    bench: Bench, sc: dict[str, Any], cmd: dict[str, Any], est: float, runnable: dict[str, float]
) -> tuple[list[Any], dict[str, Any], dict[str, list[tuple[bool, float]]]]:
    """The repeated timed calls, candidate and baselines interleaved: the candidate's times, the baselines'
    times by name, and for each of a baseline's calls whether its host path outlasted the flush before it (the
    GPU waited on the host inside that time: a library's Python path, a synchronizing call) and how long that
    host path took after the flush (ms). Every candidate
    call's outputs go to the parent, which keeps a copy of each and, once it has the times, judges the calls that
    set the median (and others at random): which those are, no call can know."""
    params = sc["params"]
    reps = _repeats(est, cmd)
    cand_ms: list[float] = []
    base_ms: dict[str, list[float]] = {n: [] for n in runnable}
    host: dict[str, list[tuple[bool, float]]] = {n: [] for n in runnable}
    for rep in range(reps):
        # fresh inputs for every timed call: caching outputs between calls gains nothing
        seed = bench.derive_seed(sc["seed_a"], "timed", rep)
        inputs, outputs = bench.fresh_io(params, seed)
        fns = bench.task.baseline_callables(list(runnable), params, inputs, bench.base_libs)
        order = ["__candidate__", *runnable]
        if rep % 2:
            order.reverse()  # A/B then B/A: no impl always runs right after the flush of another
        for name in order:
            if name != "__candidate__":
                bench.side.flush_cache(_expected_host_ms(host[name], runnable[name]))
                fn = cast("Callable[[], object]", fns[name])  # (a runnable baseline's call, no note)
                base_ms[name].append(bench.side.time_call(functools.partial(bench.baselines.call, sc["id"], fn)))
                host[name].append((bench.side.host_outran_flush(), bench.side.host_ms_after_flush()))
                continue
            bench.side.flush_cache()
            cand_ms.append(bench.time_candidate(inputs, outputs, params))
            bench.fail_on_device_error(sc["id"], f"timed call {rep}")
            slot = bench.export(outputs)
            bench.ch.send(ev="timed_output", sid=sc["id"], rep=rep, slot=slot)
            bench.ch.wait_freed(slot)  # the parent's copy is done before anything else is timed
        del inputs, outputs, fns
        if rep == reps - 1 or _settled([cand_ms, *base_ms.values()], cmd):
            break
    return cand_ms, base_ms, host


def _serve_batches(bench: Bench, sc: dict[str, Any], cmd: dict[str, Any], est: float) -> None:
    """Host-clock cross-check: the parent times batches of calls with its own clock, until it is satisfied."""
    params = sc["params"]
    n = max(1, min(cmd["batch_max"], int(cmd["batch_ms"] / max(est, 1e-3))))
    inputs, outputs = bench.fresh_io(params, bench.derive_seed(sc["seed_a"], "batch"))
    bench.side.sync_error()
    bench.ch.send(ev="batch_ready", sid=sc["id"], n=n)
    while True:  # the parent asks for batches until it is satisfied ("next")
        cmd = bench.ch.recv()
        if cmd.get("cmd") == "next":
            return
        if cmd.get("cmd") != "go":
            raise ValueError(f"expected go or next, got {cmd!r}")
        # each call is also timed in-process, so that the parent compares two clocks over the same window
        inproc = sum(bench.time_candidate(inputs, outputs, params) for _ in range(n))
        err = bench.side.sync_error()
        bench.ch.send(ev="batch_done", sid=sc["id"], n=n, error=err, inproc_ms=inproc)
        if err:
            raise SystemExit(3)


def _expected_host_ms(calls: list[tuple[bool, float]], warm_up_ms: float) -> float:
    """The host path a baseline's next timed call is expected to take after its flush (ms), which the flush's
    spin is made to outlast: the median of its timed calls so far, its warm-up call's before the first."""
    return statistics.median(ms for _, ms in calls) if calls else warm_up_ms


def _settled(series: list[list[float]], cmd: dict[str, Any]) -> bool:
    """Enough timed calls: every implementation's median is known to within cmd["ci_rel"] (early_min calls at
    least; verdict.median_settled says how)."""
    from .verdict import median_settled

    early_min, ci_rel = cmd.get("early_min"), cmd.get("ci_rel")
    if not (early_min and ci_rel):
        return False
    return all(median_settled(xs, early_min, ci_rel) for xs in series)


def _repeats(est_ms: float, cmd: dict[str, Any]) -> int:
    from .verdict import adaptive_repeats

    return adaptive_repeats(est_ms, cmd["budget_ms"], cmd["min_reps"], cmd["max_reps"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("task")
    ap.add_argument("--msg-fd", type=int, required=True)
    ap.add_argument("--cmd-fd", type=int, required=True)
    args = ap.parse_args(argv)
    ch = Channel(args.msg_fd, args.cmd_fd)
    try:
        run(args.task, ch)
    except SystemExit:
        raise
    except BaseException as e:  # report, then die: the parent decides what it means
        try:
            ch.send(ev="exception", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc()[-3000:])
        except OSError:
            pass
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
