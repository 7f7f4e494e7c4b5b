"""gemm_bias_gelu's reference, its weight maker and its baselines: cuBLAS through torch (F.linear then GELU, and
cuBLASLt's fused epilogue) and torch.compile, the libraries a user would call instead of writing a kernel (torch
tensors on the judge's device: the cuda-sm90 target)."""

import torch
import torch.nn.functional as F

# torch.compile recompiles for each new shape (dynamic=False: a kernel specialised to it, the strongest
# compiled baseline); dynamo's default limit (8 per function) would fall back to eager past the 8th scenario
RECOMPILE_LIMIT = 64
_compiled = {}


def compiled(fn):
    """fn through torch.compile, compiled lazily (on the first call; warm = true in task.toml) and once."""
    if fn not in _compiled:
        import torch._dynamo

        config = torch._dynamo.config
        name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
        setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))
        _compiled[fn] = torch.compile(fn, dynamic=False)
    return _compiled[fn]


def make_weight(generator, shape, params):
    """W[n, k] ~ N(0, 1/k): with A ~ N(0, 1), each pre-activation has unit variance whatever k is."""
    w = torch.randn(shape, generator=generator, device=generator.device, dtype=torch.float32)
    return (w * params["k"] ** -0.5).to(torch.bfloat16)


def reference(a, w, bias, m, n, k):
    """gelu(A @ W^T + bias) with the exact GELU, computed by the judge on float64 copies of the inputs."""
    return F.gelu(a @ w.T + bias)


def eager_linear_gelu(a, w, bias, out, m, n, k):
    """What a PyTorch user writes: F.linear (cuBLAS, the bias in its epilogue), then F.gelu, which writes out."""
    torch.ops.aten.gelu.out(F.linear(a, w, bias), out=out)


def cublaslt_epilogue(a, w, bias, out, m, n, k):
    """cuBLASLt's fused epilogue through torch: one matmul with the bias and GELU applied as its output is written
    (`torch._addmm_activation(bias, A, W^T, use_gelu=True)`), returning its own tensor. Its GELU is the tanh
    approximation, not the exact one the task asks for: within the task's tolerance (docs/tasks.md), and a
    candidate may use it too."""
    return torch._addmm_activation(bias, a, w.t(), use_gelu=True)


def _linear_gelu_into(a, w, bias, out):
    out.copy_(F.gelu(F.linear(a, w, bias)))  # inductor: the matmul, then one fused epilogue kernel writing out


def compiled_linear_gelu(a, w, bias, out, m, n, k):
    """The same layer through torch.compile (one specialisation per shape, compiled on its first call)."""
    compiled(_linear_gelu_into)(a, w, bias, out)
