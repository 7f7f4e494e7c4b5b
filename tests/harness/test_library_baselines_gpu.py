"""The library baselines on a GPU (issue 35 item 1, issue 36 item 1): each computes its task within the task's
tolerance where it runs, and says why where it does not. Skipped without a GPU, or without the library."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _reference(task: str):
    spec = importlib.util.spec_from_file_location(f"_gpu_ref_{task}", TASKS / task / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rel(out, ref):
    return float((out.double() - ref).norm() / ref.norm())


def test_quack_softmax_and_rmsnorm_agree_with_the_reference():
    pytest.importorskip("quack")
    x = torch.randn(1024, 4096, device="cuda").bfloat16()
    softmax = _reference("softmax_rows")
    assert _rel(softmax.quack_softmax(x, None, 1024, 4096), softmax.reference(x.double(), 1024, 4096)) < 3e-3
    w = torch.rand(4096, device="cuda").bfloat16()
    rms = _reference("rmsnorm")
    ref = rms.reference(x.double(), w.double(), 1024, 4096, 1e-6)
    assert _rel(rms.quack_rmsnorm(x, w, None, 1024, 4096, 1e-6), ref) < 3e-3


def test_cublaslt_epilogue_is_within_the_gemm_tasks_tolerance():
    gemm = _reference("gemm_bias_gelu")
    a = torch.randn(512, 768, device="cuda").bfloat16()
    w = (torch.randn(1024, 768, device="cuda") * 768**-0.5).bfloat16()
    bias = torch.randn(1024, device="cuda").bfloat16()
    ref = gemm.reference(a.double(), w.double(), bias.double(), 512, 1024, 768)
    out = torch.empty(512, 1024, device="cuda", dtype=torch.bfloat16)
    gemm.eager_linear_gelu(a, w, bias, out, 512, 1024, 768)
    bound = 1.5 * _rel(out, ref) + 1e-4  # task.toml's rule: 1.5 x eager's own error + 1e-4
    assert _rel(gemm.cublaslt_epilogue(a, w, bias, None, 512, 1024, 768), ref) < bound


def test_fa3_runs_bf16_and_refuses_fp16_from_the_fa3_fwd_wheel():
    if not any(importlib.util.find_spec(m) for m in ("flash_attn_interface", "fa3_fwd_interface")):
        pytest.skip("no FlashAttention-3 here")
    attention = _reference("attention_fwd")
    q = torch.randn(2, 256, 8, 128, device="cuda").bfloat16()
    o = attention.fa3(q, q, q, True, 128**-0.5)["o"]
    assert o.shape == q.shape and torch.isfinite(o).all()
    if importlib.util.find_spec("flash_attn_interface") is None:
        with pytest.raises(NotImplementedError, match="bf16 only"):
            attention.fa3(q.half(), q.half(), q.half(), True, 128**-0.5)
