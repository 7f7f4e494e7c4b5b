"""What every CUDA task does the same way: time a call, flush the cache, wait for the device, move outputs
through the device exchange, compare on the device, measure the card's peaks.

Used by the generic cuda-sm90 task (data_cuda.py) and its judge ahead (judge_ahead.py). torch is imported lazily:
importing this module costs nothing on a host without it.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..exchange import DeviceExchange, aligned
from ..verdict import Comparison, TimingLimits, difference_text

if TYPE_CHECKING:
    from .base import Array


FLUSH_BYTES = 256 << 20  # > 4x the H200's 60 MB L2
SLEEP_CYCLES = 1_000_000  # ~0.5 ms of GPU spin before each timed call: the launch is queued before the
# start event runs, so CPU launch overhead is not counted (for anyone). 0.1 ms
# was too short for torch's cuDNN path (H200, 2026-11-30: 495 vs 591 TFLOP/s)
MAX_CYCLES_PER_MS = 2_000_000  # no Hopper SM runs above 2 GHz: this many cycles a ms last at least that long
SPIN_COVERS_MS = 10.0  # the longest host path a spin is lengthened for: a call that synchronizes would ask for
# ever longer spins, and its wait stays in its time whatever the spin (the host-wait note says so)


def spin_cycles(host_ms: float) -> int:
    """The pre-call spin for a call whose host path is expected to take `host_ms` after the flush: at least
    SLEEP_CYCLES, and twice that path at any clock up to 2 GHz (a library's Python path, handed to its thread,
    can outlast SLEEP_CYCLES: fa3-fwd's takes ~0.2 ms alone on an H100's host, 2026-12-07)."""
    return max(SLEEP_CYCLES, math.ceil(2 * min(max(host_ms, 0.0), SPIN_COVERS_MS) * MAX_CYCLES_PER_MS))


def torch_module() -> ModuleType:
    import torch

    return torch


def synchronize_stream() -> None:
    """Wait for this thread's current stream (not the device: work queued ahead on other streams goes on)."""
    torch = torch_module()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.current_stream().synchronize()


def cuda_unavailable() -> str | None:
    """None when candidates can run here; else why not."""
    try:
        torch = torch_module()
    except ImportError:
        return "torch is not installed here: compiled and checked only"
    if not torch.cuda.is_available():
        return "no CUDA GPU here: compiled and checked only"
    return None


def compare_torch(name: str, cand: Array, ref: Array) -> Comparison:
    """Comparison in float64 on the tensors' device (the definition; the attention judge uses the same figures
    from one fused kernel where it can, FusedReference.compare); the four figures come back in one transfer."""
    torch = torch_module()
    if _is_integer(cand) or _is_integer(ref):
        return _exact_torch(name, cand, ref)
    c = cand.double()
    r = ref.double()
    fin = torch.isfinite(r)
    good = fin & torch.isfinite(c)
    zero = torch.zeros((), dtype=torch.float64, device=r.device)
    figures = torch.stack(
        [
            (fin & ~good).sum().double(),
            (~fin & (c != r) & ~(torch.isnan(c) & torch.isnan(r))).sum().double(),
            torch.where(good, c - r, zero).square().sum(),
            torch.where(good, r, zero).square().sum(),
        ]
    ).tolist()
    return comparison(name, figures, c.numel())


def _is_integer(t: Array) -> bool:
    return not t.is_floating_point() and not t.is_complex()  # int8 ... int64, uint8, bool


def _exact_torch(name: str, cand: Array, ref: Array) -> Comparison:
    """An integer output against its reference, element by element in their own dtypes (no float64 rounding of
    large int64 values), as verdict.compare_numpy does on the CPU; the relative error is kept for the record."""
    torch = torch_module()
    if ref.numel() == 0:
        return Comparison(name, 0.0, 0, 0, 0, exact=True)
    differ = (cand != ref).reshape(-1)
    diff = torch.where(differ, cand.reshape(-1).double() - ref.reshape(-1).double(), 0.0)
    # count, first differing flat index (argmax of a 0/1 vector: its first 1), sum (c - r)^2, sum r^2
    count, first, num2, den2 = torch.stack(
        [differ.sum().double(), differ.to(torch.uint8).argmax().double(), diff.square().sum(),
         ref.double().square().sum()]
    ).tolist()  # fmt: skip
    rel = comparison(name, [0, 0, num2, den2], ref.numel()).rel_error
    text = ""
    if count:
        at = tuple(int(i) for i in torch.unravel_index(torch.tensor(int(first)), tuple(ref.shape)))
        text = difference_text(at, cand[at].item(), ref[at].item())
    return Comparison(name, rel, 0, 0, ref.numel(), exact=True, differing=int(count), first_difference=text)


def comparison(name: str, figures: Sequence[float], count: int) -> Comparison:
    """A Comparison from [missed, specials, sum (c - r)^2, sum r^2] over `count` elements."""
    bad, special, num2, den2 = figures
    num, den = math.sqrt(num2), math.sqrt(den2)
    rel = (0.0 if num == 0.0 else math.inf) if den == 0.0 else num / den
    return Comparison(name, rel, int(bad), int(special), count)


def identical_tensors(a: Array, b: Array) -> bool:
    """Bit for bit the same (compared as integers of the element's width, so NaN payloads and -0.0 count)."""
    torch = torch_module()
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and torch.equal(a.view(as_int[a.element_size()]), b.view(as_int[b.element_size()]))
    )


class CudaCalls:
    """The child's side of a CUDA task: the device, the cache flush and the event timer."""

    def setup(self) -> dict[str, Any]:
        torch = torch_module()
        try:  # the driver's symbols, for candidates that encode tensor maps (cuTensorMapEncodeTiled)
            ctypes.CDLL("libcuda.so.1", mode=os.RTLD_GLOBAL)
        except OSError:
            pass
        torch.cuda.init()
        self.device = torch.device("cuda")
        self._flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=self.device)
        self._events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        self._flush_done = torch.cuda.Event()
        self._outran = False
        self._flushed_at = self._returned_at = 0.0
        return {"device": torch.cuda.get_device_name(), "torch": torch.__version__}

    def flush_cache(self, host_ms: float = 0.0) -> None:
        self._flush.zero_()
        torch_module().cuda._sleep(spin_cycles(host_ms))
        self._flush_done.record()
        self._flushed_at = time.perf_counter()

    def time_call(self, thunk: Callable[[], object]) -> float:
        # events on the legacy default stream: it waits for, and is waited on by, every blocking stream, so
        # they cover work the candidate might push to other (blocking) streams
        start, end = self._events
        start.record()
        thunk()
        self._returned_at = time.perf_counter()
        # the flush's spin already over once the call's host path is: the GPU reached `start` and then waited on
        # the host (a long Python path, or a synchronizing call inside it), and the wait is in this time
        self._outran = self._flush_done.query()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def host_outran_flush(self) -> bool:
        return self._outran

    def host_ms_after_flush(self) -> float:
        return (self._returned_at - self._flushed_at) * 1e3

    @staticmethod
    def sync_error() -> str | None:
        try:
            torch_module().cuda.synchronize()
        except RuntimeError as e:
            return str(e).strip().splitlines()[0][:300]
        return None


class DeviceOutputs:
    """One end of one evaluation's output exchange (sides.OutputExchange) for outputs laid out as
    `layout(params)` says: a list of (name, torch dtype, shape), packed in that order, each on an `aligned`
    boundary (the parent computes the layout from the scenario; the child's message names only the slot).
    `names`: the outputs in the order the child packs them (the task's output_names, the layout's order).
    The scratch `folder` the exchange's methods are given is not used: the slots are device memory."""

    def __init__(
        self, layout: Callable[[dict[str, Any]], list[tuple[str, Any, tuple[int, ...]]]], names: tuple[str, ...]
    ) -> None:
        self._layout = layout
        self._names = tuple(names)
        self._exchange: DeviceExchange | None = None

    def _placed(self, params: dict[str, Any]) -> list[tuple[str, Any, tuple[int, ...], int, int]]:
        torch = torch_module()
        offset, out = 0, []
        for name, dtype, shape in self._layout(params):
            nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
            out.append((name, dtype, shape, offset, nbytes))
            offset += aligned(nbytes)
        return out

    @property
    def _ring(self) -> DeviceExchange:
        """The slots (made by create, or reached by attach)."""
        assert self._exchange is not None
        return self._exchange

    def nbytes(self, params: dict[str, Any]) -> int:
        placed = self._placed(params)
        return placed[-1][3] + placed[-1][4] if placed else 0

    def create(self, slot_bytes: int, slots: int, folder: str) -> dict[str, Any]:
        self._exchange, handle = DeviceExchange.create(slot_bytes, slots)
        return {"ipc_handle": handle}

    def export(self, outputs: dict[str, Any], slot: int) -> None:
        """Child: pack `outputs` (made by the task from the scenario, so shaped as the layout says) in the
        order of `names`, each on an aligned boundary, as `_placed` lays them out."""
        torch = torch_module()
        offset = 0
        for name in self._names:
            raw = outputs[name].reshape(-1).view(torch.uint8)
            self._ring.slot(slot, offset, raw.numel()).copy_(raw)
            offset += aligned(raw.numel())
        torch.cuda.synchronize()

    def attach(self, info: Any, slot_bytes: int, slots: int, folder: str) -> None:
        handle = info.get("ipc_handle") if isinstance(info, dict) else None
        if not isinstance(handle, str):
            raise ValueError("the child named no output exchange")
        self._exchange = DeviceExchange.attach(handle, slot_bytes, slots)

    def import_(self, params: dict[str, Any], slot: int) -> dict[str, Any]:
        out = {}
        for name, dtype, shape, offset, nbytes in self._placed(params):
            out[name] = self._ring.slot(slot, offset, nbytes).clone().view(dtype).reshape(shape)
        # the copy is done before the child may reuse the slot (this stream only: not the work ahead)
        torch_module().cuda.current_stream().synchronize()
        return out

    def close(self) -> None:
        if self._exchange is not None:
            self._exchange.close()
            self._exchange = None


def measure_peaks() -> TimingLimits:
    """The device's dense bf16 matrix rate and copy bandwidth, measured now (best of a few)."""
    torch = torch_module()
    n = 8192
    a = torch.randn((n, n), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, n), device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        torch.matmul(a, b)
    best_mm = best_cp = math.inf
    for _ in range(5):
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        best_mm = min(best_mm, start.elapsed_time(end))
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        best_cp = min(best_cp, start.elapsed_time(end))
    del a, b, src, dst
    torch.cuda.empty_cache()
    return TimingLimits(
        peak_tflops=2 * n**3 / (best_mm * 1e-3) / 1e12, peak_gbps=2 * (1 << 30) / (best_cp * 1e-3) / 1e9
    )
