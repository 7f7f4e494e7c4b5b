"""The generic task: a Task made from a task folder (gpu_harness/taskspec/), whatever its target.

The folder gives data (the ABI, how inputs are made, scenarios, tolerance, baselines, formulas) and
reference.py's plain functions; everything that makes a verdict trustworthy stays here and in evaluate.py,
where a task cannot change it: the candidate runs in the child process, on inputs made from seeds the judge
picks; its outputs are poisoned before each call and copied out of the child before they are judged; a
second seed is held to the first one's tolerance; a repeat on the same inputs must match bit for bit; the
outputs of randomly chosen timed calls are judged too; the parent's clock cross-checks the child's timer; the
build passes the dependency checks. The reference and the baselines' own error are computed here, in the
parent, from the regenerated inputs: nothing the child says about correctness is trusted.

This class holds what does not depend on the target; its two subclasses hold what does (the arrays, the
clock, how outputs travel): data_cpu.py (numpy arrays, a C++ kernel) and data_cuda.py (torch tensors on
the GPU, a .cu kernel).

reference.py's conventions (arrays: numpy for the cpu target, torch tensors for cuda-sm90):
- the reference, `def reference(**args)`: takes every input (a copy at the reference's precision, float64
  unless `[reference] precision` says float32, when it is a float tensor) and every scalar by name, and
  returns the outputs: one array, a tuple in the ABI's order, or a dict by name;
- a function baseline takes every argument by name, outputs included, and writes the outputs in place, like
  the kernel (it gets the inputs in their own dtype);
- an input made by a function, `make_x(rng, shape, params)`: rng is a numpy Generator (cpu) or a
  torch.Generator on the judge's device (cuda-sm90).
A reference that raises or returns the wrong shape is the task's error (TaskError), never the candidate's.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import importlib.util
import math
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..taskspec import DTYPES, Arg, TaskSpec
from ..verdict import Comparison
from .base import Array, Arrays, Judgement, KernelFunction, Params, Scenario, Task, TaskError
from .data_target import TargetArrays
from .libraries import _import_note, module_version  # (reference.py files import module_version from here)
from .output_judge import OutputJudge
from .task_exit import TaskCodeExit, task_code

# what reference.py's code may raise that is the task's error, never the judge's end: any Exception, and
# SystemExit too (a sys.exit() in reference.py, at import or in a call, would otherwise end the judge's own
# process with the task's exit code and no verdict; an os._exit() inside `task_code()` raises TaskCodeExit, a
# SystemExit: task_exit.py)
TASK_CODE_ERRORS = (Exception, SystemExit)

SCALAR_CTYPES: dict[str, type[ctypes._SimpleCData[Any]]] = {
    "int32": ctypes.c_int,
    "int64": ctypes.c_int64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


class DataTask(Task, TargetArrays):
    """A task read from a folder. One instance per folder (the registry caches it); it holds no state of one
    evaluation (each evaluation's is its JudgeSide and ChildSide, sides.py), only what holds for every
    evaluation of the process: reference.py imported, the reference's self check passed."""

    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.target = spec.target.name
        self.language = spec.target.language
        self.needs_gpu = spec.target.needs_gpu
        self.symbol = spec.symbol
        self.abi = spec.abi()
        self.description = spec.description
        self.tolerance_text = spec.describe_tolerance()
        self.flops_text = spec.flops.text
        self.starting_kernel = spec.starting_kernel or self._stub_file()
        self.default_baselines = spec.default_baselines
        self.libraries = spec.libraries
        self.timing_overrides = dict(spec.timing)
        self.output_names = tuple(a.name for a in spec.outputs)
        self.baselines_to_warm = tuple(n for n, b in spec.baselines.items() if b.warm)
        self.call_timeout_base_s = spec.call_timeout_base_s
        self.call_timeout_min_rate = spec.call_timeout_min_rate
        self.baseline_threads = spec.baseline_threads
        self.goal = {"baseline": spec.goal_baseline, "speedup": spec.goal_speedup}
        self.cheats_dir = spec.cheats
        self._scenarios = [
            Scenario(sc.id, dict(sc.params), flops=float(spec.flops(sc.params)), bytes=float(self._bytes(sc.params)))
            for sc in spec.scenarios
        ]
        self._module: ModuleType | None = None
        self._checked = False
        self.judging = OutputJudge(self)  # the tolerance rules and the verdict (output_judge.py)

    def _bytes(self, params: Params) -> float:
        if self.spec.bytes is not None:
            return self.spec.bytes(params)
        # compulsory traffic: every tensor read (inputs) or written (outputs) once
        return sum(
            math.prod(self.spec.shape(a, params)) * DTYPES[self.spec.dtype(a, params)].itemsize
            for a in self.spec.args
            if a.is_tensor
        )

    def _stub_file(self) -> Path:
        """No starting kernel: the agent starts from a stub that says "not supported" for every shape."""
        from ..build import cache_dir
        from ..taskscaffold import stub_kernel

        source = stub_kernel(self.spec)
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        path = cache_dir() / "stubs" / f"{self.name}-{digest}{self.spec.target.source_suffix}"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)
        return path

    def child_env(self) -> dict[str, str]:
        """[child.env] as written, but for the variables the user set (theirs win; the target may add its own,
        data_cpu.py). "{cache}" in a value stays for the runner to resolve where the child starts: the harness's
        cache folder, or a contained child's own (runner.ChildSession)."""
        return {k: v for k, v in self.spec.child_env.items() if k not in os.environ}

    def baseline_descriptions(self) -> dict[str, str]:
        return {name: b.describe(self.spec.folder) for name, b in self.spec.baselines.items()}

    # ---- scenario lists ----
    def scenarios(self) -> list[Scenario]:
        return list(self._scenarios)

    def quick_ids(self) -> list[str]:
        return list(self.spec.quick_ids)

    def output_nbytes(self, params: Params) -> int:
        return sum(
            math.prod(self.spec.shape(a, params)) * DTYPES[self.spec.dtype(a, params)].itemsize
            for a in self.spec.outputs
        )

    # ---- baselines ----
    def baseline_availability(self, names: list[str]) -> dict[str, str | None]:
        known = self.spec.baselines
        out: dict[str, str | None] = {}
        for n in names:
            if n not in known:
                out[n] = f"unknown baseline {n!r} (known: {', '.join(known)})"
            else:
                out[n] = _import_note(known[n].requires)
        return out

    def baseline_libs(self, names: list[str]) -> dict[str, str]:
        from ..build import build

        out: dict[str, str] = {}
        for name in names:
            b = self.spec.baselines.get(name)
            if b is None or b.kernel is None:
                continue
            built = build(b.kernel, self.language)
            if not built.ok or built.lib_path is None:
                raise RuntimeError(f"the {name} baseline does not build: {built.reason}")
            out[name] = built.lib_path
        return out

    def baseline_callables(
        self, names: list[str], params: Params, inputs: Arrays, libs: dict[str, Any]
    ) -> dict[str, Callable[[], object] | str]:
        out: dict[str, Callable[[], object] | str] = {}
        for name in names:
            b = self.spec.baselines.get(name)
            if b is None:
                out[name] = f"unknown baseline {name!r}"
            elif b.kernel is not None:
                if name not in libs:
                    out[name] = f"{name} baseline library not loaded"
                    continue
                out[name] = _kernel_call(self, libs[name], inputs, self.new_outputs(params), params, name)
            elif (note := _import_note(b.requires)) is not None:
                out[name] = note
            else:
                fn = self.function(b.function)
                kwargs = {**inputs, **self.new_outputs(params), **self.scalar_values(params)}
                out[name] = functools.partial(fn, **kwargs)
        return out

    def _call_maker(self, name: str, function: str, rng: object, shape: tuple[Any, ...], params: Params) -> Any:
        """What reference.py's `function` returns for input `name` (init = {function = ...}), from the judge's
        generator; TaskError when it raises. The caller checks what it made against the ABI."""
        try:
            with task_code():
                return self.function(function)(rng, shape, dict(params))
        except TaskError:
            raise
        except TASK_CODE_ERRORS as e:
            raise TaskError(
                f"{function} (input {name}) {_did(e)} on {_params(params)}: {_where(e, self.spec.reference_path)}"
            ) from e

    def run_function_baseline(self, name: str, params: Params, inputs: Arrays, outputs: Arrays) -> Any:
        """Call the function baseline like the kernel; what it returns (None when it wrote `outputs` in place)."""
        fn = self.function(self.spec.baselines[name].function)
        try:
            with task_code():
                return fn(**inputs, **outputs, **self.scalar_values(params))
        except TASK_CODE_ERRORS as e:
            raise TaskError(
                f"baseline {name} {_did(e)} on {_params(params)}: {_where(e, self.spec.reference_path)}"
            ) from e

    def baseline_outputs(self, name: str, params: Params, inputs: dict[str, Any]) -> dict[str, Any]:
        """A function baseline's outputs on `inputs`, by name: those it wrote in place, or those it returned (a
        dict by name, which may give some outputs only, a tuple in the ABI's order, or one array for a task of
        one output), each of the ABI's shape; TaskError otherwise."""
        outs = self.new_outputs(params)
        got = self.run_function_baseline(name, params, inputs, outs)
        if got is None:
            return outs
        names = list(self.output_names)
        returned: Arrays
        if isinstance(got, dict):
            unknown = [k for k in got if k not in names]
            if unknown:
                raise TaskError(
                    f"baseline {name} returned {', '.join(map(str, unknown))}: not outputs ({', '.join(names)})"
                )
            returned = dict(got)
        elif isinstance(got, (tuple, list)):
            if len(got) != len(names):
                raise TaskError(f"baseline {name} returned {len(got)} values for {len(names)} output(s)")
            returned = dict(zip(names, got, strict=True))
        elif len(names) == 1:
            returned = {names[0]: got}
        else:
            raise TaskError(f"baseline {name} returned one value for {len(names)} outputs: return a dict by name")
        for o in self.spec.outputs:
            if o.name not in returned:
                continue
            arr = returned[o.name]
            want = self.spec.shape(o, params)
            if tuple(getattr(arr, "shape", ())) != want or not self._is_array(arr):
                got_text = f"shape {tuple(arr.shape)}" if hasattr(arr, "shape") else type(arr).__name__
                raise TaskError(
                    f"baseline {name} returned {o.name} as {got_text}, the ABI says {want} on {_params(params)}"
                )
        return returned

    # ---- reference.py ----
    def module(self) -> ModuleType:
        """reference.py, imported once per process (in the parent and, for function baselines, the child)."""
        if self._module is None:
            path = self.spec.reference_path
            modname = f"kseek_task_{self.name}_reference"
            try:
                # (importlib types the spec and its loader as optional; a .py path always has both)
                spec = importlib.util.spec_from_file_location(modname, path)
                module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
                sys.modules[modname] = module
                with task_code():
                    spec.loader.exec_module(module)  # type: ignore[union-attr]
            except TASK_CODE_ERRORS as e:
                sys.modules.pop(modname, None)
                raise TaskError(
                    f"{path} {_did(e, 'does not import', 'ended the process at import')}: {_where(e, path)}"
                ) from e
            self._module = module
        return self._module

    def missing_functions(self) -> list[Any]:
        """A SpecProblem (task.toml's file, field and line) for each function the spec names that reference.py does
        not define; imports reference.py (TaskError when it does not import)."""
        from ..taskspec import SPEC_FILE, SpecProblem

        module, path = self.module(), self.spec.folder / SPEC_FILE
        return [
            SpecProblem(
                str(path), where, f"{self.spec.reference_path} has no function {name!r}", self.spec.lines.get(where)
            )
            for where, name in self.spec.named_functions()
            if not callable(getattr(module, name, None))
        ]

    def function(self, name: str) -> Callable[..., Any]:
        fn: Callable[..., Any] | None = getattr(self.module(), name, None)
        if not callable(fn):
            raise TaskError(f"{self.spec.reference_path} has no function {name!r}")
        return fn

    def versions(self) -> str:
        """[baselines] versions where the task names its libraries, else the target's own (library_versions)."""
        own = self.task_versions()
        if own is not None:
            return own
        # the libraries the baselines require (QuACK's, say) where they are installed: a new version of one is
        # another baseline to time
        required = dict.fromkeys(m for b in self.spec.baselines.values() for entry in b.requires for m in entry)
        extra = [v for m in required if (v := module_version(m)) is not None]
        return ", ".join([self.library_versions(), *dict.fromkeys(extra)])

    def library_versions(self) -> str:
        """The libraries a target's baselines run on, where the task does not name them."""
        raise NotImplementedError

    def task_versions(self) -> str | None:
        """reference.py's [baselines] versions function: the library versions its baselines' timings depend on."""
        if not self.spec.versions_function:
            return None
        try:
            with task_code():
                return str(self.function(self.spec.versions_function)())
        except TaskError:
            raise
        except TASK_CODE_ERRORS as e:
            raise TaskError(f"{self.spec.versions_function} {_did(e)}: {_where(e, self.spec.reference_path)}") from e

    def scalar_values(self, params: Params) -> dict[str, Any]:
        out = {}
        for a in self.spec.scalars:
            assert a.value is not None  # (a scalar has its value: the reader refuses one without)
            v = a.value(params)
            out[a.name] = int(v) if self.spec.dtype(a, params).startswith("int") else float(v)
        return out

    def fast_reference(self) -> Any:
        """reference.py's faster reference ([reference] fast), or None. It is an object kept for the process:
        called like the reference (every input in its own dtype, every scalar, `sampled` when sampling) it returns
        the outputs, or None where it cannot serve (the reference function is then used); it may have `start()`
        (begin slow preparations, e.g. a build, in the background), `note` (what it is) and `compare(cand,
        ref)` ([missed, specials, sum (c - r)^2, sum r^2] of an output, or None: the harness compares)."""
        name = self.spec.reference_fast
        if not name:
            return None
        fast = getattr(self.module(), name, None)
        if not callable(fast):
            raise TaskError(f"{self.spec.reference_path} has no callable {name!r} ([reference] fast)")
        return fast

    def reference_outputs(self, params: Params, inputs: Arrays, rows: Array | None = None) -> Arrays:
        """The reference's outputs (float64 for float outputs, those of the fast reference at its own
        precision); TaskError when it raises or returns the wrong thing: the task is broken, the candidate is
        not to blame. `rows`: the sampled indices of a spot check ([spot_check]), given to reference.py as
        `sampled`: the outputs along the sampled axis hold those indices only."""
        path = self.spec.reference_path
        sampled = {} if rows is None else {"sampled": rows}
        fast, got = self.fast_reference(), None
        if fast is not None:
            try:
                with task_code():
                    got = fast(**inputs, **self.scalar_values(params), **sampled)
            except TASK_CODE_ERRORS as e:
                raise TaskError(f"the fast reference {_did(e)} on {_params(params)}: {_where(e, path)}") from e
        widen = got is None
        if got is None:
            copies = {n: self._reference_copy(a) for n, a in inputs.items()}
            fn = self.function(self.spec.reference_function)
            try:
                with task_code():
                    got = fn(**copies, **self.scalar_values(params), **sampled)
            except TASK_CODE_ERRORS as e:
                raise TaskError(f"the reference {_did(e)} on {_params(params)}: {_where(e, path)}") from e
        outs = self.spec.outputs
        if isinstance(got, dict):
            missing = [o.name for o in outs if o.name not in got]
            if missing:
                raise TaskError(f"the reference returned no {', '.join(missing)} on {_params(params)}")
            got = [got[o.name] for o in outs]
        elif len(outs) == 1 and not isinstance(got, (tuple, list)):
            got = [got]
        if not isinstance(got, (tuple, list)) or len(got) != len(outs):
            raise TaskError(f"the reference must return {len(outs)} output(s) ({', '.join(o.name for o in outs)})")
        result: Arrays = {}
        for o, value in zip(outs, got, strict=True):
            arr = self._as_array(value)
            want = self.sampled_shape(o, params, rows)
            if tuple(arr.shape) != want:
                raise TaskError(
                    f"the reference's {o.name} has shape {tuple(arr.shape)}, the ABI says {want} on {_params(params)}"
                )
            dtype = self.spec.dtype(o, params)
            kind = DTYPES[dtype].kind
            is_float = self._is_float(arr)
            if is_float != (kind == "float") or not (is_float or self._is_integer(arr)):
                raise TaskError(f"the reference's {o.name} has dtype {arr.dtype}, expected {kind} values for {dtype}")
            result[o.name] = self._widened(arr) if widen else arr
        return result

    # ---- sampled spot checks ([spot_check]) ----
    def sample_axis(self, arg: Arg) -> int | None:
        """The axis of output `arg` that a spot check samples (None: it is compared whole)."""
        sc = self.spec.spot_check
        return arg.shape.index(sc.sample) if sc is not None and sc.sample in arg.shape else None

    def sampled_shape(self, arg: Arg, params: Params, rows: Array | None) -> tuple[int, ...]:
        shape = self.spec.shape(arg, params)
        if rows is None or (axis := self.sample_axis(arg)) is None:
            return shape
        return (*shape[:axis], len(rows), *shape[axis + 1 :])

    def spot_rows(self, params: Params) -> Array | None:
        """The indices a spot check compares, drawn now (after the call) from os.urandom: the candidate cannot
        know them when it runs. None when the task samples nothing (a spot check is then a full check)."""
        sc = self.spec.spot_check
        if sc is None:
            return None
        size = int(params[sc.sample])
        n = min(size, max(sc.min_count, -(-size // sc.fraction)))
        return self._random_indices(size, n, int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))

    def whole_checks(self, outputs: dict[str, Any], params: Params) -> dict[str, Any]:
        """Over the whole outputs, without a reference: output name -> (non-finite where finite is due, wrong
        specials), from reference.py's [spot_check] whole function; without one, every element is due finite."""
        sc = self.spec.spot_check
        assert sc is not None  # (called for a task with [spot_check])
        if not sc.whole:
            return {n: (self._nonfinite_count(outputs[n]), 0) for n in self.output_names}
        path = self.spec.reference_path
        try:
            with task_code():
                got = self.function(sc.whole)(dict(outputs), dict(params))
            return {n: (int(got[n][0]), int(got[n][1])) for n in self.output_names}
        except TaskError:
            raise
        except TASK_CODE_ERRORS as e:
            raise TaskError(
                f"{sc.whole} ([spot_check] whole) {_did(e, 'failed')} on {_params(params)}: {_where(e, path)}"
            ) from e

    def sampled_comparisons(self, params: Params, outputs: Arrays, ref: Arrays, rows: Array) -> dict[str, Comparison]:
        """Each output's comparison on the sampled indices, its missed elements and wrong specials counted over
        the whole output too (an element left unwritten anywhere fails)."""
        whole = self.whole_checks(outputs, params)
        out: dict[str, Comparison] = {}
        for o in self.spec.outputs:
            axis = self.sample_axis(o)
            cand = outputs[o.name] if axis is None else self._take(outputs[o.name], axis, rows)
            c = self._compare(o.name, cand, ref[o.name])
            bad, special = whole[o.name]
            count = math.prod(self.spec.shape(o, params))
            out[o.name] = dataclasses.replace(  # an integer output's exact figures are those of the sampled indices
                c,
                bad_nonfinite=max(c.bad_nonfinite, bad),
                mismatched_special=max(c.mismatched_special, special),
                count=count,
            )
        return out

    def self_check(self) -> dict[str, Any]:
        """Run the reference (and each function baseline) on the smallest scenario: a broken task is found
        before any candidate is judged against it. Returns facts for `task check`."""
        missing = self.missing_functions()
        if missing:  # every one at once, each at its line of task.toml
            raise TaskError("; ".join(str(p) for p in missing))
        sc = self.spec.smallest_scenario()
        params = sc.params
        inputs = self.make_inputs(params, 12345)
        self.reference_outputs(params, inputs)
        facts: dict[str, Any] = {"scenario": sc.id, "device": self.judge_device()}
        for name, b in self.spec.baselines.items():
            if not b.function or _import_note(b.requires) is not None:
                continue  # a library not installed here: n/a for the timing, not a broken task
            try:
                outs = self.baseline_outputs(name, params, inputs)
            except TaskError as e:
                if not b.may_refuse:
                    raise
                facts.setdefault("refused", {})[name] = str(e).splitlines()[0][:200]
                continue
            unwritten = [n for n, a in outs.items() if self._is_float(a) and self._any_nan(a)]
            if unwritten:
                raise TaskError(f"baseline {name} left {', '.join(unwritten)} unwritten (NaN) on {sc.id}")
        if self.spec.spot_check is not None:  # a spot check's reference on sampled indices, and its whole check
            rows = self._random_indices(int(params[self.spec.spot_check.sample]), 1, 12345)
            self.reference_outputs(params, inputs, rows=rows)
            self.whole_checks(self.new_outputs(params), params)
        self._checked = True
        return facts

    # ---- the kernel's call ----
    def bind(self, lib: ctypes.CDLL) -> KernelFunction:
        fn: ctypes._NamedFuncPointer = getattr(lib, self.symbol)
        fn.argtypes = [SCALAR_CTYPES[str(a.dtype)] if a.kind == "scalar" else ctypes.c_void_p for a in self.spec.args]
        fn.restype = ctypes.c_int
        return fn

    def invoke(self, fn: KernelFunction, inputs: Arrays, outputs: Arrays, params: Params) -> int:
        scalars = self.scalar_values(params)
        args: list[int | float | None] = []
        for a in self.spec.args:
            if a.kind == "input":
                args.append(self._pointer(inputs[a.name]))
            elif a.kind == "output":
                args.append(self._pointer(outputs[a.name]))
            elif a.kind == "stream":
                args.append(None)  # 0: the legacy default stream, the one the timing's events are recorded on
            else:
                args.append(scalars[a.name])
        return int(fn(*args))

    def parent_prepare(self) -> None:
        # the fast reference's slow preparations (a build) run in the background while the candidate builds
        fast = self.fast_reference()
        if hasattr(fast, "start") and self.judge_device() != "cpu" and self.runtime_unavailable() is None:
            fast.start()

    def reference_note(self) -> str:
        fast = self.fast_reference()
        if isinstance(getattr(fast, "note", None), str) and self.judge_device() != "cpu":
            return str(fast.note)
        return (
            f"{self.spec.reference_path.name}:{self.spec.reference_function} on {self.spec.reference_precision}"
            f" copies of the inputs ({self.judge_device()})"
        )

    # ---- parent side ----
    def judge(
        self, params: Params, seed: int, outputs: Arrays, tolerance: float | None = None, spot_check: bool = False
    ) -> Judgement:
        # a spot check compares indices sampled now where the task says so ([spot_check]); else it is a full check
        rows = self.spot_rows(params) if spot_check else None
        inputs = self.make_inputs(params, seed)
        ref = self.reference_outputs(params, inputs, rows=rows)
        return self.judging.judge_against(params, inputs, ref, outputs, tolerance, rows=rows)


def _kernel_call(
    task: DataTask, fn: KernelFunction, inputs: Arrays, outputs: Arrays, params: Params, name: str
) -> Callable[[], None]:
    def call() -> None:
        rc = task.invoke(fn, inputs, outputs, params)
        if rc != 0:
            raise RuntimeError(f"the {name} baseline returned {rc} (configuration not supported)")

    return call


def _params(params: Params) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _did(e: BaseException, otherwise: str = "raised", ended: str = "ended the process") -> str:
    """What task code did that ended it: os._exit() ended the process (and nothing was raised by the code itself)."""
    return ended if isinstance(e, TaskCodeExit) else otherwise


def _where(e: BaseException, path: Path) -> str:
    """The exception, with the line of reference.py it came from (os._exit's call as it was written)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == Path(path).resolve()]
    at = f" ({path.name}, line {frames[-1].lineno})" if frames else ""
    if isinstance(e, SyntaxError) and e.lineno:
        at = f" ({path.name}, line {e.lineno})"
    if isinstance(e, TaskCodeExit):
        return f"{e}, exit code {e.exit_code}{at}"
    return f"{type(e).__name__}: {e}{at}"
