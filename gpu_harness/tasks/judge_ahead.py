"""The judge that works ahead of the child's outputs ([judge] ahead = true, cuda-sm90 tasks): a JudgeSide
(sides.py) for one evaluation.

Before the child sends a single output the judge knows which (scenario, seed) pairs it will judge, in which
order (Evaluation calls `ahead`). What does not depend on the candidate's outputs is then computed on CUDA
streams of its own while the child runs (gpu_harness/ahead.py): the inputs and the reference of every pair,
and, where a tolerance rule measures its bound on seed a ("once"), its first baseline's outputs on seed a's
inputs. The judgement itself is the task's (`DataTask.judging`: output_judge.py), on the same inputs and reference
as a judge that computes them when the outputs arrive: the work ahead changes when the figures are computed, never
what they are. A spot check's reference is computed after the call, on indices drawn then. The seconds each
part of the judging took are kept by part (inputs, reference, vendor, compare).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..ahead import Ahead
from ..stopwatch import Stopwatch
from .cuda_device import synchronize_stream, torch_module
from .sides import JudgeSide

if TYPE_CHECKING:
    from .base import Arrays, Judgement
    from .data_task import DataTask


def ahead_key(params: dict[str, Any], seed: int) -> str:
    """Which scenario and inputs a result computed ahead belongs to."""
    return json.dumps(params, sort_keys=True) + f":{seed}"


class AheadJudge(JudgeSide):
    """The judge of one evaluation of a CudaDataTask whose spec says [judge] ahead = true. On a judge that
    computes on the CPU (tests) nothing is computed ahead; the seconds by part are still kept."""

    task: DataTask  # a CudaDataTask whose spec says [judge] ahead = true

    def __init__(self, task: DataTask) -> None:
        super().__init__(task)
        self._references: Ahead | None = None
        self._baselines: Ahead | None = None

    def _first_baseline(self) -> str | None:
        """The baseline whose outputs are computed ahead: the first of the rule measured once on seed a."""
        held = self.task.judging.held_outputs()
        rule = self.task.spec.tolerances[held[0]] if held else None
        return rule.baselines[0] if rule is not None and rule.rule == "baseline" else None

    def ahead(self, items: list[tuple[dict[str, Any], int, bool]]) -> None:
        self.stop_ahead()
        task = self.task
        if task.judge_device() == "cpu" or not items:
            return
        torch = torch_module()
        settings = task.spec.ahead
        assert settings is not None  # (an AheadJudge is made for [judge] ahead = true only)

        def own_stream() -> AbstractContextManager[object]:
            # a stream of its own, created without the legacy default stream's implicit waits: the work ahead
            # runs beside the judge's comparisons instead of queueing behind them (or they behind it)
            return torch.cuda.stream(torch.cuda.Stream())

        def reference(payload: tuple[dict[str, Any], int]) -> tuple[Arrays, Arrays]:
            params, seed = payload
            inputs = task.make_inputs(params, seed)
            ref = task.reference_outputs(params, inputs)
            torch.cuda.current_stream().synchronize()
            return inputs, ref

        # the references: GPU-bound, so one thread; every seed of each scenario, in the order they are judged
        self._references = Ahead(
            [(ahead_key(p, seed), (p, seed)) for p, seed, _ in items],
            reference,
            depth=settings.reference_depth,
            threads=1,
            name="reference-ahead",
            thread_context=own_stream,
        )
        first = self._first_baseline()
        if first is None:
            return

        def baseline(payload: tuple[dict[str, Any], int]) -> Arrays:
            params, seed = payload
            outs = task.baseline_outputs(first, params, task.make_inputs(params, seed))
            torch.cuda.current_stream().synchronize()
            return outs

        # the baseline's outputs where seed a sets the bound: a library's first call of a shape is mostly CPU time
        # (cuDNN's plan), so several threads
        self._baselines = Ahead(
            [(ahead_key(p, seed), (p, seed)) for p, seed, sets_tolerance in items if sets_tolerance],
            baseline,
            depth=settings.baseline_depth,
            threads=settings.baseline_threads,
            name="baseline-ahead",
            thread_context=own_stream,
        )

    def stop_ahead(self) -> None:
        for name in ("_references", "_baselines"):
            ahead = getattr(self, name, None)
            setattr(self, name, None)
            if ahead is not None:
                ahead.stop()

    def judge(
        self,
        params: dict[str, Any],
        seed: int,
        outputs: Arrays,
        tolerance: float | None = None,
        spot_check: bool = False,
    ) -> Judgement:
        task = self.task
        # a spot check (a timed call's output) compares indices drawn now, after the call: nothing ahead
        rows = task.spot_rows(params) if spot_check else None
        key = ahead_key(params, seed)
        with self._spent("reference"):
            ready = None if spot_check else _take_ahead(self._references, key)
        if ready is None:
            with self._spent("inputs"):
                inputs = task.make_inputs(params, seed)
            with self._spent("reference"):
                ref = task.reference_outputs(params, inputs, rows=rows)
        else:
            inputs, ref = ready
        first: dict[str, Arrays] = {}
        if tolerance is None and not spot_check:
            with self._spent("vendor"):
                outs = _take_ahead(self._baselines, key)
            if outs is not None and (name := self._first_baseline()) is not None:  # (outs: there is one)
                first[name] = outs
        return task.judging.judge_against(params, inputs, ref, outputs, tolerance, first, rows, spent=self._spent)

    def _spent(self, part: str) -> AbstractContextManager[None]:
        """Adds the seconds of the block (the GPU work it queued on this thread's stream included: it
        synchronises that stream, not the device, so as not to wait for the work ahead) to `seconds`."""
        return Stopwatch(self.seconds, settle=synchronize_stream)(part)


def _take_ahead(ahead: Ahead | None, key: str) -> Any:
    """The result computed ahead for `key`, marked as used on this thread's stream (so that its memory is not
    handed to the background stream's next allocation while this stream still reads it); None if there is
    none."""
    if ahead is None or not ahead.has(key):
        return None
    out = ahead.take(key)
    if out is not None:
        stream = torch_module().cuda.current_stream()
        for t in _tensors(out):
            t.record_stream(stream)
    return out


def _tensors(obj: object) -> Iterator[Any]:
    if hasattr(obj, "record_stream"):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from _tensors(v)
