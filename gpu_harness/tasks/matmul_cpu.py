"""matmul_cpu: float32 C = A @ B on the CPU, the candidate a C++ file compiled with g++.

It lets the whole system (agent loop included) run and be tested on machines without a GPU, through the same
flow and the same integrity checks as the GPU tasks: child process, fresh seeds, poisoned outputs, a second
seed, bitwise repeatability, dependency checks, timing cross-checked by the parent's clock.

Candidate ABI (row-major, contiguous):
    extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k);
    a: [m, k], b: [k, n], c: [m, n]; returns 0 on success, non-zero when the shape is not supported.
"""

from __future__ import annotations

import ctypes
import time

from ..verdict import Comparison, compare_numpy, judge_outputs, tolerance_from_vendor
from .base import REPO_ROOT, Judgement, Scenario, Task

# (m, n, k): tiny, odd (no tile divides them), square powers of two, skinny both ways.
SHAPES_FULL = [
    (1, 1, 1),
    (1, 257, 129),
    (7, 13, 5),
    (64, 64, 64),
    (127, 255, 65),
    (128, 128, 128),
    (129, 129, 129),
    (256, 256, 256),
    (300, 200, 100),
    (1000, 8, 1000),
    (8, 1000, 1000),
    (333, 333, 333),
    (512, 512, 512),
    (1024, 64, 256),
    (96, 1024, 384),
]
QUICK = [(1, 257, 129), (7, 13, 5), (127, 255, 65), (256, 256, 256), (1000, 8, 1000), (512, 512, 512)]

FLOOR = 1e-5  # float32 accumulation in any order lands far below this at these sizes
DEFAULT_ERROR = 1e-6  # used only if numpy's own error could not be measured


def scenario_id(m, n, k) -> str:
    return f"m{m}_n{n}_k{k}"


class MatmulCpu(Task):
    name = "matmul_cpu"
    language = "cpp"
    symbol = "kseek_matmul"
    output_names = ("c",)
    abi = 'extern "C" int kseek_matmul(const float* a, const float* b, float* c, int m, int n, int k);'
    starting_kernel = REPO_ROOT / "kernels" / "matmul_cpu" / "naive.cpp"
    default_baselines = ("numpy", "naive")
    timing_overrides = {"batch_ms": 100.0}  # longer batches: process wake-ups on a busy box are slow
    call_timeout_base_s = 10.0
    call_timeout_min_rate = 5e7  # 50 MFLOP/s: far below any honest kernel

    def scenarios(self) -> list[Scenario]:
        out = []
        for m, n, k in SHAPES_FULL:
            out.append(
                Scenario(
                    scenario_id(m, n, k),
                    {"m": m, "n": n, "k": k},
                    flops=2.0 * m * n * k,
                    bytes=4.0 * (m * k + k * n + m * n),
                )
            )
        return out

    def quick_ids(self) -> list[str]:
        return [scenario_id(*s) for s in QUICK]

    def child_env(self) -> dict[str, str]:
        # The candidate may not use threads; numpy's BLAS gets one too, and no spinning helper threads steal
        # the core the candidate runs on.
        return {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

    def timing_limits(self):
        # CPU timings on a shared box are noisier than CUDA events: a looser host-clock agreement.
        from ..verdict import TimingLimits

        return TimingLimits(host_ratio=1.5, host_overhead_ms=0.2, batch_latency_ms=30.0)

    def versions(self) -> str:
        import numpy as np

        return f"numpy {np.__version__}"

    def baseline_libs(self, names) -> dict[str, str]:
        if "naive" not in names:
            return {}
        from ..build import build

        b = build(self.starting_kernel, "cpp")
        if not b.ok:
            raise RuntimeError(f"the naive baseline does not build: {b.reason}")
        return {"naive": b.lib_path}

    # ---- child side ----
    def child_setup(self) -> dict:
        import numpy as np

        self._np = np
        self._flush = np.empty(16 * 1024 * 1024 // 8)  # 16 MiB: larger than the last-level cache share we use
        return {"device": "cpu"}

    def bind(self, lib):
        fn = getattr(lib, self.symbol)
        p = ctypes.POINTER(ctypes.c_float)
        fn.argtypes = [p, p, p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn

    def make_inputs(self, params, seed):
        import numpy as np

        rng = np.random.default_rng(seed)
        a = rng.standard_normal((params["m"], params["k"]), dtype=np.float32)
        b = rng.standard_normal((params["k"], params["n"]), dtype=np.float32)
        return {"a": a, "b": b}

    def new_outputs(self, params):
        import numpy as np

        c = np.empty((params["m"], params["n"]), dtype=np.float32)
        c.fill(np.nan)
        return {"c": c}

    def poison(self, outputs):
        outputs["c"].fill(float("nan"))

    def invoke(self, fn, inputs, outputs, params):
        p = ctypes.POINTER(ctypes.c_float)
        return int(
            fn(
                inputs["a"].ctypes.data_as(p),
                inputs["b"].ctypes.data_as(p),
                outputs["c"].ctypes.data_as(p),
                params["m"],
                params["n"],
                params["k"],
            )
        )

    def flush_cache(self):
        self._flush.fill(1.0)

    def time_call(self, thunk) -> float:
        t0 = time.perf_counter()
        thunk()
        return (time.perf_counter() - t0) * 1e3

    def baseline_callables(self, names, params, inputs, libs):
        import numpy as np

        out = {}
        for name in names:
            if name == "numpy":
                c = np.empty((params["m"], params["n"]), dtype=np.float32)
                out[name] = lambda c=c: np.matmul(inputs["a"], inputs["b"], out=c)
            elif name == "naive":
                if "naive" not in libs:
                    out[name] = "naive baseline library not loaded"
                    continue
                fn = libs["naive"]
                c = {"c": np.empty((params["m"], params["n"]), dtype=np.float32)}
                out[name] = lambda fn=fn, c=c: self.invoke(fn, inputs, c, params)
            else:
                out[name] = f"unknown baseline {name!r}"
        return out

    # ---- parent side ----
    def baseline_availability(self, names):
        return {
            n: (None if n in ("numpy", "naive") else f"unknown baseline {n!r} (known: numpy, naive)") for n in names
        }

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False) -> Judgement:
        # the outputs are small: a spot check is a full check here
        import numpy as np

        inp = self.make_inputs(params, seed)
        ref = inp["a"].astype(np.float64) @ inp["b"].astype(np.float64)
        vendor = None
        if tolerance is None:
            vendor = compare_numpy("c", np.matmul(inp["a"], inp["b"]), ref).rel_error
        tol = tolerance if tolerance is not None else tolerance_from_vendor(vendor, DEFAULT_ERROR, FLOOR)
        cand = outputs["c"]
        if cand.shape != ref.shape or cand.dtype != np.float32:
            return Judgement(False, None, tol, f"output has shape {cand.shape} {cand.dtype}, expected {ref.shape}")
        cmp: Comparison = compare_numpy("c", cand, ref)
        ok, reason = judge_outputs([cmp], {"c": tol})
        return Judgement(ok, cmp.rel_error, tol, reason, {"numpy_error": vendor})
