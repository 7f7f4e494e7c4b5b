"""softmax_rows's reference and its baselines: torch's own paths and QuACK's CuTe-DSL kernel, the libraries a user
would call instead of writing a kernel (torch tensors on the judge's device: the cuda-sm90 target)."""

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


def reference(x, rows, cols):
    """softmax along each row, computed by the judge on a float64 copy of x."""
    return torch.softmax(x, dim=-1)


def eager_softmax(x, y, rows, cols):
    """torch's own bf16 softmax (float32 math inside, one rounding), written straight into y."""
    torch.softmax(x, dim=-1, out=y)


def _softmax_into(x, y):
    y.copy_(torch.softmax(x, dim=-1))  # inductor writes its fused kernel's result straight into y


def compiled_softmax(x, y, rows, cols):
    """The same softmax through torch.compile (one kernel per shape, compiled on its first call)."""
    compiled(_softmax_into)(x, y)


# QuACK loads a row in 16-byte vectors (8 bf16 elements) and asserts that the row length divides by 8
QUACK_VECTOR = 8


def quack_softmax(x, y, rows, cols):
    """QuACK's softmax (quack.softmax.softmax_fwd: a CuTe-DSL Hopper kernel, compiled on a shape's first call),
    returning its own tensor as a user gets it. Refuses rows whose length 8 does not divide, with the reason."""
    if cols % QUACK_VECTOR:
        raise NotImplementedError(
            f"QuACK's softmax needs a row length divisible by {QUACK_VECTOR} (16-byte vectors of bf16): cols={cols}"
        )
    from quack.softmax import softmax_fwd

    return softmax_fwd(x)
