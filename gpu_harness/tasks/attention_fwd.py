"""attention_fwd: the forward pass of softmax attention (CUDA, Hopper first).

The candidate is one .cu file exporting (see ABI below). Scenarios: the FlashAttention benchmark grid
(16384 tokens per batch, 2048 channels), head dims 96 and 192, GQA/MQA, seqlens that are no tile multiple,
Sq != Sk with both masks, rows that see no key, large-batch/few-head and few-batch/many-head shapes.

Correctness: against an fp32 reference computed here on the GPU (attention_reference.py: a fused CUDA
kernel with an online softmax, or torch in chunks of query rows; neither holds an Sq x Sk matrix for 16k);
O passes when its relative error is at most twice cuDNN's on the same inputs plus a small floor, LSE when it
is within LSE_TOL (fp32-level: cuDNN's public API exposes no LSE to compare with); no NaN/Inf where the
reference has none, and -inf exactly where the reference has it (rows that see no key).

torch is imported lazily: the scenario list and counts work without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import threading

from ..ahead import Ahead
from ..build import cache_dir
from ..stopwatch import Stopwatch
from ..verdict import Comparison, TimingLimits, judge_outputs, tolerance_from_vendor
from .attention_reference import FusedReference, reference
from .base import REPO_ROOT, Judgement, Scenario, Task
from .cuda_device import (
    CudaCalls,
    DeviceOutputs,
    compare_torch,
    comparison,
    cuda_unavailable,
    identical_tensors,
    measure_peaks,
)
from .cuda_device import synchronize_stream as _synchronize_stream
from .cuda_device import torch_module as _torch
from .sides import JudgeSide

ABI = """extern "C" int kseek_attention_fwd(
    const void* q, const void* k, const void* v,  // [B, Sq, Hq, D], [B, Sk, Hkv, D], [B, Sk, Hkv, D], contiguous
    void* o,                                      // [B, Sq, Hq, D], same dtype as q
    float* lse,                                   // [B, Hq, Sq]: natural-log logsumexp of the scaled scores
    int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim,
    int dtype,                                    // 0 = bf16, 1 = fp16
    int causal,                                   // 1: query i sees keys j <= i + Sk - Sq (bottom-right)
    float softmax_scale,
    cudaStream_t stream);                         // 0 on success; non-zero: configuration not supported"""

DTYPES = {"bf16": 0, "fp16": 1}
BASELINE_DESCRIPTIONS = {
    "cudnn": "torch scaled_dot_product_attention, cuDNN backend",
    "flash": "torch scaled_dot_product_attention, flash backend (FlashAttention-2)",
    "fa3": "FlashAttention-3 (flash_attn_interface), where installed",
    "fa4": "FlashAttention-4 (flash_attn.cute, CuTe DSL), where installed",
}
# cuDNN's relative error on O measured on an H200 (../shared/anchors): used only when cuDNN cannot run a
# scenario (then the flash backend's error is tried first).
DEFAULT_VENDOR_ERROR = {"bf16": 2.3e-3, "fp16": 2.9e-4}
O_FLOOR = {"bf16": 2e-4, "fp16": 3e-5}
LSE_TOL = 1e-4
VENDOR_SANITY = 4.0  # a vendor error above this many times the anchors' level means the vendor
# cannot do this configuration (cuDNN with Sq > Sk causal): not a tolerance


def scenario_id(dtype, b, sq, sk, hq, hkv, d, causal) -> str:
    return f"{dtype}_b{b}_sq{sq}_sk{sk}_h{hq}x{hkv}_d{d}_{'causal' if causal else 'full'}"


def _ahead_key(params: dict, seed: int) -> str:
    """Which scenario and inputs a result computed ahead of the judge (gpu_harness/ahead.py) belongs to."""
    return (
        scenario_id(
            params["dtype"],
            params["batch"],
            params["seqlen_q"],
            params["seqlen_k"],
            params["heads_q"],
            params["heads_kv"],
            params["head_dim"],
            params["causal"],
        )
        + f":{seed}"
    )


def attention_flops(b, sq, sk, hq, d, causal) -> float:
    """4*B*Hq*Sq*Sk*D; causal counts the visible share as in ../shared/anchors: avg Sk = (max(0,Sk-Sq)+Sk)/2."""
    avg_sk = (max(0, sk - sq) + sk) / 2 if causal else sk
    return 4.0 * b * hq * sq * avg_sk * d


def attention_bytes(b, sq, sk, hq, hkv, d) -> float:
    return 2.0 * (2 * b * sq * hq * d + 2 * b * sk * hkv * d) + 4.0 * b * hq * sq


def _sc(dtype, b, sq, sk, hq, hkv, d, causal) -> Scenario:
    params = {
        "dtype": dtype,
        "batch": b,
        "seqlen_q": sq,
        "seqlen_k": sk,
        "heads_q": hq,
        "heads_kv": hkv,
        "head_dim": d,
        "causal": bool(causal),
        "softmax_scale": 1.0 / math.sqrt(d),
    }
    return Scenario(
        scenario_id(dtype, b, sq, sk, hq, hkv, d, causal),
        params,
        attention_flops(b, sq, sk, hq, d, causal),
        attention_bytes(b, sq, sk, hq, hkv, d),
    )


def build_scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for dtype in DTYPES:
        # the FlashAttention benchmark grid: B*S = 16384 tokens, H*D = 2048 channels
        for d in (64, 128, 256):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                for causal in (False, True):
                    out.append(_sc(dtype, 16384 // s, s, s, 2048 // d, 2048 // d, d, causal))
        for d in (96, 192):
            for s in (1024, 4096, 16384):
                for causal in (False, True):
                    out.append(_sc(dtype, 16384 // s, s, s, 2048 // d, 2048 // d, d, causal))
        # GQA 4:1, 8:1 and MQA
        for hq, hkv in ((32, 8), (32, 4), (32, 1)):
            for s in (2048, 8192):
                for causal in (False, True):
                    out.append(_sc(dtype, 16384 // s, s, s, hq, hkv, 128, causal))
        # seqlens that are not multiples of any tile
        for s, b in ((1, 64), (113, 32), (1000, 16), (3001, 4)):
            for causal in (False, True):
                out.append(_sc(dtype, b, s, s, 16, 16, 128, causal))
        # Sq != Sk: short queries against long keys; and Sq > Sk, where causal rows may see no key
        for sq, sk, b in (
            (1, 4096, 8),
            (128, 8192, 4),
            (256, 8192, 2),
            (2048, 8192, 2),
            (113, 3001, 4),
            (1000, 113, 8),
        ):
            for causal in (False, True):
                out.append(_sc(dtype, b, sq, sk, 16, 16, 128, causal))
        # large batch / few heads and few batch / many heads
        for b, s, h, d in ((128, 512, 4, 128), (256, 256, 2, 64), (1, 4096, 128, 64), (2, 8192, 32, 128)):
            for causal in (False, True):
                out.append(_sc(dtype, b, s, s, h, h, d, causal))
        # head dim 256 with GQA, and 96 with MQA
        for causal in (False, True):
            out.append(_sc(dtype, 4, 4096, 4096, 16, 2, 256, causal))
    return out


# About a dozen small scenarios covering every axis: both dtypes, every head dim, both masks, GQA, MQA,
# odd seqlens, Sq != Sk both ways, rows that see no key, large batch, the grid.
QUICK = [
    scenario_id("bf16", 8, 2048, 2048, 16, 16, 128, False),
    scenario_id("fp16", 8, 2048, 2048, 16, 16, 128, True),
    scenario_id("bf16", 32, 512, 512, 32, 32, 64, True),
    scenario_id("fp16", 32, 512, 512, 8, 8, 256, False),
    scenario_id("bf16", 16, 1024, 1024, 21, 21, 96, True),
    scenario_id("fp16", 16, 1024, 1024, 10, 10, 192, False),
    scenario_id("bf16", 8, 2048, 2048, 32, 4, 128, True),
    scenario_id("fp16", 8, 2048, 2048, 32, 1, 128, False),
    scenario_id("bf16", 32, 113, 113, 16, 16, 128, True),
    scenario_id("fp16", 8, 1, 4096, 16, 16, 128, True),
    scenario_id("bf16", 4, 113, 3001, 16, 16, 128, False),
    scenario_id("bf16", 8, 1000, 113, 16, 16, 128, True),
    scenario_id("fp16", 128, 512, 512, 4, 4, 128, False),
]


class AttentionFwd(Task):
    name = "attention_fwd"
    language = "cuda"
    symbol = "kseek_attention_fwd"
    output_names = ("o", "lse")
    # threads of the child that own baseline calls. cuDNN's first call of a shape (its plan) runs mostly one at
    # a time inside a process (48 shapes: 2.5 s on 1 thread and on 8, H200), but the rest of a warm-up
    # overlaps: with 2 threads instead of 8 the child waited 7.7 s instead of 2.7 s for its warm-ups at the
    # end of the correctness phase (docs/device-runs/2026-11-30_harness_work_ahead.txt)
    baseline_threads = 8
    # cuDNN builds a plan per shape, flash-attn-4 compiles one (CuTe DSL); torch's flash backend (FA2) and
    # FA3 are compiled ahead, so their first call costs no more than the timing's own warm-up call
    baselines_to_warm = ("cudnn", "fa4")
    abi = ABI
    description = (
        "softmax attention forward, O = softmax(Q K^T * scale) V and its log-sum-exp, bf16/fp16, GQA/MQA, causal "
        "or full, on one Hopper GPU"
    )
    target = "cuda-sm90"
    tolerance_text = (
        f"O: relative L2 error <= 2 x cuDNN's own error on the same inputs + a floor "
        f"({', '.join(f'{k} {v:g}' for k, v in O_FLOOR.items())}); LSE: relative error <= {LSE_TOL:g}; "
        "no NaN/Inf where the reference has none, -inf exactly where it has"
    )
    flops_text = "4*batch*heads_q*seqlen_q*seqlen_k*head_dim (causal: the visible share of seqlen_k)"
    starting_kernel = REPO_ROOT / "kernels" / "attention_fwd" / "naive.cu"
    default_baselines = ("cudnn", "flash", "fa3", "fa4")
    needs_gpu = True
    call_timeout_base_s = 20.0
    call_timeout_min_rate = 2e11  # 0.2 TFLOP/s: a call slower than this is treated as a hang

    def __init__(self, device: str = "cuda"):
        self._scenarios = build_scenarios()
        self._peaks: TimingLimits | None = None  # the card's, measured once per process
        self._device_name = device  # "cpu" only in tests of the judge
        self._fused = FusedReference()  # the judge's reference on the GPU (torch's where it cannot serve)

    def _device(self):
        return _torch().device(self._device_name)

    def scenarios(self):
        return list(self._scenarios)

    def baseline_descriptions(self):
        return dict(BASELINE_DESCRIPTIONS)

    def quick_ids(self):
        return list(QUICK)

    # ---- environment ----
    def runtime_unavailable(self):
        return cuda_unavailable()

    def baseline_availability(self, names):
        out = {}
        for n in names:
            if n in ("cudnn", "flash"):
                out[n] = None
            elif n == "fa3":
                out[n] = _import_note("flash_attn_interface")
            elif n == "fa4":
                out[n] = _import_note("flash_attn.cute.interface")
            else:
                out[n] = f"unknown baseline {n!r} (known: cudnn, flash, fa3, fa4)"
        return out

    def versions(self):
        torch = _torch()
        parts = [f"torch {torch.__version__}", f"cudnn {torch.backends.cudnn.version()}"]
        for mod in ("flash_attn_interface", "flash_attn"):
            try:
                m = __import__(mod)
                parts.append(f"{mod} {getattr(m, '__version__', '?')}")
            except Exception:
                pass
        return ", ".join(parts)

    def child_env(self):
        # flash-attn-4 compiles each new shape on its first call (CuTe DSL, 2 to 5 s a shape: 86 s of a full
        # evaluation in a fresh process); its own on-disk cache, under the harness's, keeps the compiled kernels
        # for the next process. A variable the user set wins. The candidate cannot write there: it cannot open
        # files (the symbol allowlist, docs/harness.md's threat model), as for the build cache beside it.
        wanted = {
            "FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED": "1",
            "FLASH_ATTENTION_CUTE_DSL_CACHE_DIR": str(cache_dir() / "flash_attn_cute"),
        }
        return {k: v for k, v in wanted.items() if k not in os.environ}

    # ---- child side ----
    def new_calls(self):
        return CudaCalls()

    def bind(self, lib):
        fn = getattr(lib, self.symbol)
        vp, ci = ctypes.c_void_p, ctypes.c_int
        fn.argtypes = [vp, vp, vp, vp, vp, ci, ci, ci, ci, ci, ci, ci, ci, ctypes.c_float, vp]
        fn.restype = ci
        return fn

    def make_inputs(self, params, seed):
        torch = _torch()
        dev = self._device()
        dt = torch.bfloat16 if params["dtype"] == "bf16" else torch.float16
        g = torch.Generator(device=dev)
        g.manual_seed(seed)
        B, Sq, Sk = params["batch"], params["seqlen_q"], params["seqlen_k"]
        Hq, Hkv, D = params["heads_q"], params["heads_kv"], params["head_dim"]
        q = torch.randn((B, Sq, Hq, D), generator=g, device=dev, dtype=dt)
        k = torch.randn((B, Sk, Hkv, D), generator=g, device=dev, dtype=dt)
        v = torch.randn((B, Sk, Hkv, D), generator=g, device=dev, dtype=dt)
        return {"q": q, "k": k, "v": v}

    def new_outputs(self, params):
        torch = _torch()
        dev = self._device()
        dt = torch.bfloat16 if params["dtype"] == "bf16" else torch.float16
        B, Sq, Hq, D = params["batch"], params["seqlen_q"], params["heads_q"], params["head_dim"]
        o = torch.full((B, Sq, Hq, D), float("nan"), dtype=dt, device=dev)
        lse = torch.full((B, Hq, Sq), float("nan"), dtype=torch.float32, device=dev)
        return {"o": o, "lse": lse}

    def poison(self, outputs):
        outputs["o"].fill_(float("nan"))
        outputs["lse"].fill_(float("nan"))

    def invoke(self, fn, inputs, outputs, params):
        # stream 0 is the legacy default stream: it waits for, and is waited on by, every blocking stream,
        # so the events recorded on it cover work the candidate might push to other (blocking) streams.
        return int(
            fn(
                inputs["q"].data_ptr(),
                inputs["k"].data_ptr(),
                inputs["v"].data_ptr(),
                outputs["o"].data_ptr(),
                outputs["lse"].data_ptr(),
                params["batch"],
                params["seqlen_q"],
                params["seqlen_k"],
                params["heads_q"],
                params["heads_kv"],
                params["head_dim"],
                DTYPES[params["dtype"]],
                int(params["causal"]),
                params["softmax_scale"],
                None,
            )
        )

    # ---- outputs travel in device memory (gpu_harness/exchange.py) ----
    def _layout(self, params):
        """(name, torch dtype, shape) of each output, in output_names order."""
        torch = _torch()
        dt = torch.bfloat16 if params["dtype"] == "bf16" else torch.float16
        B, Sq, Hq, D = params["batch"], params["seqlen_q"], params["heads_q"], params["head_dim"]
        return [("o", dt, (B, Sq, Hq, D)), ("lse", torch.float32, (B, Hq, Sq))]

    def output_nbytes(self, params):
        return DeviceOutputs(self._layout, self.output_names).nbytes(params)

    def new_exchange(self):
        return DeviceOutputs(self._layout, self.output_names)

    def identical(self, outputs_a, outputs_b):
        return all(identical_tensors(outputs_a[n], outputs_b[n]) for n in self.output_names)

    def baseline_callables(self, names, params, inputs, libs):
        out = {}
        for n in names:
            try:
                out[n] = _baseline(n, params, inputs)
            except Exception as e:  # the library is missing or refuses this configuration
                out[n] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return out

    # ---- parent side ----
    def parent_prepare(self):
        # the fused reference compiles in the background (once per machine) while the candidate builds
        if self._device_name != "cpu" and self.runtime_unavailable() is None:
            self._fused.start()

    def reference_note(self):
        return self._fused.note if self._device_name != "cpu" else "torch fp32 (CPU)"

    def parent_setup(self):
        torch = _torch()
        torch.backends.cuda.matmul.allow_tf32 = False  # the reference is true fp32
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        if self._device_name == "cpu":
            return {"device": "cpu"}
        if self._peaks is None:
            self._peaks = measure_peaks()
        # This thread's GPU work (copying outputs out of their slots, comparing them) goes on a stream of the
        # highest priority: the reference and cuDNN's outputs computed ahead (AttentionJudge.ahead) run on streams of
        # the default, lowest priority, so a comparison's blocks get the next free SM before their next block.
        if getattr(self, "_judge_stream", None) is None:
            self._judge_stream = torch.cuda.Stream(priority=-100)  # torch maps it to the highest there is
        torch.cuda.set_stream(self._judge_stream)
        return {
            "device": torch.cuda.get_device_name(),
            "peak_tflops": self._peaks.peak_tflops,
            "peak_gbps": self._peaks.peak_gbps,
        }

    def timing_limits(self):
        return self._peaks or TimingLimits()

    def new_judge(self):
        return AttentionJudge(self)

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False):
        """One judgement by a judge of its own (nothing computed ahead): tests and one-off checks."""
        judge = self.new_judge()
        try:
            return judge.judge(params, seed, outputs, tolerance=tolerance, spot_check=spot_check)
        finally:
            judge.close()

    def _reference_ahead(self, payload):
        params, seed = payload
        inp = self.make_inputs(params, seed)
        ref = self._reference(inp, params)
        _torch().cuda.current_stream().synchronize()
        return inp, ref

    def _cudnn_ahead(self, payload):
        params, seed = payload
        out = _baseline("cudnn", params, self.make_inputs(params, seed))()
        _torch().cuda.current_stream().synchronize()
        return out

    def _reference(self, inp, params, rows=None):
        args = (inp["q"], inp["k"], inp["v"], params["causal"], params["softmax_scale"])
        fused = self._fused(*args, params["dtype"], rows=rows) if self._device_name != "cpu" else None
        return fused if fused is not None else reference(*args, rows=rows)

    def _compare(self, name, cand, ref) -> Comparison:
        figures = self._fused.compare(cand, ref) if self._device_name != "cpu" else None
        return compare_torch(name, cand, ref) if figures is None else comparison(name, figures, cand.numel())


class AttentionJudge(JudgeSide):
    """The attention judge of one evaluation: the references and cuDNN's outputs it computes ahead of the
    child's outputs (gpu_harness/ahead.py), and the seconds its judging took by part. Made by
    AttentionFwd.new_judge for one evaluation; the task it judges for keeps only what every evaluation shares
    (the fused reference kernel, the card's peaks)."""

    def __init__(self, task: AttentionFwd):
        super().__init__(task)
        self._references: Ahead | None = None
        self._vendor: Ahead | None = None

    def ahead(self, items):
        self.stop_ahead()
        task = self.task
        if task._device_name == "cpu" or not items:
            return
        torch = _torch()

        def own_stream():
            # a stream of its own, created without the legacy default stream's implicit waits: the work
            # ahead runs beside the judge's comparisons instead of queueing behind them (or they behind it)
            return torch.cuda.stream(torch.cuda.Stream())

        # the references: GPU-bound, so one thread; both seeds of each scenario, in the order they are judged
        self._references = Ahead(
            [(_ahead_key(p, seed), (p, seed)) for p, seed, _ in items],
            task._reference_ahead,
            depth=REFERENCE_DEPTH,
            threads=1,
            name="reference-ahead",
            thread_context=own_stream,
        )
        # cuDNN's outputs where the tolerance is set: mostly CPU time (its plans), on VENDOR_THREADS threads
        self._vendor = Ahead(
            [(_ahead_key(p, seed), (p, seed)) for p, seed, sets_tolerance in items if sets_tolerance],
            task._cudnn_ahead,
            depth=VENDOR_DEPTH,
            threads=VENDOR_THREADS,
            name="vendor-ahead",
            thread_context=own_stream,
        )

    def stop_ahead(self):
        for name in ("_references", "_vendor"):
            ahead = getattr(self, name, None)
            setattr(self, name, None)
            if ahead is not None:
                ahead.stop()

    def judge(self, params, seed, outputs, tolerance=None, spot_check=False):
        torch = _torch()
        task = self.task
        dev = task._device()
        dtype = params["dtype"]
        B, Sq, Sk, Hq, D = (params[n] for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "head_dim"))
        o, lse = outputs["o"].to(dev), outputs["lse"].to(dev)
        tol_o = tolerance
        if tuple(o.shape) != (B, Sq, Hq, D) or tuple(lse.shape) != (B, Hq, Sq):
            return Judgement(False, None, tol_o, "output shape mismatch")
        if o.dtype != (torch.bfloat16 if dtype == "bf16" else torch.float16) or lse.dtype != torch.float32:
            return Judgement(False, None, tol_o, f"output dtypes {o.dtype}, {lse.dtype}")
        # a spot check (a timed call's output) compares random query rows, chosen now, after the call
        rows = _random_rows(Sq, dev) if spot_check else None
        key = _ahead_key(params, seed)
        with self._spent("reference"):
            ahead = None if spot_check else _take_ahead(self._references, key)
        if ahead is None:
            with self._spent("inputs"):
                inp = task.make_inputs(params, seed)
            with self._spent("reference"):
                ref_o, ref_lse = task._reference(inp, params, rows=rows)
        else:
            inp, (ref_o, ref_lse) = ahead
        vendor = vendor_name = None
        if tolerance is None:
            with self._spent("vendor"):
                cudnn_out = _take_ahead(self._vendor, key)
                vendor, vendor_name = vendor_error(inp, params, ref_o, cudnn_out, compare=task._compare)
            tol_o = tolerance_from_vendor(vendor, DEFAULT_VENDOR_ERROR[dtype], O_FLOOR[dtype])
        with self._spent("compare"):
            if rows is None:
                cmps = [task._compare("O", o, ref_o), task._compare("LSE", lse, ref_lse)]
            else:  # errors on the sampled rows; unwritten or misplaced -inf anywhere in the whole output
                whole = _unwritten(o, lse, params)
                cmps = [
                    _with_whole(task._compare("O", o[:, rows], ref_o), whole["O"], o.numel()),
                    _with_whole(task._compare("LSE", lse[:, :, rows], ref_lse), whole["LSE"], lse.numel()),
                ]
            ok, reason = judge_outputs(cmps, {"O": tol_o, "LSE": LSE_TOL})
        details = {"lse_error": cmps[1].rel_error, "vendor_error": vendor, "vendor": vendor_name}
        if rows is not None:
            details["rows_checked"] = rows.numel()
        return Judgement(ok, cmps[0].rel_error, tol_o, reason, details)

    def _spent(self, part):
        """Adds the seconds of the block (the GPU work it queued on this thread's stream included: it
        synchronises that stream, not the device, so as not to wait for the work ahead) to `seconds`."""
        return Stopwatch(self.seconds, settle=_synchronize_stream)(part)


# How far ahead of the judge the background work may run (items held at once: each holds GPU memory, for the
# largest scenario ~0.2 GB of inputs and ~0.15 GB of reference), and cuDNN's threads (its first call of a
# shape, ~50 ms of building a plan, runs mostly one at a time in a process; the threads overlap the rest:
# inputs, the calls, the waits for the GPU: with 2 instead of 8, here and in the child, the judge waited
# 10.9 s for cuDNN's outputs over the full grid instead of 9.3 s).
REFERENCE_DEPTH = 4
VENDOR_DEPTH = 12
VENDOR_THREADS = 8


def _take_ahead(ahead, key):
    """The result computed ahead for `key`, marked as used on this thread's stream (so that its memory is not
    handed to the background stream's next allocation while this stream still reads it); None if there is
    none."""
    if ahead is None or not ahead.has(key):
        return None
    out = ahead.take(key)
    if out is not None:
        stream = _torch().cuda.current_stream()
        for t in _tensors(out):
            t.record_stream(stream)
    return out


def _tensors(obj):
    if hasattr(obj, "record_stream"):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from _tensors(v)


SPOT_FRACTION = 8  # a spot check compares 1 query row in 8 ...
SPOT_MIN_ROWS = 64  # ... and at least this many (all rows of short sequences)


def _random_rows(sq: int, device):
    """Query rows for a spot check, from os.urandom (the candidate cannot know them when it runs)."""
    torch = _torch()
    n = min(sq, max(SPOT_MIN_ROWS, -(-sq // SPOT_FRACTION)))
    if n == sq:
        return torch.arange(sq, device=device)
    g = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1))
    return torch.randperm(sq, generator=g)[:n].sort().values.to(device)


def _unwritten(o, lse, params) -> dict[str, tuple[int, int]]:
    """Over the whole output, without a reference: (non-finite where finite is due, wrong specials) for O
    and LSE. A query row sees no key only when causal and i < Sq - Sk: there O = 0 and LSE = -inf."""
    torch = _torch()
    Sq, Sk = params["seqlen_q"], params["seqlen_k"]
    sees = torch.ones(Sq, dtype=torch.bool, device=o.device)
    if params["causal"] and Sq > Sk:
        sees[: Sq - Sk] = False
    o_bad = int((~torch.isfinite(o)).sum())
    o_special = int((o[:, ~sees] != 0).sum())
    lse_bad = int((~torch.isfinite(lse[:, :, sees])).sum())
    lse_special = int((lse[:, :, ~sees] != float("-inf")).sum())
    return {"O": (o_bad, o_special), "LSE": (lse_bad, lse_special)}


def _with_whole(sample: Comparison, whole: tuple[int, int], count: int) -> Comparison:
    return Comparison(
        sample.name,
        sample.rel_error,
        max(sample.bad_nonfinite, whole[0]),
        max(sample.mismatched_special, whole[1]),
        count,
    )


def _import_note(module: str) -> str | None:
    try:
        __import__(module)
        return None
    except Exception as e:
        return f"{module} does not import here ({type(e).__name__})"


def _sdpa_args(params, inputs):
    torch = _torch()
    q, k, v = (inputs[n].transpose(1, 2) for n in ("q", "k", "v"))  # B, H, S, D views
    kwargs = {"scale": params["softmax_scale"]}
    if params["heads_q"] != params["heads_kv"]:
        kwargs["enable_gqa"] = True
    if params["causal"]:
        if params["seqlen_q"] == params["seqlen_k"]:
            kwargs["is_causal"] = True
        else:
            from torch.nn.attention.bias import causal_lower_right

            kwargs["attn_mask"] = causal_lower_right(params["seqlen_q"], params["seqlen_k"])
    return torch, q, k, v, kwargs


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
                self._saved = _sdpa_flags()
                _set_sdpa_flags({b: b == backend for b in _SDPA_BACKENDS})
                self._backend = backend
            self._holders += 1
        try:
            yield
        finally:
            with self._cv:
                self._holders -= 1
                if self._holders == 0:
                    _set_sdpa_flags(self._saved)
                    self._backend = None
                    self._cv.notify_all()


_SDPA_BACKENDS = ("cudnn", "flash", "mem_efficient", "math")


def _sdpa_flags() -> dict[str, bool]:
    cuda = _torch().backends.cuda
    return {
        "cudnn": cuda.cudnn_sdp_enabled(),
        "flash": cuda.flash_sdp_enabled(),
        "mem_efficient": cuda.mem_efficient_sdp_enabled(),
        "math": cuda.math_sdp_enabled(),
    }


def _set_sdpa_flags(flags: dict[str, bool]) -> None:
    cuda = _torch().backends.cuda
    cuda.enable_cudnn_sdp(flags["cudnn"])
    cuda.enable_flash_sdp(flags["flash"])
    cuda.enable_mem_efficient_sdp(flags["mem_efficient"])
    cuda.enable_math_sdp(flags["math"])


SDPA_LOCK = SdpaBackendLock()


def _baseline(name, params, inputs):
    if name in ("cudnn", "flash"):
        torch, q, k, v, kwargs = _sdpa_args(params, inputs)
        F = torch.nn.functional

        def run():
            with SDPA_LOCK.hold(name):  # only this backend is enabled while the call picks one
                return F.scaled_dot_product_attention(q, k, v, **kwargs)

        return run
    if name in ("fa3", "fa4"):
        if name == "fa3":
            from flash_attn_interface import flash_attn_func
        else:
            from flash_attn.cute.interface import flash_attn_func

        def run_flash_attn():
            # one call at a time: flash-attn-4 compiles each new shape (CuTe DSL), not known to be thread-safe
            with _FLASH_ATTN_LOCK:
                return flash_attn_func(
                    inputs["q"],
                    inputs["k"],
                    inputs["v"],
                    softmax_scale=params["softmax_scale"],
                    causal=params["causal"],
                )

        return run_flash_attn
    raise ValueError(f"unknown baseline {name!r}")


_FLASH_ATTN_LOCK = threading.Lock()


def vendor_error(inputs, params, ref_o, cudnn_out=None, compare=compare_torch) -> tuple[float | None, str | None]:
    """cuDNN's relative error on O on these inputs (the flash backend's if cuDNN cannot run them).
    `cudnn_out`: cuDNN's output on these inputs, when it was computed ahead of the judge. `compare`: how
    (compare_torch, or the judge's fused kernel)."""
    for name in ("cudnn", "flash"):
        try:
            out = cudnn_out if name == "cudnn" and cudnn_out is not None else _baseline(name, params, inputs)()
        except Exception:
            continue
        cmp = compare("O", out.transpose(1, 2), ref_o)
        if cmp.bad_nonfinite == 0 and cmp.rel_error <= VENDOR_SANITY * DEFAULT_VENDOR_ERROR[params["dtype"]]:
            return cmp.rel_error, name
    return None, None
