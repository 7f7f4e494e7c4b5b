"""rmsnorm's reference and its baselines: LLaMA's eager formula, torch's fused `F.rms_norm`, torch.compile and
QuACK's CuTe-DSL kernel, the libraries a user would call instead of writing a kernel (torch tensors on the judge's
device: the cuda-sm90 target)."""

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
    """torch.nn.functional.rms_norm (a fused kernel in recent torch), returning its own tensor as a user gets it
    (it has no out=; the harness takes what a baseline returns, so no copy into y is timed)."""
    return torch.nn.functional.rms_norm(x, (hidden,), weight, eps)


def _rmsnorm_into(x, weight, y, eps):
    xf = x.float()
    normed = (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)).to(x.dtype)
    y.copy_(weight * normed)  # inductor fuses the whole row into one kernel writing y


def compiled_rmsnorm(x, weight, y, rows, hidden, eps):
    """The eager formula through torch.compile (one kernel per shape, compiled on its first call)."""
    compiled(_rmsnorm_into)(x, weight, y, eps)


# QuACK loads a row in 16-byte vectors (8 bf16 elements): other row lengths fail its checks or its build
QUACK_VECTOR = 8


def quack_rmsnorm(x, weight, y, rows, hidden, eps):
    """QuACK's RMSNorm (quack.rmsnorm.rmsnorm_fwd: a CuTe-DSL Hopper kernel, compiled on a shape's first call),
    returning its own tensor. Refuses rows whose length 8 does not divide (on an H200 QuACK 0.6.5 refused 4095 and
    4097 and failed to build 3333), with the reason."""
    if hidden % QUACK_VECTOR:
        raise NotImplementedError(
            f"QuACK's RMSNorm needs a row length divisible by {QUACK_VECTOR} (16-byte vectors of bf16): hidden={hidden}"
        )
    from quack.rmsnorm import rmsnorm_fwd

    return rmsnorm_fwd(x, weight, eps=eps)[0]
