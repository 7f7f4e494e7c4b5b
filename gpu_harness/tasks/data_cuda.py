"""The generic task for the `cuda-sm90` target: torch tensors on the GPU, a .cu kernel built with nvcc.

The child makes the inputs on the GPU from the judge's seed (torch's CUDA generator: the parent regenerates
them bit for bit), poisons the outputs (NaN, or an integer's extreme), calls the kernel on the legacy default
stream and times it with CUDA events after flushing the L2; outputs travel to the judge through device
memory (exchange.py). The judge computes the reference on the GPU at the spec's precision (float64 by
default, TF32 off) and compares there. reference.py's functions get torch tensors (data_task.py's
conventions). `device="cpu"` runs the judge's side on the CPU: tests of the judge on machines without a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..verdict import TimingLimits
from .base import TaskError
from .cuda_device import (
    CudaCalls,
    DeviceOutputs,
    compare_torch,
    comparison,
    cuda_unavailable,
    identical_tensors,
    measure_peaks,
    torch_module,
)
from .data_task import DataTask

if TYPE_CHECKING:
    from ..taskspec import TaskSpec
    from ..verdict import Comparison
    from .base import Array, Arrays
    from .sides import JudgeSide


TORCH_DTYPES = {  # taskspec dtype -> torch's attribute
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
}


def torch_dtype(name: str) -> Any:
    return getattr(torch_module(), TORCH_DTYPES[name])


class CudaDataTask(DataTask):
    def __init__(self, spec: TaskSpec, device: str = "cuda") -> None:
        super().__init__(spec)
        self._device_name = device
        self._peaks: TimingLimits | None = None  # the card's, measured once per process

    def _device(self) -> Any:
        return torch_module().device(self._device_name)

    # ---- environment ----
    def runtime_unavailable(self) -> str | None:
        return cuda_unavailable()

    def library_versions(self) -> str:
        torch = torch_module()
        return f"torch {torch.__version__}, cuda {torch.version.cuda}"

    def judge_device(self) -> str:
        return self._device_name

    def new_judge(self) -> JudgeSide:
        if self.spec.ahead is None:
            return super().new_judge()
        from .judge_ahead import AheadJudge

        return AheadJudge(self)

    def timing_limits(self) -> TimingLimits:
        peaks = self._peaks or TimingLimits()
        return TimingLimits(peak_tflops=peaks.peak_tflops, peak_gbps=peaks.peak_gbps, **self.spec.host_clock)

    # ---- child side ----
    def new_calls(self) -> CudaCalls:
        return CudaCalls()

    def make_inputs(self, params: dict[str, Any], seed: int) -> Arrays:
        torch = torch_module()
        dev = self._device()
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        out = {}
        for a in self.spec.inputs:
            shape, dtype, init = self.spec.shape(a, params), torch_dtype(self.spec.dtype(a, params)), a.init
            assert init is not None  # (the reader gives every input its init)
            # half types are drawn in float32 and rounded, unless the init asks for torch's own draw in them
            wide = dtype if init.native or dtype in (torch.float32, torch.float64) else torch.float32
            if init.dist == "normal":
                x = torch.randn(shape, generator=g, device=dev, dtype=wide)
                if init.a != 0.0 or init.b != 1.0:
                    x = x * init.b + init.a
            elif init.dist == "uniform":
                x = torch.rand(shape, generator=g, device=dev, dtype=wide) * (init.b - init.a) + init.a
            elif init.dist == "integers":
                x = torch.randint(int(init.a), int(init.b), shape, generator=g, device=dev, dtype=torch.int64)
            else:
                x = self._made_by_function(a.name, init.function, g, shape, params)
            out[a.name] = x.to(device=dev, dtype=dtype).contiguous()
        return out

    def _made_by_function(
        self, name: str, function: str, generator: object, shape: tuple[Any, ...], params: dict[str, Any]
    ) -> Any:
        """An input made by reference.py, from the judge's generator (on the judge's device)."""
        torch = torch_module()
        x = self._call_maker(name, function, generator, shape, params)
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape or x.is_complex():
            got = f"shape {tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise TaskError(f"{function} made input {name} as {got}, the ABI says a tensor of shape {shape}")
        return x

    def new_outputs(self, params: dict[str, Any]) -> Arrays:
        torch = torch_module()
        outs = {
            a.name: torch.empty(
                self.spec.shape(a, params), dtype=torch_dtype(self.spec.dtype(a, params)), device=self._device()
            )
            for a in self.spec.outputs
        }
        self.poison(outs)
        return outs

    def poison(self, outputs: Arrays) -> None:
        torch = torch_module()
        # NaN for floats (judge_outputs names what is left of it); a value a kernel rarely writes for integers
        for t in outputs.values():
            if t.is_floating_point():
                t.fill_(float("nan"))
            else:
                info = torch.iinfo(t.dtype)
                t.fill_(info.min if info.min < 0 else info.max)

    # ---- outputs travel in device memory ----
    def _layout(self, params: dict[str, Any]) -> list[tuple[str, Any, tuple[int, ...]]]:
        return [
            (a.name, torch_dtype(self.spec.dtype(a, params)), self.spec.shape(a, params)) for a in self.spec.outputs
        ]

    def output_nbytes(self, params: dict[str, Any]) -> int:
        return DeviceOutputs(self._layout, self.output_names).nbytes(params)

    def new_exchange(self) -> DeviceOutputs:
        return DeviceOutputs(self._layout, self.output_names)

    def identical(self, outputs_a: Arrays, outputs_b: Arrays) -> bool:
        return all(identical_tensors(outputs_a[n], outputs_b[n]) for n in self.output_names)

    # ---- parent side ----
    def parent_setup(self) -> dict[str, Any]:
        torch = torch_module()
        # the reference is computed at its stated precision: no TF32 behind a float32 reference's back
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        if not self._checked:
            self.self_check()
        if self._device_name == "cpu":
            return {"device": "cpu"}
        if self._peaks is None:
            self._peaks = measure_peaks()
        if self.spec.ahead is not None:
            # this thread's GPU work (copying outputs out of their slots, comparing them) goes on a stream of the
            # highest priority: the work ahead runs on streams of the default, lowest one, so a comparison's
            # blocks get the next free SM before the next block of the work ahead
            if getattr(self, "_judge_stream", None) is None:
                self._judge_stream = torch.cuda.Stream(priority=-100)  # torch maps it to the highest there is
            torch.cuda.set_stream(self._judge_stream)
        return {
            "device": torch.cuda.get_device_name(),
            "peak_tflops": self._peaks.peak_tflops,
            "peak_gbps": self._peaks.peak_gbps,
        }

    # ---- tensors ----
    def _reference_copy(self, t: Array) -> Array:
        return t.to(torch_dtype(self.spec.reference_precision)) if t.is_floating_point() else t.clone()

    def _as_array(self, value: object) -> Array:
        torch = torch_module()
        if not isinstance(value, torch.Tensor):
            raise TaskError(f"the reference returned a {type(value).__name__}, not a torch tensor")
        return value.to(self._device())

    def _is_array(self, value: object) -> bool:
        return isinstance(value, torch_module().Tensor)

    def _is_float(self, t: Array) -> bool:
        return t.is_floating_point()

    def _is_integer(self, t: Array) -> bool:
        return not t.is_floating_point() and not t.is_complex() and t.dtype != torch_module().bool

    def _widened(self, t: Array) -> Array:
        return t.double() if t.is_floating_point() else t

    def _any_nan(self, t: Array) -> bool:
        return bool(t.isnan().any())

    def _pointer(self, t: Array) -> int:
        return t.data_ptr()

    def _not_like(self, cand: Array, dtype: str, shape: tuple[int, ...]) -> str | None:
        torch = torch_module()
        if not isinstance(cand, torch.Tensor):
            return type(cand).__name__
        if tuple(cand.shape) != tuple(shape) or cand.dtype != torch_dtype(dtype):
            return f"shape {tuple(cand.shape)} {str(cand.dtype).removeprefix('torch.')}"
        return None

    def _compare(self, name: str, cand: Array, ref: Array) -> Comparison:
        fast = self.fast_reference() if self._device_name != "cpu" else None
        compare = getattr(fast, "compare", None)
        figures = compare(cand, ref) if compare is not None else None  # one fused pass where it can serve
        return (
            compare_torch(name, cand.to(ref.device), ref)
            if figures is None
            else comparison(name, figures, cand.numel())
        )

    def _random_indices(self, size: int, n: int, seed: int) -> Array:
        torch = torch_module()
        if n >= size:
            return torch.arange(size, device=self._device())
        g = torch.Generator().manual_seed(seed)
        return torch.randperm(size, generator=g)[:n].sort().values.to(self._device())

    def _take(self, t: Array, axis: int, rows: Array) -> Array:
        return t.index_select(axis, rows.to(t.device))

    def _nonfinite_count(self, t: Array) -> int:
        return int((~torch_module().isfinite(t)).sum()) if t.is_floating_point() else 0

    def _allclose_ratio(self, cand: Array, ref: Array, atol: float, rtol: float) -> float:
        torch = torch_module()
        c, r = cand.to(ref.device).double(), ref.double()
        fin = torch.isfinite(r)
        if not bool(fin.any()):
            return 0.0
        bound = atol + rtol * r[fin].abs()
        diff = (c[fin] - r[fin]).abs()
        inf = torch.full_like(diff, float("inf"))
        ratio = torch.where(bound > 0, diff / torch.where(bound > 0, bound, 1.0), torch.where(diff > 0, inf, 0.0))
        return float(ratio.max()) if ratio.numel() else 0.0
