"""attention_fwd: what is truly attention's, as plain functions on torch tensors (the cuda-sm90 target).

- `reference`: fp32 attention in chunks of query rows (`chunked_reference`: it never holds an Sq x Sk matrix for
  16k tokens), on the sampled query rows of a spot check when given `sampled`;
- `fused`: the same computation in one CUDA kernel (`FusedReference`: fused_reference.cu beside this file, built
  in the background through the candidates' build cache), and its one-pass comparison, which the judge uses on
  the GPU where it serves (a GPU test holds the two references to each other);
- the baselines: torch SDPA's cuDNN and flash (FlashAttention-2) backends, FlashAttention-3 (under either of its
  module names) and -4 where they import; SDPA's backend choice is process-wide state, held by `SDPA_LOCK` (the
  child times baselines on several threads, the judge computes cuDNN's outputs ahead on several);
- `whole`: a spot check's look at the whole outputs without a reference (rows that see no key: O = 0, LSE = -inf);
- `versions`: what the baselines' timings depend on (the baseline cache's key).

torch is imported lazily: the scenario list and `task check` work without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from gpu_harness.tasks.data_task import module_version

if TYPE_CHECKING:
    from gpu_harness.tasks.base import Array

FUSED_SOURCE = Path(__file__).with_name("fused_reference.cu")
FUSED_HEAD_DIMS = (64, 96, 128, 192, 256)  # instantiated in the kernel; others use the torch reference


# ---- the references: torch in chunks, and the fused kernel ----


def _torch() -> ModuleType:
    import torch

    return torch


REFERENCE_CHUNK_ELEMS = 1 << 28  # scores held at once by the reference (1 GiB of fp32)


def chunked_reference(
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
        from gpu_harness.build import build

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


# ---- what the task names ----

DTYPE_NAMES = {0: "bf16", 1: "fp16"}  # the ABI's dtype argument


def reference(q, k, v, causal, softmax_scale, sampled=None, **_):
    """O [B, Sq, Hq, D] and LSE [B, Hq, Sq] in fp32 (with `sampled`: those query rows only)."""
    return chunked_reference(q, k, v, bool(causal), softmax_scale, rows=sampled)


class _Fused:
    """[reference] fast: the fused kernel on the judge's GPU; None (the torch reference then serves) on the CPU
    or for a head_dim it does not instantiate."""

    def __init__(self):
        self._kernel = FusedReference()

    @property
    def note(self) -> str:
        return self._kernel.note

    def start(self) -> None:
        self._kernel.start()

    def __call__(self, q, k, v, causal, softmax_scale, dtype, sampled=None, **_):
        return self._kernel(q, k, v, bool(causal), softmax_scale, DTYPE_NAMES[dtype], rows=sampled)

    def compare(self, cand, ref):
        return self._kernel.compare(cand, ref)


fused = _Fused()


# ---- a spot check's whole-output look ----


def whole(outputs, params):
    """Over the whole outputs, without a reference: (non-finite where finite is due, wrong specials) for O and
    LSE. A query row sees no key only when causal and i < Sq - Sk: there O = 0 and LSE = -inf."""
    import torch

    o, lse = outputs["o"], outputs["lse"]
    sq, sk = params["seqlen_q"], params["seqlen_k"]
    sees = torch.ones(sq, dtype=torch.bool, device=o.device)
    if params["causal"] and sq > sk:
        sees[: sq - sk] = False
    return {
        "o": (int((~torch.isfinite(o)).sum()), int((o[:, ~sees] != 0).sum())),
        "lse": (int((~torch.isfinite(lse[:, :, sees])).sum()), int((lse[:, :, ~sees] != float("-inf")).sum())),
    }


# ---- the baselines ----


def cudnn(q, k, v, causal, softmax_scale, **_):
    return {"o": _sdpa("cudnn", q, k, v, causal, softmax_scale)}


def flash(q, k, v, causal, softmax_scale, **_):
    return {"o": _sdpa("flash", q, k, v, causal, softmax_scale)}


def fa3(q, k, v, causal, softmax_scale, **_):
    """FlashAttention-3 (flash-attention's hopper/ build) under either module name: `flash_attn_interface` (the full
    build) or `fa3_fwd_interface` (the fa3-fwd wheel: forward only, bf16 only, so n/a on fp16 scenarios)."""
    import torch

    module = _fa3_module()
    if module.__name__ == "fa3_fwd_interface" and q.dtype == torch.float16:
        raise NotImplementedError("fa3-fwd (fa3_fwd_interface) has no fp16 kernels: bf16 only")
    return {"o": _flash_attn(module.flash_attn_func, q, k, v, causal, softmax_scale)}


FA3_MODULES = ("flash_attn_interface", "fa3_fwd_interface")  # task.toml's fa3 requires one of them


def _fa3_module():
    import importlib

    for name in FA3_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"neither {' nor '.join(FA3_MODULES)} imports here")


def fa4(q, k, v, causal, softmax_scale, **_):
    from flash_attn.cute.interface import flash_attn_func

    return {"o": _flash_attn(flash_attn_func, q, k, v, causal, softmax_scale)}


_FLASH_ATTN_LOCK = threading.Lock()


def _flash_attn(flash_attn_func, q, k, v, causal, softmax_scale):
    # one call at a time: flash-attn-4 compiles each new shape (CuTe DSL), not known to be thread-safe
    with _FLASH_ATTN_LOCK:
        out = flash_attn_func(q, k, v, softmax_scale=softmax_scale, causal=bool(causal))
    return out[0] if isinstance(out, tuple) else out  # some versions return (out, lse)


def _sdpa(backend, q, k, v, causal, softmax_scale):
    """torch's scaled_dot_product_attention with only `backend` enabled; O as [B, Sq, Hq, D] (a view)."""
    import torch

    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # B, H, S, D views
    kwargs = {"scale": softmax_scale}
    if q.shape[2] != k.shape[2]:
        kwargs["enable_gqa"] = True
    if causal:
        if q.shape[1] == k.shape[1]:
            kwargs["is_causal"] = True
        else:
            from torch.nn.attention.bias import causal_lower_right

            kwargs["attn_mask"] = causal_lower_right(q.shape[1], k.shape[1])
    with SDPA_LOCK.hold(backend):  # only this backend is enabled while the call picks one
        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, **kwargs).transpose(1, 2)


class SdpaBackendLock:
    """Which SDPA backend torch may pick is process-wide state (`sdpa_kernel` sets global flags and restores
    them on exit), so two threads calling SDPA with different backends, or one leaving its `sdpa_kernel` while
    another has just entered, could run the wrong library. Here threads that want the same backend share it;
    a thread wanting another waits until they are done. The flags are set when the backend changes and put
    back when the last holder leaves."""

    def __init__(self):
        self._cv = threading.Condition()
        self._backend = None
        self._holders = 0
        self._saved = None

    @contextlib.contextmanager
    def hold(self, backend: str):
        with self._cv:
            self._cv.wait_for(lambda: self._backend in (None, backend))
            if self._backend is None:
                self._saved = sdpa_flags()
                set_sdpa_flags({b: b == backend for b in SDPA_BACKENDS})
                self._backend = backend
            self._holders += 1
        try:
            yield
        finally:
            with self._cv:
                self._holders -= 1
                if self._holders == 0:
                    set_sdpa_flags(self._saved)
                    self._backend = None
                    self._cv.notify_all()


SDPA_BACKENDS = ("cudnn", "flash", "mem_efficient", "math")


def sdpa_flags() -> dict[str, bool]:
    import torch

    cuda = torch.backends.cuda
    return {
        "cudnn": cuda.cudnn_sdp_enabled(),
        "flash": cuda.flash_sdp_enabled(),
        "mem_efficient": cuda.mem_efficient_sdp_enabled(),
        "math": cuda.math_sdp_enabled(),
    }


def set_sdpa_flags(flags: dict[str, bool]) -> None:
    import torch

    cuda = torch.backends.cuda
    cuda.enable_cudnn_sdp(flags["cudnn"])
    cuda.enable_flash_sdp(flags["flash"])
    cuda.enable_mem_efficient_sdp(flags["mem_efficient"])
    cuda.enable_math_sdp(flags["math"])


SDPA_LOCK = SdpaBackendLock()


def versions() -> str:
    import torch

    parts = [f"torch {torch.__version__}", f"cudnn {torch.backends.cudnn.version()}"]
    # FA3 under either name and flash-attn-4, where installed, by their distributions' versions (fa3-fwd's module
    # has no __version__)
    for mod in (*FA3_MODULES, "flash_attn"):
        if (version := module_version(mod)) is not None:
            parts.append(f"{mod}: {version}")
    return ", ".join(parts)
