"""attention_fwd: what is truly attention's, as plain functions on torch tensors (the cuda-sm90 target).

- `reference`: fp32 attention in chunks of query rows (gpu_harness/tasks/attention_reference.py: it never holds
  an Sq x Sk matrix for 16k tokens), on the sampled query rows of a spot check when given `sampled`;
- `fused`: the same computation in one CUDA kernel (attention_fwd_reference.cu, built in the background through
  the candidates' build cache), and its one-pass comparison, which the judge uses on the GPU where it serves;
- the baselines: torch SDPA's cuDNN and flash (FlashAttention-2) backends, FlashAttention-3 (under either of its
  module names) and -4 where they import; SDPA's backend choice is process-wide state, held by `SDPA_LOCK` (the
  child times baselines on several threads, the judge computes cuDNN's outputs ahead on several);
- `whole`: a spot check's look at the whole outputs without a reference (rows that see no key: O = 0, LSE = -inf);
- `versions`: what the baselines' timings depend on (the baseline cache's key).

torch is imported lazily: the scenario list and `task check` work without it.
"""

from __future__ import annotations

import contextlib
import threading

from gpu_harness.tasks.attention_reference import FusedReference
from gpu_harness.tasks.attention_reference import reference as chunked_reference
from gpu_harness.tasks.data_task import module_version

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
