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
import json
import os
import sys
import time
import traceback

from .baseline_threads import BaselineThreads
from .exchange import SLOTS, SlotRing
from .stopwatch import Stopwatch


class Channel:
    def __init__(self, msg_fd: int, cmd_fd: int):
        self._out = os.fdopen(msg_fd, "w", buffering=1)
        self._in = os.fdopen(cmd_fd, "r")
        self.slots = SlotRing(0)

    def send(self, **msg):
        self._out.write(json.dumps(msg) + "\n")
        self._out.flush()

    def _read(self) -> dict:
        line = self._in.readline()
        if not line:
            raise SystemExit(0)  # the parent is gone
        return json.loads(line)

    def recv(self) -> dict:
        """The next command; slots the parent freed in the meantime are noted on the way."""
        while True:
            cmd = self._read()
            if cmd.get("cmd") != "free":
                return cmd
            self.slots.release(cmd["slot"])

    def take_slot(self) -> int:
        return self.slots.take(self._read)


def _fresh_fraction() -> float:
    # decided after each timed call, from the OS: the candidate cannot know beforehand whether a call is checked
    return int.from_bytes(os.urandom(4), "little") / 2**32


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

    lib = ctypes.CDLL(job["lib"], mode=os.RTLD_LOCAL)
    fn = task.bind(lib)
    base_libs = {name: task.bind(ctypes.CDLL(path, mode=os.RTLD_LOCAL)) for name, path in job["baseline_libs"].items()}
    slot_bytes = max(task.output_nbytes(sc["params"]) for sc in job["scenarios"])
    exchange = side.create_exchange(slot_bytes, SLOTS, job["outdir"])
    ch.slots = SlotRing(SLOTS)
    baselines = BaselineThreads(task.baseline_threads)
    ch.send(ev="loaded", exchange=exchange)

    try:
        spent = Stopwatch()  # where this phase's time goes on this side (diagnostics for the parent)
        # every scenario's baseline warm-up is queued now, on its owner thread: they run beside the
        # correctness runs below and are done (or nearly) by the time those are
        with spent("warm_submit"):
            for sc in job["scenarios"]:
                _warm_baselines(task, side, sc, sc.get("warm", []), base_libs, derive_seed, baselines)
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
            sc = cmd["scenario"]
            _time_scenario(task, side, fn, base_libs, sc, cmd, ch, derive_seed, baselines)
    finally:
        baselines.close()  # at most the call in progress on each thread finishes


def _warm_baselines(task, side, sc, names, base_libs, derive_seed, baselines: BaselineThreads) -> None:
    """Queue one call of each baseline on this scenario's shape, on the thread that will time it, to run
    during the correctness phase: a library's first call of a shape is slow (cuDNN builds and compiles a
    plan), and this way that cost overlaps the correctness runs and the judging instead of adding to the
    timing phase."""
    if not names:
        return
    params = sc["params"]

    def work():
        inputs = task.make_inputs(params, derive_seed(sc["seed_a"], "prewarm"))
        for f in task.baseline_callables(names, params, inputs, base_libs).values():
            if callable(f):
                try:
                    f()
                except Exception:
                    pass
        side.sync_error()

    baselines.warm(sc["id"], work)


def _time_scenario(task, side, fn, base_libs, sc, cmd, ch, derive_seed, baselines: BaselineThreads) -> None:
    params = sc["params"]
    names = cmd["baselines"]
    t_warm = time.perf_counter()
    # warm-up: one call each (also the estimate for the repeat count)
    seed = derive_seed(sc["seed_a"], "warm")
    inputs = task.make_inputs(params, seed)
    outputs = task.new_outputs(params)
    ch.send(ev="calling", sid=sc["id"], run="warm-up")
    side.flush_cache()
    est = side.time_call(lambda: task.invoke(fn, inputs, outputs, params))
    err = side.sync_error()
    if err:
        ch.send(ev="device_error", sid=sc["id"], run="warm-up", error=err)
        raise SystemExit(3)
    base_fns = task.baseline_callables(names, params, inputs, base_libs)
    notes = {n: f for n, f in base_fns.items() if isinstance(f, str)}
    runnable = [n for n in names if n not in notes]
    for n in list(runnable):
        try:
            side.flush_cache()
            baselines.call(sc["id"], base_fns[n])
            err = side.sync_error()
            if err:
                raise RuntimeError(err)
        except Exception as e:  # a baseline that cannot run this scenario is n/a there, not a failure
            notes[n] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            runnable.remove(n)
    del inputs, outputs

    reps = _repeats(est, cmd)
    t_reps = time.perf_counter()
    cand_ms, base_ms, checked = [], {n: [] for n in runnable}, []
    # the last timed call is always checked (catches "honest for the first N calls"), plus random others
    p_check = min(1.0, (cmd["checks"] - 1) / max(min(reps, cmd.get("early_min") or reps), 1))
    for rep in range(reps):
        # fresh inputs for every timed call: caching outputs between calls gains nothing
        seed = derive_seed(sc["seed_a"], "timed", rep)
        inputs = task.make_inputs(params, seed)
        outputs = task.new_outputs(params)
        fns = task.baseline_callables(runnable, params, inputs, base_libs)
        order = ["__candidate__"] + runnable
        if rep % 2:
            order.reverse()  # A/B then B/A: no impl always runs right after the flush of another
        for name in order:
            side.flush_cache()
            if name == "__candidate__":
                cand_ms.append(side.time_call(lambda: task.invoke(fn, inputs, outputs, params)))
                err = side.sync_error()
                if err:
                    ch.send(ev="device_error", sid=sc["id"], run=f"timed call {rep}", error=err)
                    raise SystemExit(3)
                if _fresh_fraction() < p_check and len(checked) < cmd["checks"] - 1:
                    slot = ch.take_slot()
                    side.export_outputs(outputs, slot)
                    checked.append({"seed": seed, "slot": slot, "rep": rep})
            else:
                base_ms[name].append(side.time_call(lambda f=fns[name]: baselines.call(sc["id"], f)))
        last = rep == reps - 1 or _settled([cand_ms, *base_ms.values()], cmd)
        if last and not (checked and checked[-1]["rep"] == rep):
            slot = ch.take_slot()  # the baselines' calls since then write only their own outputs
            side.export_outputs(outputs, slot)
            checked.append({"seed": seed, "slot": slot, "rep": rep})
        del inputs, outputs, fns
        if last:
            break
    ch.send(
        ev="timed",
        sid=sc["id"],
        cand_ms=cand_ms,
        base_ms=base_ms,
        notes=notes,
        checked=checked,
        estimate_ms=est,
        seconds={"warmup": t_reps - t_warm, "repeats": time.perf_counter() - t_reps},
    )

    # host-clock cross-check: the parent times this batch with its own clock
    n = max(1, min(cmd["batch_max"], int(cmd["batch_ms"] / max(est, 1e-3))))
    seed = derive_seed(sc["seed_a"], "batch")
    inputs = task.make_inputs(params, seed)
    outputs = task.new_outputs(params)
    side.sync_error()
    ch.send(ev="batch_ready", sid=sc["id"], n=n)
    while True:  # the parent asks for batches until it is satisfied ("next")
        cmd = ch.recv()
        if cmd.get("cmd") == "next":
            return
        if cmd.get("cmd") != "go":
            raise ValueError(f"expected go or next, got {cmd!r}")
        # each call is also timed in-process, so that the parent compares two clocks over the same window
        inproc = sum(side.time_call(lambda: task.invoke(fn, inputs, outputs, params)) for _ in range(n))
        err = side.sync_error()
        ch.send(ev="batch_done", sid=sc["id"], n=n, error=err, inproc_ms=inproc)
        if err:
            raise SystemExit(3)


def _settled(series: list[list[float]], cmd: dict) -> bool:
    """Enough timed calls: every implementation's median is known to within cmd["ci_rel"] (early_min calls at
    least; verdict.median_settled says how)."""
    from .verdict import median_settled

    early_min, ci_rel = cmd.get("early_min"), cmd.get("ci_rel")
    return bool(early_min and ci_rel) and all(median_settled(xs, early_min, ci_rel) for xs in series)


def _repeats(est_ms: float, cmd: dict) -> int:
    from .verdict import adaptive_repeats

    return adaptive_repeats(est_ms, cmd["budget_ms"], cmd["min_reps"], cmd["max_reps"])


def main(argv=None) -> int:
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
