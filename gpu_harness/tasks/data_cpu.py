"""The generic task for the `cpu` target: numpy arrays, a C++ kernel built with g++, perf_counter timing.

Outputs travel to the judge through .npy files (a few MB at most; sides.FileOutputs); the judge computes on
the CPU. reference.py's functions get numpy arrays (data_task.py's conventions).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..taskspec import DTYPES
from ..verdict import TimingLimits, compare_numpy
from .base import TaskError
from .data_task import DataTask

if TYPE_CHECKING:
    from ..verdict import Comparison
    from .base import Array, Arrays


# The cpu target's own child environment: the candidate may not use threads (the dependency check refuses
# them), so numpy's BLAS gets one too, and no spinning helper threads steal the core the candidate runs on.
CPU_CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# A CPU timing on a shared box is noisier than CUDA events: its default host-clock agreement is looser.
CPU_HOST_CLOCK = {"host_ratio": 1.5, "host_overhead_ms": 0.2, "batch_latency_ms": 30.0}
FLUSH_BYTES = 16 * 1024 * 1024  # larger than the last-level cache share one core gets


class CpuCalls:
    """The child's side of a CPU task (sides.Calls): the cache flush and perf_counter."""

    def setup(self) -> dict[str, Any]:
        import numpy as np

        self._flush = np.empty(FLUSH_BYTES // 8)
        return {"device": "cpu"}

    def sync_error(self) -> str | None:
        return None

    def flush_cache(self, host_ms: float = 0.0) -> None:
        self._flush.fill(1.0)  # no device runs ahead of the host: nothing to keep busy for `host_ms`

    def time_call(self, thunk: Callable[[], object]) -> float:
        t0 = time.perf_counter()
        thunk()
        return (time.perf_counter() - t0) * 1e3

    def host_outran_flush(self) -> bool:
        return False  # the host clock is the timer: there is no device to wait

    def host_ms_after_flush(self) -> float:
        return 0.0  # nothing runs on a device while the host queues the call


class CpuDataTask(DataTask):
    # ---- environment ----
    def child_env(self) -> dict[str, str]:
        return {**super().child_env(), **CPU_CHILD_ENV}  # the target's own variables win, the user's too

    def timing_limits(self) -> TimingLimits:
        return TimingLimits(**{**CPU_HOST_CLOCK, **self.spec.host_clock})

    def library_versions(self) -> str:
        import numpy as np

        return f"numpy {np.__version__}"

    def judge_device(self) -> str:
        return "cpu"

    # ---- child side ----
    def new_calls(self) -> CpuCalls:
        return CpuCalls()

    def make_inputs(self, params: dict[str, Any], seed: int) -> Arrays:
        import numpy as np

        rng = np.random.default_rng(seed)
        out = {}
        for a in self.spec.inputs:
            shape, dtype, init = self.spec.shape(a, params), np.dtype(DTYPES[self.spec.dtype(a, params)].numpy), a.init
            assert init is not None  # (the reader gives every input its init)
            if init.dist == "normal":
                # (a dtype, not the scalar type np.float32, which has no `.type`: a half or integer input with a
                # mean or scale of its own failed on it)
                gen_dtype = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
                x = rng.standard_normal(shape, dtype=gen_dtype)
                if init.a != 0.0 or init.b != 1.0:
                    x = x * gen_dtype.type(init.b) + gen_dtype.type(init.a)
            elif init.dist == "uniform" and init.native:  # drawn in the array's own dtype (float32 or float64)
                x = rng.random(shape, dtype=dtype) * dtype.type(init.b - init.a) + dtype.type(init.a)
            elif init.dist == "uniform":
                x = rng.uniform(init.a, init.b, shape)
            elif init.dist == "integers":
                x = rng.integers(int(init.a), int(init.b), shape, endpoint=False)
            else:
                x = self._made_by_function(a.name, init.function, rng, shape, params)
            out[a.name] = np.ascontiguousarray(x, dtype=dtype)
        return out

    def _made_by_function(
        self, name: str, function: str, rng: object, shape: tuple[Any, ...], params: dict[str, Any]
    ) -> Any:
        """An input made by reference.py (e.g. a well-conditioned matrix), from the judge's generator."""
        import numpy as np

        x = np.asarray(self._call_maker(name, function, rng, shape, params))
        if x.shape != shape or x.dtype.kind not in "fiub":
            raise TaskError(f"{function} made input {name} of shape {x.shape} {x.dtype}, the ABI says {shape}")
        return x

    def new_outputs(self, params: dict[str, Any]) -> Arrays:
        import numpy as np

        outs = {
            a.name: np.empty(self.spec.shape(a, params), dtype=DTYPES[self.spec.dtype(a, params)].numpy)
            for a in self.spec.outputs
        }
        self.poison(outs)
        return outs

    def poison(self, outputs: Arrays) -> None:
        import numpy as np

        # NaN for floats (judge_outputs names what is left of it); a value a kernel rarely writes for integers
        for arr in outputs.values():
            if arr.dtype.kind == "f":
                arr.fill(float("nan"))
            else:
                arr.fill(np.iinfo(arr.dtype).min if arr.dtype.kind == "i" else np.iinfo(arr.dtype).max)

    # ---- parent side ----
    def parent_setup(self) -> dict[str, Any]:
        if not self._checked:
            self.self_check()
        return {"device": "cpu"}

    # ---- arrays ----
    def _reference_copy(self, arr: Array) -> Array:
        import numpy as np

        return arr.astype(np.dtype(self.spec.reference_precision)) if arr.dtype.kind == "f" else arr.copy()

    def _as_array(self, value: object) -> Array:
        import numpy as np

        return np.asarray(value)

    def _is_array(self, value: object) -> bool:
        import numpy as np

        return isinstance(value, np.ndarray)

    def _is_float(self, arr: Array) -> bool:
        return arr.dtype.kind == "f"

    def _is_integer(self, arr: Array) -> bool:
        return arr.dtype.kind in "iu"

    def _widened(self, arr: Array) -> Array:
        import numpy as np

        return arr.astype(np.float64) if arr.dtype.kind == "f" else arr

    def _any_nan(self, arr: Array) -> bool:
        import numpy as np

        return bool(np.isnan(arr).any())

    def _pointer(self, arr: Array) -> int:
        return arr.ctypes.data

    def _not_like(self, cand: Array, dtype: str, shape: tuple[int, ...]) -> str | None:
        import numpy as np

        if tuple(cand.shape) != tuple(shape) or cand.dtype != np.dtype(DTYPES[dtype].numpy):
            return f"shape {cand.shape} {cand.dtype}"
        return None

    def _compare(self, name: str, cand: Array, ref: Array) -> Comparison:
        return compare_numpy(name, cand, ref)

    def _random_indices(self, size: int, n: int, seed: int) -> Array:
        import numpy as np

        if n >= size:
            return np.arange(size)
        return np.sort(np.random.default_rng(seed).permutation(size)[:n])

    def _take(self, arr: Array, axis: int, rows: Array) -> Array:
        import numpy as np

        return np.take(arr, rows, axis=axis)

    def _nonfinite_count(self, arr: Array) -> int:
        import numpy as np

        return int(np.count_nonzero(~np.isfinite(arr))) if arr.dtype.kind == "f" else 0

    def _allclose_ratio(self, cand: Array, ref: Array, atol: float, rtol: float) -> float:
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
