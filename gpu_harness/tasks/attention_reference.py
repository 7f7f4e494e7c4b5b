"""The judge's fp32 attention references: a fused CUDA kernel on the GPU, torch everywhere else.

`reference()` is plain torch (fp32 products, chunks of query rows, about six passes over each chunk's
scores): it runs on any device and is the definition the tests check. `FusedReference` computes the same thing
in one CUDA kernel (attention_fwd_reference.cu: exact products on tensor cores, fp32 sums, online softmax,
causal tiles skipped); the judge uses it on the GPU when it builds, and the torch function otherwise. A GPU
test holds the two to each other.

torch is imported lazily: the scenario list and counts work without it.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Array


FUSED_SOURCE = Path(__file__).with_name("attention_fwd_reference.cu")
FUSED_HEAD_DIMS = (64, 96, 128, 192, 256)  # instantiated in the kernel; others use the torch reference


def _torch() -> ModuleType:
    import torch

    return torch


REFERENCE_CHUNK_ELEMS = 1 << 28  # scores held at once by the reference (1 GiB of fp32)


def reference(
    q: Array, k: Array, v: Array, causal: bool, scale: float, budget_elems: int | None = None, rows: Array = None
) -> tuple[Array, Array]:
    """fp32 attention in chunks of query rows: never materialises more than ~budget_elems scores.

    Inputs [B, S, H, D] (any float dtype, any device); returns O [B, Sq, Hq, D] and LSE [B, Hq, Sq] in fp32.
    Rows that see no key get O = 0 and LSE = -inf. `rows` (a 1-D index tensor of query positions): compute
    those rows only, returning O [B, len(rows), Hq, D] and LSE [B, Hq, len(rows)].

    (GEMMs in TF32 on split operands were measured 1.1x to 1.3x faster on the largest shapes: the cost is the
    elementwise passes over the scores, not the products; see docs/benchmarks.md.)
    """
    torch = _torch()
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    rep = Hq // Hkv
    positions = torch.arange(Sq, device=q.device) if rows is None else rows.to(q.device)
    if rows is not None:
        q = q[:, positions]
    n = positions.numel()
    qf = q.permute(0, 2, 1, 3).float()  # B, Hq, n, D
    kf = k.permute(0, 2, 1, 3).float().repeat_interleave(rep, dim=1)  # B, Hq, Sk, D
    vf = v.permute(0, 2, 1, 3).float().repeat_interleave(rep, dim=1)
    o = torch.empty((B, Hq, n, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((B, Hq, n), dtype=torch.float32, device=q.device)
    chunk = max(1, min(n, (budget_elems or REFERENCE_CHUNK_ELEMS) // max(1, B * Hq * Sk)))
    kt = kf.transpose(-1, -2)
    cols = torch.arange(Sk, device=q.device)
    for i0 in range(0, n, chunk):
        i1 = min(n, i0 + chunk)
        # in place where possible: the passes over the scores, not the products, are most of the cost
        s = torch.matmul(qf[:, :, i0:i1], kt).mul_(scale)  # B, Hq, c, Sk
        if causal:
            hidden = cols[None, :] > (positions[i0:i1, None] + (Sk - Sq))
            s.masked_fill_(hidden, float("-inf"))
        m = s.amax(dim=-1)  # -inf for rows that see nothing
        safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        p = s.sub_(safe[..., None]).exp_()  # exp(-inf) = 0 on hidden keys
        total = p.sum(dim=-1)  # 0 for rows that see nothing
        out = torch.matmul(p, vf)
        del s, p
        o[:, :, i0:i1] = torch.where(total[..., None] > 0, out / total[..., None], torch.zeros_like(out))
        lse[:, :, i0:i1] = safe + torch.log(total)  # log 0 = -inf for rows that see nothing
    return o.permute(0, 2, 1, 3), lse


class FusedReference:
    """The fused kernel, built in the background (through the candidates' build cache: compiled once per
    machine and compiler) and called on torch's current stream.

    `start()` begins the build; `__call__` waits for it and returns (O, LSE) like `reference()` (O
    [B, n, Hq, D] and LSE [B, Hq, n] in fp32), or None where the kernel cannot serve (no build, a head_dim it
    does not instantiate): the caller then uses `reference()`. `note` says which one is in use and why.
    `compare` is the same library's one-pass comparison of an output with its reference."""

    def __init__(self, source: Path = FUSED_SOURCE) -> None:
        self._source = source
        self._thread: threading.Thread | None = None
        self._fn: ctypes._NamedFuncPointer | None = None
        self._compare: ctypes._NamedFuncPointer | None = None
        self.note = "fused fp32 kernel: not built"
        self.build_s: float | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._build, name="kseek-reference-build", daemon=True)
            self._thread.start()

    def _build(self) -> None:
        from ..build import build

        try:
            b = build(self._source, "cuda")
            self.build_s = b.compile_s
            if not b.ok:
                self.note = f"torch fp32 (the fused reference kernel did not build: {b.reason})"
                return
            lib = ctypes.CDLL(b.lib_path, mode=ctypes.RTLD_LOCAL)
            fn = lib.kseek_reference_attention_fwd
            vp, ci = ctypes.c_void_p, ctypes.c_int
            fn.argtypes = [vp] * 6 + [ci] * 9 + [ctypes.c_float, vp]
            fn.restype = ci
            compare = lib.kseek_reference_compare
            compare.argtypes = [vp, ci, vp, ctypes.c_longlong, vp, vp]
            compare.restype = ci
            self._fn, self._compare = fn, compare
            self.note = "fused fp32 kernel" + (" (cached build)" if b.cache_hit else "")
        except Exception as e:
            self.note = f"torch fp32 (the fused reference kernel could not be loaded: {type(e).__name__}: {e})"

    def ready(self, timeout_s: float | None = None) -> bool:
        self.start()
        assert self._thread is not None  # (start made it)
        self._thread.join(timeout_s)
        return self._fn is not None

    def __call__(
        self, q: Array, k: Array, v: Array, causal: bool, scale: float, dtype: str, rows: Array = None
    ) -> tuple[Array, Array] | None:
        torch = _torch()
        B, Sq, Hq, D = q.shape
        Sk, Hkv = k.shape[1], k.shape[2]
        if not q.is_cuda or D not in FUSED_HEAD_DIMS or not self.ready():
            return None
        n = Sq if rows is None else rows.numel()
        o = torch.empty((B, n, Hq, D), dtype=torch.float32, device=q.device)
        lse = torch.empty((B, Hq, n), dtype=torch.float32, device=q.device)
        rows32 = None if rows is None else rows.to(device=q.device, dtype=torch.int32).contiguous()
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        assert self._fn is not None  # (ready)
        rc = self._fn(
            q.data_ptr(),
            k.data_ptr(),
            v.data_ptr(),
            o.data_ptr(),
            lse.data_ptr(),
            None if rows32 is None else rows32.data_ptr(),
            n,
            B,
            Sq,
            Sk,
            Hq,
            Hkv,
            D,
            0 if dtype == "bf16" else 1,
            int(bool(causal)),
            float(scale),
            torch.cuda.current_stream(q.device).cuda_stream,
        )
        if rc == -1:
            return None
        if rc != 0:
            raise RuntimeError(f"the fused reference kernel failed with CUDA error {rc}")
        return o, lse

    def compare(self, cand: Array, ref: Array) -> list[float] | None:
        """[missed, specials, sum (c - r)^2, sum r^2] of the output `cand` (bf16, fp16 or fp32) against the fp32
        reference `ref` of the same shape, as compare_torch defines them, from one kernel on torch's current
        stream; None where the kernel cannot serve (the caller then compares with torch)."""
        torch = _torch()
        code = {torch.bfloat16: 0, torch.float16: 1, torch.float32: 2}.get(cand.dtype)
        if (
            code is None
            or not cand.is_cuda
            or ref.device != cand.device
            or ref.dtype != torch.float32
            or cand.shape != ref.shape
            or not self.ready()
            or self._compare is None
        ):
            return None
        cand, ref = cand.contiguous(), ref.contiguous()
        figures = torch.empty(4, dtype=torch.float64, device=cand.device)
        rc = self._compare(
            cand.data_ptr(),
            code,
            ref.data_ptr(),
            cand.numel(),
            figures.data_ptr(),
            torch.cuda.current_stream(cand.device).cuda_stream,
        )
        if rc != 0:
            raise RuntimeError(f"the fused comparison kernel failed with CUDA error {rc}")
        return figures.tolist()
