"""attention_fwd, softmax attention's forward pass: a task folder (tasks/attention_fwd/: task.toml and
reference.py) judged by the generic machinery like every task (issue #16). Its references (torch in chunks, and
the fused fp32 kernel, fused_reference.cu) are the folder's own, in its reference.py.

What stays here is how tools and tests reach it: the folder, its task with the judge on a device of their
choice, its reference.py, and a scenario of any shape with the folder's parameters and counts (the 180 the
folder lists are its own; a tool or a test also needs shapes outside them).
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import TYPE_CHECKING

from .base import REPO_ROOT, Scenario

if TYPE_CHECKING:
    from .data_task import DataTask


FOLDER = REPO_ROOT / "tasks" / "attention_fwd"


def attention_task(device: str = "cuda") -> DataTask:
    """The task read afresh from its folder, its judge computing on `device` ("cpu": tests of the judge on a
    machine without a GPU)."""
    from . import load_folder_task

    return load_folder_task(FOLDER, device=device)


@functools.cache
def _counting_task() -> DataTask:
    return attention_task("cpu")


def reference_module() -> ModuleType:
    """tasks/attention_fwd/reference.py (its reference, baselines, SdpaBackendLock, whole), imported once."""
    return _counting_task().module()


def scenario_id(dtype: str, b: int, sq: int, sk: int, hq: int, hkv: int, d: int, causal: bool) -> str:
    return f"{dtype}_b{b}_sq{sq}_sk{sk}_h{hq}x{hkv}_d{d}_{'causal' if causal else 'full'}"


def scenario(dtype: str, b: int, sq: int, sk: int, hq: int, hkv: int, d: int, causal: bool) -> Scenario:
    """The scenario of this shape: the folder's parameters (softmax_scale = 1/sqrt(head_dim), as its derived
    symbol computes it), FLOP formula and byte count."""
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
    task = _counting_task()
    return Scenario(
        scenario_id(dtype, b, sq, sk, hq, hkv, d, causal),
        params,
        float(task.spec.flops(params)),
        float(task._bytes(params)),
    )
