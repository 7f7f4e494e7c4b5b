"""The defences every imported problem's task applies at run time (issue 38 item 5), torch only.

The generated reference.py of an imported task (KernelBench, gpu-mode, FlashInfer-Bench) calls these; the
importers' probes call them too, to decide at import which inputs they apply to. docs/tasks.md, "What an imported
problem is judged against", states them:

- Inputs scaled and shifted: a float input drawn from a signed distribution (torch.randn's) is given to the
  reference and the kernel as x * s + b, s and b drawn afresh from the judge's seed, per input and scenario, so its
  mean and variance are not 0 and 1: a kernel that copies its input cannot pass as a normalisation of it (LayerNorm
  of a standard normal row is the row itself, within a loose tolerance). The import keeps the problem's own
  distribution where scaling would break its meaning: an input with no negative value (torch.rand for a log,
  probabilities, counts) and one whose scaled values make an output non-finite where it was finite.
- Weights and inputs bound strictly: the names a reference is given must be exactly the ones it takes; a missing
  or an extra one is refused (a model that would keep a parameter of its own initialisation, one the kernel is
  never given, computes something no kernel could be judged against).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


# |log2 s| and |b|: s in [0.35, 0.71] or [1.41, 2.83], b in [-2, -0.5] or [0.5, 2] (signs drawn too)
SCALE_EXPONENT = (0.5, 1.5)
SHIFT = (0.5, 2.0)


def affine(seed: int, name: str, params: dict[str, Any]) -> tuple[float, float]:
    """The scale and shift of input `name` for this seed and scenario (a function of them alone)."""
    rng = random.Random(f"{seed}:{name}:{sorted((k, str(v)) for k, v in params.items())}")
    scale = 2.0 ** (rng.choice((-1.0, 1.0)) * rng.uniform(*SCALE_EXPONENT))
    shift = rng.choice((-1.0, 1.0)) * rng.uniform(*SHIFT)
    return scale, shift


def scale_and_shift(t: torch.Tensor, seed: int, name: str, params: dict[str, Any]) -> torch.Tensor:
    """x * s + b in float32 (float64 for a float64 tensor), rounded to the tensor's own dtype."""
    return apply_affine(t, *affine(seed, name, params))


def apply_affine(t: torch.Tensor, scale: float, shift: float) -> torch.Tensor:
    import torch

    wide = t.double() if t.dtype == torch.float64 else t.float()
    return (wide * scale + shift).to(t.dtype)


# the corners of the ranges, where an import tries the scaled inputs: the largest scale with either shift, the
# smallest with the positive one
EXTREMES = ((2.0 ** SCALE_EXPONENT[1], SHIFT[1]), (2.0 ** SCALE_EXPONENT[1], -SHIFT[1]),
            (2.0 ** -SCALE_EXPONENT[1], SHIFT[1]))  # fmt: skip


def signed_float(t: torch.Tensor) -> bool:
    """Whether the tensor is a float one holding a negative value: a signed distribution, which scaling keeps one."""
    return bool(t.is_floating_point() and t.numel() and (t < 0).any())


def newly_nonfinite(before: list[torch.Tensor], after: list[torch.Tensor]) -> bool:
    """Whether some output element is non-finite in `after` but finite in `before` (lists of tensors)."""
    import torch

    for b, a in zip(before, after, strict=True):
        if b.is_floating_point() and bool((torch.isfinite(b) & ~torch.isfinite(a)).any()):
            return True
    return False


def scalable_inputs(inputs: dict[str, Any], run: Callable[[dict[str, Any]], list[torch.Tensor]]) -> list[str]:
    """The names of `inputs` (name -> tensor or other value) that scaling suits: signed float tensors whose scaled
    values, all together and at the corners of the ranges (EXTREMES), leave every finite output finite (`run(inputs)` -> the outputs, a list of tensors);
    where together they do not, each one alone is tried and kept when it does."""
    candidates = [n for n, v in inputs.items() if hasattr(v, "is_floating_point") and signed_float(v)]
    if not candidates:
        return []
    base = run(dict(inputs))

    def fine(names: list[str]) -> bool:
        for scale, shift in EXTREMES:
            changed = {n: (apply_affine(v, scale, shift) if n in names else v) for n, v in inputs.items()}
            try:
                if newly_nonfinite(base, run(changed)):
                    return False
            except Exception:  # a reference that refuses such values: they are not its inputs' meaning
                return False
        return True

    if fine(candidates):
        return candidates
    return [n for n in candidates if fine([n])]


def strict_names(given: Iterable[str], expected: Iterable[str], what: str) -> None:
    """Refuse a call whose names are not exactly the expected ones (ValueError naming the missing and the extra)."""
    given, expected = set(given), set(expected)
    if given == expected:
        return
    said = []
    if missing := sorted(expected - given):
        said.append(f"missing {', '.join(missing)}")
    if extra := sorted(given - expected):
        said.append(f"extra {', '.join(extra)}")
    raise ValueError(f"{what}: {'; '.join(said)} (compared strictly: each one bound exactly once)")
