"""The generic task: a Task made from a task folder (gpu_harness/taskspec.py), for the `cpu` target.

The folder gives data (the ABI, how inputs are made, scenarios, tolerance, baselines, formulas) and
reference.py's plain functions; everything that makes a verdict trustworthy stays here and in evaluate.py,
where a task cannot change it: the candidate runs in the child process, on inputs made from seeds the judge
picks; its outputs are poisoned (NaN) before each call and copied out of the child before they are judged;
a second seed is held to the first one's tolerance; a repeat on the same inputs must match bit for bit; the
outputs of randomly chosen timed calls are judged too; the parent's clock cross-checks the child's timer; the
build passes the dependency checks. The reference and the baselines' own error are computed here, in the
parent, from the regenerated inputs: nothing the child says about correctness is trusted.

reference.py's conventions (cpu target: numpy arrays):
- the reference, `def reference(**args)`: takes every input (as a float64 copy when it is a float tensor)
  and every scalar by name, and returns the outputs: one array, a tuple in the ABI's order, or a dict by name;
- a function baseline takes every argument by name, outputs included, and writes the outputs in place, like
  the kernel (it gets the inputs in their own dtype).
A reference that raises or returns the wrong shape is the task's error (TaskError), never the candidate's.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import math
import os
import sys
import time
import traceback
from pathlib import Path

from ..taskspec import DTYPES, SpecProblem, TaskSpec, TaskSpecError
from ..verdict import Comparison, TimingLimits, compare_numpy, judge_outputs
from .base import Judgement, Scenario, Task, TaskError

# The cpu target's own child environment: the candidate may not use threads (the dependency check refuses
# them), so numpy's BLAS gets one too, and no spinning helper threads steal the core the candidate runs on.
CPU_CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# A CPU timing on a shared box is noisier than CUDA events: its default host-clock agreement is looser.
CPU_HOST_CLOCK = {"host_ratio": 1.5, "host_overhead_ms": 0.2, "batch_latency_ms": 30.0}
FLUSH_BYTES = 16 * 1024 * 1024  # larger than the last-level cache share one core gets
_SCALAR_CTYPES = {"int32": ctypes.c_int, "int64": ctypes.c_int64, "float32": ctypes.c_float, "float64": ctypes.c_double}


class DataTask(Task):
    """A task read from a folder. One instance per folder (the registry caches it); it holds no state of one
    evaluation beyond what the base class's exchange keeps."""

    def __init__(self, spec: TaskSpec):
        if not spec.target.supported:
            raise TaskSpecError(
                [
                    SpecProblem(
                        str(spec.folder / "task.toml"),
                        "target",
                        f"{spec.target.name} is declared in the format but not supported yet by the generic task "
                        "(it runs the cpu target)",
                    )
                ]
            )
        self.spec = spec
        self.name = spec.name
        self.language = spec.target.language
        self.needs_gpu = spec.target.needs_gpu
        self.symbol = spec.symbol
        self.abi = spec.abi()
        self.description = spec.description
        self.target = spec.target.name
        self.tolerance_text = spec.tolerance.describe()
        self.flops_text = spec.flops.text
        self.starting_kernel = spec.starting_kernel or self._stub_file()
        self.default_baselines = spec.default_baselines
        self.timing_overrides = dict(spec.timing)
        self.output_names = tuple(a.name for a in spec.outputs)
        self.baselines_to_warm = tuple(n for n, b in spec.baselines.items() if b.warm)
        self.call_timeout_base_s = spec.call_timeout_base_s
        self.call_timeout_min_rate = spec.call_timeout_min_rate
        self.goal = {"baseline": spec.goal_baseline, "speedup": spec.goal_speedup}
        self.cheats_dir = spec.cheats
        self._scenarios = [
            Scenario(sc.id, dict(sc.params), flops=float(spec.flops(sc.params)), bytes=float(self._bytes(sc.params)))
            for sc in spec.scenarios
        ]
        self._module = None
        self._checked = False

    def _bytes(self, params: dict) -> float:
        if self.spec.bytes is not None:
            return self.spec.bytes(params)
        # compulsory traffic: every tensor read (inputs) or written (outputs) once
        return sum(
            math.prod(self.spec.shape(a, params)) * DTYPES[a.dtype].itemsize for a in self.spec.args if a.is_tensor
        )

    def _stub_file(self) -> Path:
        """No starting kernel: the agent starts from a stub that says "not supported" for every shape."""
        from ..build import cache_dir
        from ..taskscaffold import stub_kernel

        source = stub_kernel(self.spec)
        path = cache_dir() / "stubs" / f"{self.name}-{hashlib.sha256(source.encode()).hexdigest()[:12]}.cpp"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)
        return path

    def baseline_descriptions(self) -> dict[str, str]:
        return {name: b.describe(self.spec.folder) for name, b in self.spec.baselines.items()}

    # ---- scenario lists ----
    def scenarios(self) -> list[Scenario]:
        return list(self._scenarios)

    def quick_ids(self) -> list[str]:
        return list(self.spec.quick_ids)

    # ---- environment ----
    def child_env(self) -> dict[str, str]:
        return {**self.spec.child_env, **CPU_CHILD_ENV}  # the target's own variables win

    def timing_limits(self):
        return TimingLimits(**{**CPU_HOST_CLOCK, **self.spec.host_clock})

    def versions(self) -> str:
        import numpy as np

        return f"numpy {np.__version__}"

    def reference_note(self) -> str:
        return f"{self.spec.reference_path.name}:{self.spec.reference_function} on float64 copies of the inputs"

    def baseline_availability(self, names):
        known = self.spec.baselines
        return {n: (None if n in known else f"unknown baseline {n!r} (known: {', '.join(known)})") for n in names}

    def baseline_libs(self, names) -> dict[str, str]:
        from ..build import build

        out = {}
        for name in names:
            b = self.spec.baselines.get(name)
            if b is None or b.kernel is None:
                continue
            built = build(b.kernel, self.language)
            if not built.ok:
                raise RuntimeError(f"the {name} baseline does not build: {built.reason}")
            out[name] = built.lib_path
        return out

    # ---- reference.py ----
    def module(self):
        """reference.py, imported once per process (in the parent and, for function baselines, the child)."""
        if self._module is None:
            path = self.spec.reference_path
            modname = f"kseek_task_{self.name}_reference"
            try:
                spec = importlib.util.spec_from_file_location(modname, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[modname] = module
                spec.loader.exec_module(module)
            except Exception as e:
                sys.modules.pop(modname, None)
                raise TaskError(f"{path} does not import: {_where(e, path)}") from e
            self._module = module
        return self._module

    def function(self, name: str):
        fn = getattr(self.module(), name, None)
        if not callable(fn):
            raise TaskError(f"{self.spec.reference_path} has no function {name!r}")
        return fn

    def scalar_values(self, params: dict) -> dict:
        out = {}
        for a in self.spec.scalars:
            v = a.value(params)
            out[a.name] = int(v) if a.dtype.startswith("int") else float(v)
        return out

    def reference_outputs(self, params: dict, inputs: dict) -> dict:
        """The reference's outputs (float64 for float outputs); TaskError when it raises or returns the wrong
        thing: the task is broken, the candidate is not to blame."""
        import numpy as np

        copies = {n: (a.astype(np.float64) if a.dtype.kind == "f" else a.copy()) for n, a in inputs.items()}
        fn = self.function(self.spec.reference_function)
        path = self.spec.reference_path
        try:
            got = fn(**copies, **self.scalar_values(params))
        except Exception as e:
            raise TaskError(f"the reference raised on {_params(params)}: {_where(e, path)}") from e
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
        result = {}
        for o, value in zip(outs, got, strict=True):
            arr = np.asarray(value)
            want = self.spec.shape(o, params)
            if arr.shape != want:
                raise TaskError(
                    f"the reference's {o.name} has shape {arr.shape}, the ABI says {want} on {_params(params)}"
                )
            kind = DTYPES[o.dtype].kind
            if not (arr.dtype.kind == "f" if kind == "float" else arr.dtype.kind in "iu"):
                raise TaskError(f"the reference's {o.name} has dtype {arr.dtype}, expected {kind} values for {o.dtype}")
            result[o.name] = arr.astype(np.float64) if kind == "float" else arr
        return result

    def self_check(self) -> dict:
        """Run the reference (and each function baseline) on the smallest scenario: a broken task is found
        before any candidate is judged against it. Returns facts for `task check`."""
        import numpy as np

        sc = self.spec.smallest_scenario()
        params = sc.params
        inputs = self.make_inputs(params, 12345)
        self.reference_outputs(params, inputs)
        facts = {"scenario": sc.id}
        for name, b in self.spec.baselines.items():
            if not b.function:
                continue
            outs = self.new_outputs(params)
            self.run_function_baseline(name, params, inputs, outs)
            unwritten = [n for n, a in outs.items() if a.dtype.kind == "f" and np.isnan(a).any()]
            if unwritten:
                raise TaskError(f"baseline {name} left {', '.join(unwritten)} unwritten (NaN) on {sc.id}")
        self._checked = True
        return facts

    def run_function_baseline(self, name: str, params: dict, inputs: dict, outputs: dict) -> None:
        fn = self.function(self.spec.baselines[name].function)
        try:
            fn(**inputs, **outputs, **self.scalar_values(params))
        except Exception as e:
            raise TaskError(
                f"baseline {name} raised on {_params(params)}: {_where(e, self.spec.reference_path)}"
            ) from e

    # ---- child side ----
    def child_setup(self) -> dict:
        import numpy as np

        self._flush = np.empty(FLUSH_BYTES // 8)
        return {"device": "cpu"}

    def bind(self, lib):
        fn = getattr(lib, self.symbol)
        fn.argtypes = [ctypes.c_void_p if a.is_tensor else _SCALAR_CTYPES[a.dtype] for a in self.spec.args]
        fn.restype = ctypes.c_int
        return fn

    def make_inputs(self, params, seed):
        import numpy as np

        rng = np.random.default_rng(seed)
        out = {}
        for a in self.spec.inputs:
            shape, dtype, init = self.spec.shape(a, params), np.dtype(DTYPES[a.dtype].numpy), a.init
            if init.dist == "normal":
                gen_dtype = dtype if dtype in (np.float32, np.float64) else np.float32
                x = rng.standard_normal(shape, dtype=gen_dtype)
                if init.a != 0.0 or init.b != 1.0:
                    x = x * gen_dtype.type(init.b) + gen_dtype.type(init.a)
            elif init.dist == "uniform":
                x = rng.uniform(init.a, init.b, shape)
            elif init.dist == "integers":
                x = rng.integers(int(init.a), int(init.b), shape, endpoint=False)
            else:
                x = self._made_by_function(a.name, init.function, rng, shape, params)
            out[a.name] = np.ascontiguousarray(x, dtype=dtype)
        return out

    def _made_by_function(self, name: str, function: str, rng, shape: tuple, params: dict):
        """An input made by reference.py (e.g. a well-conditioned matrix), from the judge's generator."""
        import numpy as np

        try:
            x = np.asarray(self.function(function)(rng, shape, dict(params)))
        except TaskError:
            raise
        except Exception as e:
            raise TaskError(
                f"{function} (input {name}) raised on {_params(params)}: {_where(e, self.spec.reference_path)}"
            ) from e
        if x.shape != shape or x.dtype.kind not in "fiub":
            raise TaskError(f"{function} made input {name} of shape {x.shape} {x.dtype}, the ABI says {shape}")
        return x

    def new_outputs(self, params):
        import numpy as np

        outs = {a.name: np.empty(self.spec.shape(a, params), dtype=DTYPES[a.dtype].numpy) for a in self.spec.outputs}
        self.poison(outs)
        return outs

    def poison(self, outputs):
        import numpy as np

        # NaN for floats (judge_outputs names what is left of it); a value a kernel rarely writes for integers
        for arr in outputs.values():
            if arr.dtype.kind == "f":
                arr.fill(float("nan"))
            else:
                arr.fill(np.iinfo(arr.dtype).min if arr.dtype.kind == "i" else np.iinfo(arr.dtype).max)

    def invoke(self, fn, inputs, outputs, params):
        scalars = self.scalar_values(params)
        args = []
        for a in self.spec.args:
            if a.kind == "input":
                args.append(inputs[a.name].ctypes.data)
            elif a.kind == "output":
                args.append(outputs[a.name].ctypes.data)
            else:
                args.append(scalars[a.name])
        return int(fn(*args))

    def flush_cache(self):
        self._flush.fill(1.0)

    def time_call(self, thunk) -> float:
        t0 = time.perf_counter()
        thunk()
        return (time.perf_counter() - t0) * 1e3

    def output_nbytes(self, params) -> int:
        return sum(math.prod(self.spec.shape(a, params)) * DTYPES[a.dtype].itemsize for a in self.spec.outputs)

    def baseline_callables(self, names, params, inputs, libs):
        out = {}
        for name in names:
            b = self.spec.baselines.get(name)
            if b is None:
                out[name] = f"unknown baseline {name!r}"
            elif b.kernel is not None:
                if name not in libs:
                    out[name] = f"{name} baseline library not loaded"
                    continue
                out[name] = _kernel_call(self, libs[name], inputs, self.new_outputs(params), params, name)
            else:
                fn = self.function(b.function)
                kwargs = {**inputs, **self.new_outputs(params), **self.scalar_values(params)}
                out[name] = lambda fn=fn, kwargs=kwargs: fn(**kwargs)
        return out

    # ---- parent side ----
    def parent_setup(self) -> dict:
        if not self._checked:
            self.self_check()
        return {"device": "cpu"}

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False) -> Judgement:
        # the outputs are small: a spot check is a full check here
        import numpy as np

        inputs = self.make_inputs(params, seed)
        ref = self.reference_outputs(params, inputs)
        rule = self.spec.tolerance
        details = {}
        if tolerance is None:
            if rule.rule == "baseline":
                details[f"{rule.baseline}_error"] = base_err = self._baseline_error(rule.baseline, params, inputs, ref)
                base = base_err if base_err is not None and math.isfinite(base_err) else rule.default_error
                tolerance = rule.factor * base + rule.floor
            elif rule.rule == "rel_l2":
                tolerance = rule.rel_l2
            else:
                tolerance = 1.0  # allclose: the error is the worst |out - ref| / (atol + rtol |ref|)
        for o in self.spec.outputs:
            cand, want = outputs.get(o.name), np.dtype(DTYPES[o.dtype].numpy)
            if cand is None or cand.shape != ref[o.name].shape or cand.dtype != want:
                got = "missing" if cand is None else f"shape {cand.shape} {cand.dtype}"
                return Judgement(
                    False, None, tolerance, f"{o.name}: output has {got}, expected {ref[o.name].shape} {want}"
                )
        cmps: list[Comparison] = [compare_numpy(o.name, outputs[o.name], ref[o.name]) for o in self.spec.outputs]
        if rule.rule == "allclose":
            ok, reason = judge_outputs(cmps, {c.name: math.inf for c in cmps})  # written and finite first
            error = max(_allclose_ratio(outputs[c.name], ref[c.name], rule.atol, rule.rtol) for c in cmps)
            if ok and not error <= tolerance:
                ok, reason = (
                    False,
                    f"some elements differ by more than {rule.atol:g} + {rule.rtol:g} x |ref| (worst x{error:.3g})",
                )
            return Judgement(ok, error, tolerance, reason, details)
        ok, reason = judge_outputs(cmps, {c.name: tolerance for c in cmps})
        return Judgement(ok, max(c.rel_error for c in cmps), tolerance, reason, details)

    def _baseline_error(self, name: str, params: dict, inputs: dict, ref: dict) -> float | None:
        """The named baseline's own relative error on these inputs (the worst of its outputs)."""
        outs = self.new_outputs(params)
        self.run_function_baseline(name, params, inputs, outs)
        return max(compare_numpy(n, outs[n], ref[n]).rel_error for n in self.output_names)


def _kernel_call(task: DataTask, fn, inputs, outputs, params, name):
    def call():
        rc = task.invoke(fn, inputs, outputs, params)
        if rc != 0:
            raise RuntimeError(f"the {name} baseline returned {rc} (configuration not supported)")

    return call


def _allclose_ratio(cand, ref, atol: float, rtol: float) -> float:
    import numpy as np

    c, r = np.asarray(cand, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    fin = np.isfinite(r)
    if not fin.any():
        return 0.0
    bound = atol + rtol * np.abs(r[fin])
    diff = np.abs(c[fin] - r[fin])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, diff / np.where(bound > 0, bound, 1.0), np.where(diff > 0, np.inf, 0.0))
    return float(ratio.max()) if ratio.size else 0.0


def _params(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _where(e: BaseException, path: Path) -> str:
    """The exception, with the line of reference.py it came from."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == Path(path).resolve()]
    at = f" ({path.name}, line {frames[-1].lineno})" if frames else ""
    if isinstance(e, SyntaxError) and e.lineno:
        at = f" ({path.name}, line {e.lineno})"
    return f"{type(e).__name__}: {e}{at}"
