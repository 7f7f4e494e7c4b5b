"""rmsnorm's reference and its torch baselines (torch tensors on the judge's device: the cuda-sm90 target)."""

import torch

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


def reference(x, weight, rows, hidden, eps):
    """RMSNorm along each row, computed by the judge on float64 copies of x and weight."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def eager_rmsnorm(x, weight, y, rows, hidden, eps):
    """The RMSNorm of LLaMA's (and Hugging Face's LlamaRMSNorm) in eager PyTorch: float32 math, rounded to the
    input's dtype, times the weight; the last multiply writes y itself (no extra copy in its time)."""
    xf = x.float()
    normed = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)).to(x.dtype)
    torch.mul(weight, normed, out=y)


def functional_rmsnorm(x, weight, y, rows, hidden, eps):
    """torch.nn.functional.rms_norm (a fused kernel in recent torch); it has no out=, so its time includes a
    copy into y."""
    y.copy_(torch.nn.functional.rms_norm(x, (hidden,), weight, eps))


def _rmsnorm_into(x, weight, y, eps):
    xf = x.float()
    normed = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)).to(x.dtype)
    y.copy_(weight * normed)  # inductor fuses the whole row into one kernel writing y


def compiled_rmsnorm(x, weight, y, rows, hidden, eps):
    """The eager formula through torch.compile (one kernel per shape, compiled on its first call)."""
    compiled(_rmsnorm_into)(x, weight, y, eps)
