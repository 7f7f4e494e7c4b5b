"""How a task judges a candidate's outputs against the reference: each output's bound under its tolerance rule
(taskspec [tolerance]: a fixed relative error, allclose, or a multiple of a baseline's own error measured on the
same inputs, once on seed a and held for seed b and the spot checks), and the Judgement that follows from each
output's comparison. A DataTask holds one (`DataTask.judging`) and gives it what depends on the target (its
arrays' comparison, sampling and shape checks) and on the task (its baselines' outputs)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..taskspec import Arg, TaskSpec, Tolerance
from ..verdict import Comparison, judge_outputs
from .base import Array, Arrays, Judgement, Params, TaskError

# a baseline name -> its outputs, computed ahead of the judge; a part of the judging -> a context timing it
Baselines = dict[str, Arrays]
Spent = Callable[[str], contextlib.AbstractContextManager[None]]


@contextlib.contextmanager
def _untimed(_part: str) -> Iterator[None]:
    yield


class JudgedTask(Protocol):
    """What the judge asks of its task: the spec, the target's operations on arrays, the baselines' outputs
    and the spot check's sampling (implemented by DataTask and its two targets)."""

    spec: TaskSpec
    output_names: tuple[str, ...]

    def _compare(self, name: str, cand: Array, ref: Array) -> Comparison: ...

    def _allclose_ratio(self, cand: Array, ref: Array, atol: float, rtol: float) -> float: ...

    def _take(self, arr: Array, axis: int, rows: Array) -> Array: ...

    def _not_like(self, cand: Array, dtype: str, shape: tuple[Any, ...]) -> str | None: ...

    def baseline_outputs(self, name: str, params: Params, inputs: Arrays) -> Arrays: ...

    def sample_axis(self, arg: Arg) -> int | None: ...

    def sampled_comparisons(
        self, params: Params, outputs: Arrays, ref: Arrays, rows: Array
    ) -> dict[str, Comparison]: ...


class OutputJudge:
    """The judging rules of one task (see the module's docstring); it holds no state of one evaluation."""

    def __init__(self, task: JudgedTask) -> None:
        self._task = task

    @property
    def spec(self) -> TaskSpec:
        return self._task.spec

    def judge_against(
        self,
        params: Params,
        inputs: Arrays,
        ref: Arrays,
        outputs: Arrays,
        tolerance: float | None = None,
        first_baselines: Baselines | None = None,
        rows: Array | None = None,
        spent: Spent | None = None,
    ) -> Judgement:
        """The Judgement of `outputs` against the reference `ref` of `inputs`. `tolerance`: the bound seed a set
        (see held_outputs); `first_baselines`: baseline name -> its outputs on these inputs, computed ahead of
        the judge; `rows`: the indices `ref` was computed on (a sampled spot check); `spent(part)`: a context
        that times the block as that part of the judging (JudgeSide seconds: "vendor", "compare")."""
        spent = spent or _untimed
        with spent("vendor"):
            bounds, details = self.bounds(params, inputs, ref, tolerance, first_baselines, rows)
        wrong = self.wrong_output(params, outputs)
        if wrong:
            return Judgement(False, None, bounds[self.headline_output()], wrong)
        with spent("compare"):
            if rows is None:
                cmps = {o.name: self._task._compare(o.name, outputs[o.name], ref[o.name]) for o in self.spec.outputs}
            else:
                cmps = self._task.sampled_comparisons(params, outputs, ref, rows)
            judgement = self.verdict(cmps, bounds, details, outputs, ref, rows)
        if rows is not None:
            judgement.details["rows_checked"] = len(rows)
        return judgement

    def wrong_output(self, params: Params, outputs: Arrays) -> str | None:
        """Why the outputs cannot be compared (one missing, or not of the ABI's shape and dtype)."""
        for o in self.spec.outputs:
            cand = outputs.get(o.name)
            dtype, shape = self.spec.dtype(o, params), self.spec.shape(o, params)
            wrong = "missing" if cand is None else self._task._not_like(cand, dtype, shape)
            if wrong:
                return f"{o.name}: output has {wrong}, expected shape {shape} {dtype}"
        return None

    def bounds(
        self,
        params: Params,
        inputs: Arrays,
        ref: Arrays,
        tolerance: float | None = None,
        first_baselines: Baselines | None = None,
        rows: Array | None = None,
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """(output name -> its bound, details: the baselines' errors that set them)."""
        details: dict[str, Any] = {}
        held = self.held_outputs()
        if self.spec.tolerance is not None:
            given = tolerance if held else None
            rule, names = self.spec.tolerance, list(self._task.output_names)
            bound = self._bound(rule, names, params, inputs, ref, given, details, first_baselines, rows)
            return {n: bound for n in self._task.output_names}, details
        bounds = {
            name: self._bound(
                rule, [name], params, inputs, ref, tolerance if name in held else None, details, first_baselines, rows
            )
            for name, rule in self.spec.tolerances.items()
        }
        return bounds, details

    def verdict(
        self,
        cmps: dict[str, Comparison],
        bounds: dict[str, float],
        details: dict[str, Any],
        outputs: Arrays,
        ref: Arrays,
        rows: Array | None = None,
    ) -> Judgement:
        """The Judgement from each output's comparison with its reference (`cmps`: name -> Comparison, in ABI
        order), each output held to its bound; `outputs` and `ref` serve the allclose rule's element check."""
        if self.spec.tolerance is not None:
            return self._uniform_verdict(cmps, bounds, details, self.sampled_outputs(outputs, rows), ref)
        ok, reason = True, None
        errors: dict[str, float] = {}
        for name, c in cmps.items():
            rule = self.spec.tolerances[name]
            if rule.rule == "allclose":
                cand = self.sampled_outputs(outputs, rows)[name]
                errors[name] = self._task._allclose_ratio(cand, ref[name], rule.atol, rule.rtol)
            else:
                errors[name] = c.rel_error
            if not ok:
                continue
            ok, reason = judge_outputs([c], {name: math.inf if rule.rule == "allclose" else bounds[name]})
            if ok and rule.rule == "allclose" and not errors[name] <= bounds[name]:
                ok = False
                reason = (
                    f"{name}: some elements differ by more than {rule.atol:g} + {rule.rtol:g} x |ref|"
                    f" (worst x{errors[name]:.3g})"
                )
        head = self.headline_output()
        details.update({f"{n}_error": e for n, e in errors.items() if n != head})
        return Judgement(ok, errors[head], bounds[head], reason, details)

    def sampled_outputs(self, outputs: Arrays, rows: Array | None) -> Arrays:
        """The outputs at the sampled indices (all of them without `rows`)."""
        if rows is None:
            return outputs
        out: Arrays = {}
        for o in self.spec.outputs:
            if o.name in outputs:  # a baseline may return some outputs only
                axis = self._task.sample_axis(o)
                out[o.name] = outputs[o.name] if axis is None else self._task._take(outputs[o.name], axis, rows)
        return out

    def _uniform_verdict(
        self,
        cmps: dict[str, Comparison],
        bounds: dict[str, float],
        details: dict[str, Any],
        outputs: Arrays,
        ref: Arrays,
    ) -> Judgement:
        """One rule for every output: the Judgement's error is the worst of them."""
        rule = self.spec.tolerance
        assert rule is not None  # (verdict calls it for a uniform rule only)
        tolerance = bounds[self._task.output_names[0]]
        comparisons = list(cmps.values())
        if rule.rule == "allclose":
            ok, reason = judge_outputs(comparisons, {c.name: math.inf for c in comparisons})  # written, finite first
            error = max(
                self._task._allclose_ratio(outputs[c.name], ref[c.name], rule.atol, rule.rtol) for c in comparisons
            )
            if ok and not error <= tolerance:
                ok, reason = (
                    False,
                    f"some elements differ by more than {rule.atol:g} + {rule.rtol:g} x |ref| (worst x{error:.3g})",
                )
            return Judgement(ok, error, tolerance, reason, details)
        ok, reason = judge_outputs(comparisons, {c.name: tolerance for c in comparisons})
        return Judgement(ok, max(c.rel_error for c in comparisons), tolerance, reason, details)

    def held_outputs(self) -> tuple[str, ...]:
        """The outputs whose bound is set once, on seed a, and given back to the judge (`tolerance`) for seed b
        and the spot checks: those of a rule measured "once", or of a fixed rule written once for every output
        (its bound given back is the rule's own). A rule measured on each output judged holds nothing."""
        rules = self.spec.tolerances
        if self.spec.tolerance is not None:
            return (
                tuple(rules) if self.spec.tolerance.measure == "once" or self.spec.tolerance.rule != "baseline" else ()
            )
        return tuple(n for n, r in rules.items() if r.rule == "baseline" and r.measure == "once")

    def headline_output(self) -> str:
        """The output whose error and bound a per-output Judgement carries: the one whose bound is held, else the
        first."""
        held = self.held_outputs()
        return held[0] if held and self.spec.tolerance is None else self.spec.outputs[0].name

    def _bound(
        self,
        rule: Tolerance,
        names: list[str],
        params: Params,
        inputs: Arrays,
        ref: Arrays,
        held: float | None,
        details: dict[str, Any],
        first_baselines: Baselines | None,
        rows: Array | None = None,
    ) -> float:
        """The bound of the outputs `names` under `rule`: `held` where seed a set it, else the rule's."""
        if held is not None:
            if rule.rule == "baseline":
                details.update(vendor=None, vendor_error=None)
            return held
        if rule.rule == "rel_l2":
            return rule.rel_l2
        if rule.rule == "allclose":
            return 1.0  # the error is the worst |out - ref| / (atol + rtol |ref|)
        # on these very inputs (seed a's, or for "each" those of every output judged: where a few elements carry
        # the norm, a short row, a softmax with one large entry, a correct kernel's error moves with the inputs as
        # much as the baseline's does; H200, softmax_rows r1_c4097: a timed call's 3.3e-3 against 2.2e-3 from
        # seed a's inputs)
        error, who = self._rule_error(rule, names, params, inputs, ref, first_baselines, rows)
        if rule.measure == "once":
            details.update(vendor=who, vendor_error=error)
        else:
            details[f"{who or rule.baseline}_error"] = error
        base = error if error is not None and math.isfinite(error) else rule.default_error_on(params)
        bound = rule.factor * base + rule.floor_on(params)
        return bound if rule.ceiling is None else min(bound, rule.ceiling)

    def _rule_error(
        self,
        rule: Tolerance,
        names: list[str],
        params: Params,
        inputs: Arrays,
        ref: Arrays,
        first_baselines: Baselines | None = None,
        rows: Array | None = None,
    ) -> tuple[float, str] | tuple[None, None]:
        """(error, baseline): the first of the rule's baselines whose own error on `names` can be used: it runs
        (a baseline marked may_refuse that raises is skipped, any other's raise is the task's error), it gives
        those outputs, finite where the reference is, and its error is at most sanity x default_error where the
        rule says sanity. A lone baseline's error is used as measured (an infinite one: default_error)."""
        lone = len(rule.baselines) == 1 and rule.sanity is None
        for name in rule.baselines:
            try:
                if first_baselines is not None and name in first_baselines:
                    outs = first_baselines[name]
                else:
                    outs = self._task.baseline_outputs(name, params, inputs)
            except TaskError:
                if not self.spec.baselines[name].may_refuse:
                    raise
                continue
            if any(n not in outs for n in names):
                if lone:
                    raise TaskError(f"baseline {name} gives no {', '.join(n for n in names if n not in outs)}")
                continue
            outs = self.sampled_outputs(outs, rows)
            cmps = [self._task._compare(n, outs[n], ref[n]) for n in names]
            error = max(c.rel_error for c in cmps)
            if lone:
                return error, name
            sane = rule.sanity is None or error <= rule.sanity * rule.default_error_on(params)
            if all(c.bad_nonfinite == 0 for c in cmps) and math.isfinite(error) and sane:
                return error, name
        return None, None

    def baseline_error(self, name: str, params: Params, inputs: dict[str, Any], ref: dict[str, Any]) -> float | None:
        """The named baseline's own relative error on these inputs (the worst of its outputs)."""
        outs = self._task.baseline_outputs(name, params, inputs)
        return max(self._task._compare(n, outs[n], ref[n]).rel_error for n in self._task.output_names if n in outs)
